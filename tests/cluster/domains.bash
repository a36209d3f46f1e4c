# shellcheck shell=bash
# shellcheck disable=SC2016,SC2154 # task commands in single quotes; bats sets status
# domains.bash - the NVLink domain checks of issue 22 on a real Slurm with
# a topology, shared by domains.bats (topology/block) and domains-tree.bats
# (topology/tree): four nodes, two domains of two (fournode.bash), 8 tasks,
# 2 on each node. Each function is one test's body; DOMAIN1 and DOMAIN2 are
# how the plugin names the two domains ("block b1", "switch s1").

# No node drained or down.
nodes_healthy() {
  cluster_wait_idle 60
  run sinfo -h -N -o '%N %T'
  if grep -v ' idle$' <<<"$output"; then false; fi
}

# 8 tasks on the 4 nodes; each task writes its HCG_*_LOCAL variables.
#   place4 LAYOUT [SRUN_ARGS...]   (output and status as `run` sets them)
place4() {
  local layout=$1
  shift
  rm -f "$OUT"/local.*
  run timeout -k 5 120 srun -N 4 -n 8 --overcommit --hcg-layout="$layout" "$@" \
    /bin/bash -c 'env | grep -E "^HCG_.*_LOCAL=" | sort >"$0/local.$SLURM_PROCID"' \
    "$OUT"
}

# Every task's HCG_*_LOCAL and HCG_*_DOMAIN_LOCAL equal what hcg env says
# for 4 nodes in domains of 2.
#   agrees4 LAYOUT [HCG_PLACEMENT_ARGS...]
agrees4() {
  local layout=$1 r
  shift
  for r in 0 1 2 3 4 5 6 7; do
    diff -u <("$HCG" env -n 8 --nodes 4 --domain-size 2 "$@" --rank "$r" "$layout" |
      grep -E '^HCG_.*_LOCAL=' | sort) "$OUT/local.$r" || return 1
  done
}

warnings() { grep -c 'hcg: warning: placement' <<<"$output" || true; }

domains_topology_is_there() {
  # The cluster's own view: each node's address names its domain.
  run srun -N 4 -n 4 --overcommit /bin/bash -c \
    'echo "$SLURM_NODEID $SLURM_TOPOLOGY_ADDR_PATTERN $SLURM_TOPOLOGY_ADDR"'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  echo "$output"
  [ "$(grep -c "$PATTERN" <<<"$output")" -eq 4 ]
}

domains_inside_is_silent() {
  # ep=4 over ranks 0-3 (nodes 0, 1) and 4-7 (nodes 2, 3): it leaves the
  # node but not the domain, and ep is judged by domain.
  place4 'ep=4,dp=2'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ -z "$output" ] || { echo "$output"; false; }
  agrees4 'ep=4,dp=2'
  grep -qx 'HCG_WORLD_EP_DOMAIN_LOCAL=1' "$OUT/local.5"
  grep -qx 'HCG_WORLD_EP_LOCAL=0' "$OUT/local.5"
  nodes_healthy
}

domains_across_warns_once() {
  local l='dp=2,ep=4' line
  line="hcg: warning: placement: grid 'world', dim 'ep': group [0,2,4,6] spans $DOMAIN1 (rank 0) and $DOMAIN2 (rank 4): its traffic leaves the NVLink domain (placement=warn); to keep every group inside, put ep before dp, as in 'ep=4,dp=2'"
  place4 "$l"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  grep -qxF "$line" <<<"$output" || { echo "$output"; false; }
  [ "$(ls "$OUT" | grep -c '^local\.')" -eq 8 ]
  agrees4 "$l"
  grep -qx 'HCG_WORLD_EP_DOMAIN_LOCAL=0' "$OUT/local.0"
  # hcg check says the same before the job.
  "$HCG" check -n 8 --nodes 4 --domain-size 2 "$l" |
    grep -qxF "placement: suggestion: put ep before dp, as in 'ep=4,dp=2'"
  # And the suggestion holds on the cluster.
  place4 'ep=4,dp=2'
  [ "$(warnings)" -eq 0 ]
  nodes_healthy
}

