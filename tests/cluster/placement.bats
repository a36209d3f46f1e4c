#!/usr/bin/env bats
# The placement check on two nodes (doc/plugin.md, placement): a group of
# an intra-node dim (tp, cp, ep, expt_tp) that stays on one node passes
# silently, one that crosses nodes gets one warning line per step or, with
# --hcg-placement=refuse, no task runs; every task's HCG_*_LOCAL equals
# `hcg env --nodes 2`; --distribution=cyclic changes the verdict; without a
# topology, NVLink domains change nothing (issue 22). No node
# is ever drained. Starts its own two-node cluster, like multinode.bats.

load helpers
load twonode

# No node drained or down.
nodes_healthy() {
  cluster_wait_idle 60
  run sinfo -h -N -o '%N %T'
  if grep -v ' idle$' <<<"$output"; then false; fi
}

# 8 tasks on 2 nodes; each task writes its HCG_*_LOCAL variables, sorted.
#   place LAYOUT [SRUN_ARGS...]   (output and status as `run` sets them)
place() {
  local layout=$1
  shift
  rm -f "$OUT"/local.*
  run timeout -k 5 120 srun -N 2 -n 8 --overcommit --hcg-layout="$layout" "$@" \
    /bin/bash -c 'env | grep -E "^HCG_.*_LOCAL=" | sort >"$0/local.$SLURM_PROCID"' \
    "$OUT"
}

# Every task's HCG_*_LOCAL equals what hcg env says with the same nodes.
#   agrees LAYOUT [HCG_PLACEMENT_ARGS...]
agrees() {
  local layout=$1 r
  shift
  for r in 0 1 2 3 4 5 6 7; do
    diff -u <("$HCG" env -n 8 --nodes 2 "$@" --rank "$r" "$layout" |
      grep -E '^HCG_.*_LOCAL=' | sort) "$OUT/local.$r" || return 1
  done
}

warnings() { grep -c 'hcg: warning: placement' <<<"$output" || true; }

@test "tp inside a node: silent, HCG_*_LOCAL=1 as hcg env says" {
  place 'tp=4,dp=*'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(warnings)" -eq 0 ]
  [ -z "$output" ]
  agrees 'tp=4,dp=*'
  grep -qx 'HCG_WORLD_TP_LOCAL=1' "$OUT/local.5"
  nodes_healthy
}

@test "tp across nodes: one warning line for the step, and the tasks run" {
  place 'llm:tp=8,pp=1; llm/expert:ep=2,expt_dp=*'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  grep -E "grid 'llm', dim 'tp': group \[0,1,2,3,4,5,6,7\] spans .* \(rank [0-9]\) and another node \(rank [0-9]\)" <<<"$output"
  [ "$(ls "$OUT" | grep -c '^local\.')" -eq 8 ]
  agrees 'llm:tp=8,pp=1; llm/expert:ep=2,expt_dp=*'
  grep -qx 'HCG_LLM_TP_LOCAL=0' "$OUT/local.0"
  grep -qx 'HCG_LLM_EXPERT_EP_LOCAL=1' "$OUT/local.0"
  "$HCG" check -n 8 --nodes 2 'llm:tp=8,pp=1; llm/expert:ep=2,expt_dp=*' 2>&1 |
    grep -q "hcg: warning: placement: grid 'llm', dim 'tp'"
  nodes_healthy
}

@test "--hcg-placement=refuse: no task runs, the node stays up" {
  try_srun 8 'tp=8' -N 2 --hcg-placement=refuse
  refused "hcg: placement: grid 'world', dim 'tp': group \[0,1,2,3,4,5,6,7\] spans" \
    'no task will run'
  # One line for the step.
  [ "$(grep -c "hcg: placement: grid" <<<"$output")" -eq 1 ] || { echo "$output"; false; }
  # A layout that fits still runs under refuse.
  try_srun 8 'tp=4,dp=*' -N 2 --hcg-placement=refuse
  [ "$status" -eq 0 ]
  [ "$(ls "$MARKER".* | wc -l)" -eq 8 ]
  run srun -n 1 --hcg-layout=tp=1 --hcg-placement=maybe true
  [ "$status" -ne 0 ]
  grep -q 'hcg: --hcg-placement=maybe: the value must be warn or refuse' <<<"$output"
  nodes_healthy
}

@test "--distribution=cyclic changes the verdict, as hcg env --distribution does" {
  # dp=2,tp=4: a tp group is every other rank; block splits it, cyclic
  # puts it on one node.
  place 'dp=2,tp=4'
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  agrees 'dp=2,tp=4'
  place 'dp=2,tp=4' --distribution=cyclic
  [ "$status" -eq 0 ] && [ "$(warnings)" -eq 0 ] || { echo "$output"; false; }
  agrees 'dp=2,tp=4' --distribution cyclic
  # And the other way round.
  place 'tp=2,dp=*' --distribution=cyclic
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  agrees 'tp=2,dp=*' --distribution cyclic
  nodes_healthy
}

@test "no topology: no HCG_*_DOMAIN_LOCAL, ep judged by node as before issue 22" {
  # This cluster has no TopologyPlugin (SLURM_TOPOLOGY_ADDR_PATTERN=node):
  # the domain list changes nothing and nothing is said about domains.
  place 'dp=2,ep=4'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  grep -q "dim 'ep': group \[0,2,4,6\] spans .* and another node .*: its traffic leaves the node" <<<"$output"
  ! grep -qi 'domain' <<<"$output"
  agrees 'dp=2,ep=4'
  ! grep -q DOMAIN "$OUT"/local.*
  nodes_healthy
}
