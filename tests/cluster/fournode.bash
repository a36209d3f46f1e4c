# shellcheck shell=bash
# fournode.bash - for the .bats files that start their own cluster of four
# nodes (CLUSTER_NODE_COUNT=4: hcgn2, hcgn3, hcgn4 in network namespaces)
# with a topology of two domains of two nodes (CLUSTER_TOPOLOGY, set by the
# .bats before loading this: block or tree), next to run.sh's one-node
# cluster: domains.bats, domains-tree.bats. Load it after helpers
# (nodes.bash says what it defines). A Slurm without the topology plugin
# skips every test, saying so (a plugin file is looked for, not a version).

NODES_COUNT=4

# Why this cluster cannot run here, or nothing: namespaces for the nodes
# (also in a tier's chroot, see cluster.sh), and the topology plugin.
nodes_unavailable() {
  [ -n "${HCG_BUILD:-}" ] || { echo "run through tests/cluster/run.sh"; return; }
  local why
  why=$(cluster_multinode_unavailable)
  [ -z "$why" ] || { echo "$why"; return; }
  cluster_has_topology "$CLUSTER_TOPOLOGY" ||
    echo "this Slurm ($(srun --version 2>/dev/null)) has no topology/$CLUSTER_TOPOLOGY plugin (topology_$CLUSTER_TOPOLOGY.so)"
}

load nodes
