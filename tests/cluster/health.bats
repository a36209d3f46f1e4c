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
  if grep -qiE 'DRAIN|DOWN|FAIL' <<<"$(grep -E 'State=' <<<"$output")"; then false; fi
  if grep -q 'Reason=' <<<"$output"; then false; fi
}

@test "the daemons are still running" {
  run scontrol ping
  grep -q 'is UP' <<<"$output"
  pgrep -f "slurmd -D -f $CLUSTER_DIR/" >/dev/null
}

@test "no crash in the logs" {
  logs=("$CLUSTER_LOGS"/slurmd.log "$CLUSTER_LOGS"/slurmctld.log)
  if grep -iE 'segfault|segmentation|core dumped|SIGSEGV|SIGABRT|SIGBUS|signal 11|stack smashing|double free|malloc\(\)' "${logs[@]}"; then false; fi
  if grep -iE 'drain' "${logs[@]}"; then false; fi
  if find "$CLUSTER_DIR" -name 'core*' -type f | grep -q .; then false; fi
}

@test "no SPANK failure except refused tasks" {
  # A refused layout fails the step's tasks in task_init on purpose: Slurm
  # logs that as "task_init() failed" and "Failed to invoke spank plugin
  # stack". Anything else from SPANK (init, init_post_opt, user_init,
  # loading the plugin) would be a bug.
  run awk -f "$BATS_TEST_DIRNAME/spank_errors.awk" "$CLUSTER_LOGS"/slurmd.log
  [ -z "$output" ] || { echo "$output"; false; }
  run bash -c "grep -hiE 'spank' '$CLUSTER_LOGS'/slurmctld.log"
  [ -z "$output" ] || { echo "$output"; false; }
}

@test "the SPANK log filter tells interleaved refusals from real failures" {
  log="$BATS_TEST_TMPDIR/slurmd.log"
  t='[2026-11-22T00:27:04.784] [92.0]'
  cat > "$log" <<LOG
$t error: Failed to invo$t eke spank plugin stack
$t error: Failed to invoke spank plugin stack
$t error: spank: required plugin spank_hcg.so: task_init() failed with rc=-1
$t error: spank: required plugin spank_hcg.so: task_in$t erit() failed with rc=-1
$t$t e error: spank: required plugin spank_hcg.so: task_init() failed with rc=-1
$t$t error: spank: required plugin spank_hcg.so: task_ini error: spank: required plugin spank_hcg.so: task_init() failed with rc=-1
$t error: spank: required plugin spank_hcg.so: task_init() failed with r[2026-11-22T00:c=-1
32:15.352] [7.0] error: spank: required plugin spank_hcg.so: task_init() failed with rc=-1
27:04.7] [9.0] error: spank: required plugin spank_hcg.so: user_init() failed with rc=-1
$t error: spank: /x/spank_hcg.so: init() failed with rc=-1
$t error: spank: /x/spank_hcg.so: user_init() failed with rc=-1
$t error: Failed to invoke spank plugin stack$t error: spank: /x/spank_hcg.so: exit() failed
LOG
  run awk -f "$BATS_TEST_DIRNAME/spank_errors.awk" "$log"
  [ "$status" -eq 0 ]
  [ "${#lines[@]}" -eq 4 ]
  [[ "${lines[0]}" == "27:04.7] [9.0] error: "*"user_init() failed"* ]]
  [[ "${lines[1]}" == *" init() failed"* ]]
  [[ "${lines[2]}" == *"user_init() failed"* ]]
  [[ "${lines[3]}" == *"exit() failed" ]]
}
