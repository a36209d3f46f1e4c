# shellcheck shell=bash
# twonode.bash - for the .bats files that start their own two-node cluster
# (the second node in a network namespace) next to run.sh's one-node
# cluster: multinode.bats, placement.bats. Load it after helpers
# (nodes.bash says what it defines).

NODES_COUNT=2

# Why this cluster cannot run here, or nothing. Containers without
# CAP_NET_ADMIN/CAP_SYS_ADMIN cannot host a 2nd node.
nodes_unavailable() {
  [ -n "${HCG_BUILD:-}" ] || { echo "run through tests/cluster/run.sh"; return; }
  cluster_multinode_unavailable
}

load nodes
