# shellcheck shell=bash
# fournode.bash - for the .bats files that start their own cluster of four
# nodes (CLUSTER_NODE_COUNT=4: hcgn2, hcgn3, hcgn4 in network namespaces)
# with a topology of two domains of two nodes (CLUSTER_TOPOLOGY, set by the
# .bats before loading this: block or tree), next to run.sh's one-node
# cluster: domains.bats, domains-tree.bats. Load it after helpers; it
# defines setup_file, setup, teardown (no node drained after any test) and
# teardown_file. A Slurm without the topology plugin skips every test,
# saying so (a plugin file is looked for, not a version).

# Why this file cannot run here, or empty: namespaces for the nodes (also
# in a tier's chroot, see cluster.sh), and the topology plugin.
fournode_unavailable() {
  [ -n "${HCG_BUILD:-}" ] || { echo "run through tests/cluster/run.sh"; return; }
  local why
  why=$(cluster_multinode_unavailable)
  [ -z "$why" ] || { echo "$why"; return; }
  cluster_has_topology "$CLUSTER_TOPOLOGY" ||
    echo "this Slurm ($(srun --version 2>/dev/null)) has no topology/$CLUSTER_TOPOLOGY plugin (topology_$CLUSTER_TOPOLOGY.so)"
}

setup_file() {
  local why
  why=$(fournode_unavailable)
  if [ -n "$why" ]; then
    echo "$why" >"$BATS_FILE_TMPDIR/skip"
    return 0
  fi
  CLUSTER_NODE_COUNT=4 cluster_start "$HCG_BUILD" >&3 2>&1
  echo "$CLUSTER_CTLD_PID $CLUSTER_SLURMD_PID $CLUSTER_SLURMD2_PID $CLUSTER_MUNGED_PID $CLUSTER_SLURMD_MORE_PIDS" \
    >"$BATS_FILE_TMPDIR/pids"
}

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
