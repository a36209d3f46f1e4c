#!/usr/bin/env bats
# Issue 41 on topology/block: blocks out of name order (swapped,
# interleaved), with and without CR_NO_DIST_TOPO_BLOCK where Slurm knows it,
# every distribution: every rank's HCG_*_DOMAIN_LOCAL is what the block of
# its node says, one warning, a suggestion that holds, and refuse all or
# nothing (domains-order.bash). Where Slurm has topology/block (23.11 on).

CLUSTER_TOPOLOGY=block
load helpers
load fournode
load domains-order

@test "block order: swapped blocks (N2,N3 then N0,N1)" { order_test "2 3" "0 1" swapped; }
@test "block order: interleaved blocks (N0,N2 then N1,N3)" { order_test "0 2" "1 3" interleaved; }
