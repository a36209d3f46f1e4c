#!/usr/bin/env bats
# Issue 41 on topology/tree: leaf switches out of name order (swapped,
# interleaved), with and without CR_NO_DIST_TOPO_BLOCK where Slurm knows it,
# every distribution: every rank's HCG_*_DOMAIN_LOCAL is what the leaf
# switch of its node says, one warning, a suggestion that holds, and refuse all or
# nothing (domains-order.bash). Every Slurm here has topology/tree; 26.05 deals
# block in leaf switch order.

CLUSTER_TOPOLOGY=tree
load helpers
load fournode
load domains-order
# domains-order.bats covers the distributions and CR_NO_DIST_TOPO_BLOCK;
# here the leaf switch order of the default distribution.
DISTS=(none)
FLAG_DISTS=()

@test "tree order: swapped switches (N2,N3 then N0,N1)" { order_test "2 3" "0 1" swapped; }
@test "tree order: interleaved switches (N0,N2 then N1,N3)" { order_test "0 2" "1 3" interleaved; }
