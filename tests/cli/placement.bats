#!/usr/bin/env bats
# Placement with no cluster (issue 9): hcg check/explain/env --nodes N or
# --tasks-per-node K, --distribution block|cyclic|plane=P; the verdicts in
# text and JSON, the plugin's warning, and the SVG picture. Run by `make
# check` with HCG set to the built command. tests/cluster/placement.bats
# checks that srun's tasks get the same verdicts.

setup() {
  HCG=${HCG:-hcg}
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

@test "check --nodes: a verdict per intra-node dim, the plugin's warning for a crossing one" {
  run "$HCG" check -n 16 --nodes 2 'tp=8,dp=*'
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 'world@0:tp=8,dp=2' ]
  [ "${lines[1]}" = 'placement: world:tp: every group inside a node (2 groups)' ]
  [ "${#lines[@]}" -eq 2 ]
  run "$HCG" check -n 16 --nodes 4 'tp=8,dp=*'
  [ "$status" -eq 0 ]
  grep -qx 'placement: world:tp: 2 of 2 groups cross nodes' <<<"$output"
  grep -qx "hcg: warning: placement: grid 'world', dim 'tp': group \[0,1,2,3,4,5,6,7\] spans node 0 (rank 0) and node 1 (rank 4)" <<<"$output"
  # The warning is on stderr, the verdicts on stdout.
  [ "$("$HCG" check -n 16 --nodes 4 'tp=8,dp=*' 2>/dev/null | grep -c warning)" -eq 0 ]
  # Expert view dims are checked too; pp and dp are not on the default list.
  run "$HCG" check -n 16 --tasks-per-node 4 'llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=8,expt_dp=*,pp'
  grep -qx 'placement: llm:tp: every group inside a node (8 groups)' <<<"$output"
  grep -qx 'placement: llm/expert:ep: 2 of 2 groups cross nodes' <<<"$output"
  grep -qx 'placement: llm/expert:expt_tp: every group inside a node (16 groups)' <<<"$output"
  [ "$(grep -c '^placement:' <<<"$output")" -eq 3 ]
  run "$HCG" check -n 16 --nodes 2 --intra-node-dims dp 'tp=8,dp=*'
  grep -qx 'placement: world:dp: 8 of 8 groups cross nodes' <<<"$output"
}

@test "--distribution: cyclic and plane change the verdict as in Slurm" {
  run "$HCG" check -n 8 --nodes 2 'dp=2,tp=4'
  grep -q 'world:tp: 2 of 2 groups cross nodes' <<<"$output"
  run "$HCG" check -n 8 --nodes 2 --distribution cyclic 'dp=2,tp=4'
  grep -q 'world:tp: every group inside a node' <<<"$output"
  run "$HCG" check -n 8 --nodes 2 -m cyclic 'tp=2,dp=*'
  grep -q 'world:tp: 4 of 4 groups cross nodes' <<<"$output"
  run "$HCG" check -n 16 --nodes 2 -m plane=4 'tp=4,dp=*'
  grep -q 'world:tp: every group inside a node' <<<"$output"
  run "$HCG" check -n 16 --nodes 2 -m plane=2 'tp=4,dp=*'
  grep -q 'world:tp: 4 of 4 groups cross nodes' <<<"$output"
  # Slurm's block spread of 10 tasks on 4 nodes: 3,3,2,2.
  run "$HCG" env -n 10 --nodes 4 --rank 3 'tp=2,dp=*'
  grep -qx 'HCG_WORLD_TP_LOCAL=0' <<<"$output"
  run "$HCG" env -n 10 --nodes 4 --rank 7 'tp=2,dp=*'
  grep -qx 'HCG_WORLD_TP_LOCAL=1' <<<"$output"
}

