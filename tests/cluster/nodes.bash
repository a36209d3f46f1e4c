# shellcheck shell=bash
# nodes.bash - what twonode.bash and fournode.bash share: a .bats file
# with a cluster of its own (CLUSTER_NODE_COUNT=$NODES_COUNT, every node
# after the first in a network namespace) next to run.sh's one-node
# cluster. The loader sets NODES_COUNT and defines nodes_unavailable (why
# the cluster cannot run here, or nothing), then loads this after helpers;
# it defines setup_file, setup, teardown (no node drained after any test)
# and teardown_file.

setup_file() {
  local why
  why=$(nodes_unavailable)
  # bats 1.8 miscounts a skip inside setup_file: each test skips on this.
  if [ -n "$why" ]; then
    echo "$why" >"$BATS_FILE_TMPDIR/skip"
    return 0
  fi
  CLUSTER_NODE_COUNT=$NODES_COUNT cluster_start "$HCG_BUILD" >&3 2>&1
  # Kept for teardown_file, which runs in a new shell.
  echo "$CLUSTER_CTLD_PID $CLUSTER_SLURMD_PID $CLUSTER_SLURMD2_PID $CLUSTER_MUNGED_PID ${CLUSTER_SLURMD_MORE_PIDS:-}" \
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

teardown() {
  [ -f "$BATS_FILE_TMPDIR/skip" ] && return 0
  # This cluster's logs go with teardown_file: show them now.
  [ -n "${BATS_TEST_COMPLETED:-}" ] || cluster_after_failure
  if sinfo -h -N -o '%N %T' | grep -i drain; then return 1; fi
}

teardown_file() {
  if [ -f "$BATS_FILE_TMPDIR/pids" ]; then
    read -r CLUSTER_CTLD_PID CLUSTER_SLURMD_PID CLUSTER_SLURMD2_PID \
      CLUSTER_MUNGED_PID CLUSTER_SLURMD_MORE_PIDS <"$BATS_FILE_TMPDIR/pids"
    cluster_stop
  fi
}
