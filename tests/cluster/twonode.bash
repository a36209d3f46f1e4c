# shellcheck shell=bash
# twonode.bash - for the .bats files that start their own two-node cluster
# (CLUSTER_NODE_COUNT=2, the second node in a network namespace) next to
# run.sh's one-node cluster: multinode.bats, placement.bats. Load it after
# helpers; it defines setup_file, setup, teardown (no node drained after any test)
# and teardown_file.

# Why this file cannot run here, or empty. bats 1.8 miscounts a skip inside
# setup_file, so setup_file writes the reason and each test skips on it.
twonode_unavailable() {
  [ -n "${HCG_BUILD:-}" ] || { echo "run through tests/cluster/run.sh"; return; }
  # Containers without CAP_NET_ADMIN/CAP_SYS_ADMIN cannot host a 2nd node.
  cluster_multinode_unavailable
}

setup_file() {
  local why
  why=$(twonode_unavailable)
  if [ -n "$why" ]; then
    echo "$why" >"$BATS_FILE_TMPDIR/skip"
    return 0
  fi
  CLUSTER_NODE_COUNT=2 cluster_start "$HCG_BUILD" >&3 2>&1
  # Kept for teardown_file, which runs in a new shell.
  echo "$CLUSTER_CTLD_PID $CLUSTER_SLURMD_PID $CLUSTER_SLURMD2_PID $CLUSTER_MUNGED_PID" \
    >"$BATS_FILE_TMPDIR/pids"
}

# helpers.bash's setup, after the skip check.
eval "helpers_$(declare -f setup)"
setup() {
  if [ -f "$BATS_FILE_TMPDIR/skip" ]; then
    skip "$(cat "$BATS_FILE_TMPDIR/skip")"
  fi
  helpers_setup
}

# After every test: no node drained, whatever the test did.
teardown() {
  [ -f "$BATS_FILE_TMPDIR/skip" ] && return 0
  # This cluster's logs go with teardown_file: show them now.
  [ -n "${BATS_TEST_COMPLETED:-}" ] || cluster_after_failure
  if sinfo -h -N -o '%N %T' | grep -i drain; then return 1; fi
}

teardown_file() {
  if [ -f "$BATS_FILE_TMPDIR/pids" ]; then
    read -r CLUSTER_CTLD_PID CLUSTER_SLURMD_PID CLUSTER_SLURMD2_PID \
      CLUSTER_MUNGED_PID <"$BATS_FILE_TMPDIR/pids"
    cluster_stop
  fi
}
