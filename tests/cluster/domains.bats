#!/usr/bin/env bats
# NVLink domains on a real Slurm with topology/block (issue 22): four nodes
# in two blocks of two (BlockName=b1, b2; BlockSizes=2,4), where Slurm has
# topology/block (23.11 on: the Debian 13 tier's 24.11); elsewhere every
# test skips, saying so. ep inside a block is silent, ep across blocks
# warns once with a suggestion, refuse runs no task and drains no node,
# every task's HCG_*_DOMAIN_LOCAL equals hcg env --nodes 4 --domain-size 2,
# and what cannot be learnt is said in one line. domains-tree.bats does the
# same with topology/tree; placement.bats checks that a cluster without
# topology is unchanged.

CLUSTER_TOPOLOGY=block
PATTERN=' block.node b[12]\.'
DOMAIN1='block b1'
DOMAIN2='block b2'
load helpers
load fournode
load domains

@test "block: every node's SLURM_TOPOLOGY_ADDR names its block" { domains_topology_is_there; }
@test "block: ep inside a block is silent, HCG_*_DOMAIN_LOCAL as hcg env says" { domains_inside_is_silent; }
@test "block: ep across blocks warns once, with the suggestion hcg check gives" { domains_across_warns_once; }
@test "block: --hcg-placement=refuse: no task runs, no node drains" { domains_refuse; }
@test "block: --distribution=cyclic, suggested, keeps ep inside" { domains_cyclic; }
@test "block: intra_domain_dims=tp,ep and =none" { domains_site_lists; }
@test "block: a topology.conf that disagrees with Slurm: one line, nothing checked" { domains_unknown_says_one_line; }