@test "bad placement options are usage errors" {
  run "$HCG" check -n 8 --nodes 2 --tasks-per-node 4 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  grep -q 'give --nodes or --tasks-per-node, not both' <<<"$output"
  run "$HCG" check -n 8 --distribution cyclic 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  grep -q 'need --nodes or --tasks-per-node' <<<"$output"
  run "$HCG" check -n 8 --nodes 2 --distribution arbitrary 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  grep -q "distribution 'arbitrary' is not block, cyclic or plane=P" <<<"$output"
  run "$HCG" check -n 8 --nodes 9 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  grep -q '9 nodes for 8 tasks' <<<"$output"
  run "$HCG" check -n 8 --nodes 0 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  run "$HCG" check -n 8 --nodes 2 --intra-node-dims 'tp,,cp' 'tp=2,dp=*'
  [ "$status" -eq 2 ]
  run "$HCG" check -n 8 --format svg 'tp=2,dp=*'
  [ "$status" -eq 2 ]
}

@test "explain --nodes: text and JSON give the verdicts, and agree with env" {
  local l='llm:tp=4,cp=2,dp=*; llm/expert:ep=4,expt_dp=*' r
  run "$HCG" explain -n 16 --nodes 4 "$l"
  [ "$status" -eq 0 ]
  grep -qx 'placement: 4 nodes, distribution block' <<<"$output"
  grep -qx '  llm:tp every group inside a node (4 groups)' <<<"$output"
  grep -q "^  llm:cp 8 of 8 groups cross nodes; grid 'llm', dim 'cp'" <<<"$output"
  "$HCG" explain -n 16 --nodes 4 "$l" --format json >"$TMP/e.json"
  [ "$(jq -r '.placement.checks | map("\(.view):\(.dim)=\(.inside_node)") | join(" ")' "$TMP/e.json")" = \
    'base:tp=true base:cp=false expert:ep=true' ]
  [ "$(jq -r '.placement.checks[1].example.nodes | join(",")' "$TMP/e.json")" = '0,1' ]
  "$HCG" explain -n 16 --nodes 4 "$l" --rank 6 --format json | jq -e '.placement.node == 1'
  # Without --nodes the JSON has no placement key at all.
  "$HCG" explain -n 16 "$l" --format json | jq -e 'has("placement") | not'
  # Every rank's HCG_*_LOCAL agree with the dim's verdict over all groups.
  for r in $(seq 0 15); do
    "$HCG" env -n 16 --nodes 4 --rank "$r" "$l" | grep -qx 'HCG_LLM_CP_LOCAL=0'
    "$HCG" env -n 16 --nodes 4 --rank "$r" "$l" | grep -qx 'HCG_LLM_TP_LOCAL=1'
  done
}

@test "explain --format svg: well-formed XML, every rank drawn, --rank highlighted" {
  local l='vision:tp=2,dp=2; llm:tp=4,pp=2,dp=*'
  "$HCG" explain -n 20 --nodes 2 --format svg --rank 5 "$l" >"$TMP/l.svg"
  python3 - "$TMP/l.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
ns = {"s": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "{http://www.w3.org/2000/svg}svg", root.tag
titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
ranks = sorted(int(t.split(",")[0].split()[1]) for t in titles if t.startswith("rank "))
assert ranks == list(range(20)), ranks
texts = " ".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
assert "node 0" in texts and "node 1" in texts and "pp1" in texts, texts
# No external asset: no href, no <image>, no <script>.
raw = open(sys.argv[1]).read()
assert "href" not in raw and "<image" not in raw and "<script" not in raw
# Rank 5 outlined in red, members of its groups tinted.
assert 'stroke="#d62728"' in raw and "#ffd54f" in raw
PY
  # A tp group split over nodes gets a red dashed box: cyclic on 2 nodes.
  [ "$("$HCG" explain -n 8 --nodes 2 -m cyclic --format svg 'tp=4,dp=*' |
    grep -c 'tp group of rank [0-9]*, across nodes')" -eq 4 ]
  [ "$("$HCG" explain -n 8 --nodes 2 --format svg 'tp=4,dp=*' | grep -c 'across nodes<')" -eq 0 ]
  # Without --nodes: one box of ranks; too many ranks are refused.
  "$HCG" explain -n 8 --format svg 'tp=2,dp=*' | python3 -c 'import sys, xml.dom.minidom as m; m.parseString(sys.stdin.read())'
  run "$HCG" explain -n 8192 --format svg 'tp=2,dp=*'
  [ "$status" -eq 1 ]
  grep -q 'draws at most 4096 ranks' <<<"$output"
}
