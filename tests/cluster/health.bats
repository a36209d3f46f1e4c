#!/usr/bin/env bats
# Run last by run.sh, after every other cluster and runtime test: whatever
# the suite threw at the plugin, the node is still up and idle, and neither
# slurmd nor slurmstepd nor slurmctld crashed or drained anything.

load helpers

@test "the node is idle, not drained or down" {
  cluster_wait_idle 60
  [ "$(cluster_node_state)" = idle ]
  run scontrol show node "$CLUSTER_NODE"
  [ "$status" -eq 0 ]
  grep -q 'State=IDLE ' <<<"$output"
  ! grep -qiE 'DRAIN|DOWN|FAIL' <<<"$(grep -E 'State=' <<<"$output")"
  ! grep -q 'Reason=' <<<"$output"
}

@test "the daemons are still running" {
  run scontrol ping
  grep -q 'is UP' <<<"$output"
  pgrep -f "slurmd -D -f $CLUSTER_DIR/" >/dev/null
}

@test "no crash in the logs" {
  logs=("$CLUSTER_LOGS"/slurmd.log "$CLUSTER_LOGS"/slurmctld.log)
  ! grep -iE 'segfault|segmentation|core dumped|SIGSEGV|SIGABRT|SIGBUS|signal 11|stack smashing|double free|malloc\(\)' "${logs[@]}"
  ! grep -iE 'drain' "${logs[@]}"
  ! find "$CLUSTER_DIR" -name 'core*' -type f | grep -q .
}

@test "no SPANK failure except refused tasks" {
  # A refused layout fails the step's tasks in task_init on purpose: Slurm
  # logs that as "task_init() failed" and "Failed to invoke spank plugin
  # stack". Anything else from SPANK (init, init_post_opt, user_init,
  # loading the plugin) would be a bug.
  run bash -c "grep -hE 'error: .*spank' '$CLUSTER_LOGS'/slurmd.log | grep -vE 'spank_hcg.so: task_init\(\) failed with rc=-1|Failed to invoke spank plugin stack'"
  [ -z "$output" ] || { echo "$output"; false; }
  run bash -c "grep -hiE 'spank' '$CLUSTER_LOGS'/slurmctld.log"
  [ -z "$output" ] || { echo "$output"; false; }
}
