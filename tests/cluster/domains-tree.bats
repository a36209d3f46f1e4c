#!/usr/bin/env bats
# NVLink domains on a real Slurm with topology/tree (issue 22): four nodes
# under two leaf switches of two (SwitchName=s1, s2 under s0), in every
# Slurm here (the Debian 12 host's 22.05 included). The same tests as
# domains.bats, a leaf switch being the domain.

CLUSTER_TOPOLOGY=tree
PATTERN=' switch.switch.node s0\.s[12]\.'
DOMAIN1='switch s1'
DOMAIN2='switch s2'
load helpers
load fournode
load domains

@test "tree: every node's SLURM_TOPOLOGY_ADDR names its leaf switch" { domains_topology_is_there; }
@test "tree: ep inside a leaf switch is silent, HCG_*_DOMAIN_LOCAL as hcg env says" { domains_inside_is_silent; }
@test "tree: ep across leaf switches warns once, with the suggestion hcg check gives" { domains_across_warns_once; }
@test "tree: --hcg-placement=refuse: no task runs, no node drains" { domains_refuse; }
@test "tree: --distribution=cyclic, suggested, keeps ep inside" { domains_cyclic; }
@test "tree: intra_domain_dims=tp,ep and =none" { domains_site_lists; }
@test "tree: a topology.conf that disagrees with Slurm: one line, nothing checked" { domains_unknown_says_one_line; }