domains_refuse() {
  try_srun 8 'dp=2,ep=4' -N 4 --hcg-placement=refuse
  refused "hcg: placement: grid 'world', dim 'ep': group \[0,2,4,6\] spans $DOMAIN1 \(rank 0\) and $DOMAIN2 \(rank 4\): a group of an intra-domain dim crosses NVLink domains and the placement policy is refuse; no task will run" ||
    { echo "$output"; false; }
  [ "$(grep -c "hcg: placement: grid" <<<"$output")" -eq 1 ] || { echo "$output"; false; }
  nodes_healthy
  # A layout inside its domains runs under refuse, across nodes.
  try_srun 8 'ep=4,dp=2' -N 4 --hcg-placement=refuse
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(ls "$MARKER".* | wc -l)" -eq 8 ]
  nodes_healthy
}

domains_cyclic() {
  # dp=4,ep=2: ep pairs ranks r and r+4, which cyclic puts on one node.
  place4 'dp=4,ep=2'
  [ "$(warnings)" -eq 1 ] || { echo "$output"; false; }
  grep -q "or use --distribution=cyclic" <<<"$output" || { echo "$output"; false; }
  agrees4 'dp=4,ep=2'
  place4 'dp=4,ep=2' --distribution=cyclic
  [ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; false; }
  agrees4 'dp=4,ep=2' --distribution cyclic
  nodes_healthy
}

domains_site_lists() {
  # A site adds tp (NVL72 tensor parallel): tp=4 leaves the node, not the
  # domain; silent. The node list still gives HCG_WORLD_TP_LOCAL.
  cluster_plugstack intra_domain_dims=tp,ep
  place4 'tp=4,dp=2'
  cluster_plugstack
  [ "$status" -eq 0 ] && [ -z "$output" ] || { echo "$output"; false; }
  agrees4 'tp=4,dp=2' --intra-domain-dims tp,ep
  grep -qx 'HCG_WORLD_TP_LOCAL=0' "$OUT/local.0"
  grep -qx 'HCG_WORLD_TP_DOMAIN_LOCAL=1' "$OUT/local.0"
  # none: no domain check; ep is judged by node again, as without topology.
  cluster_plugstack intra_domain_dims=none
  place4 'dp=2,ep=4'
  cluster_plugstack
  [ "$(warnings)" -ge 1 ] || { echo "$output"; false; }
  ! grep -q 'NVLink' <<<"$output"
  grep -q "dim 'ep': group \[0,2,4,6\] spans .* and another node" <<<"$output"
  ! grep -q DOMAIN "$OUT"/local.*
  nodes_healthy
}

domains_unknown_says_one_line() {
  # topology.conf changed after slurmd read it: every node's address
  # disagrees with it, nothing is checked at the domain level, one line.
  cp "$CLUSTER_TOPOLOGY_CONF" "$BATS_TEST_TMPDIR/topology.conf"
  sed -i 's/=b1 /=bX /; s/=b2 /=b1 /; s/=bX /=b2 /; s/=s1 /=sX /; s/=s2 /=s1 /; s/=sX /=s2 /' \
    "$CLUSTER_TOPOLOGY_CONF"
  place4 'ep=2,dp=4'
  cp "$BATS_TEST_TMPDIR/topology.conf" "$CLUSTER_TOPOLOGY_CONF"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(grep -c 'hcg: ' <<<"$output")" -eq 1 ] || { echo "$output"; false; }
  grep -q "^hcg: placement: NVLink domains not checked: $CLUSTER_TOPOLOGY_CONF puts this node ([a-z0-9]*) in .*, but Slurm says" <<<"$output" ||
    { echo "$output"; false; }
  ! grep -q DOMAIN "$OUT"/local.*
  nodes_healthy
}
