#!/usr/bin/env bats
# NVLink domains with no cluster (issue 22): hcg check/explain/env
# --domain-size B beside --nodes N; the dims of --intra-domain-dims (default
# ep,expt_tp) judged against domains of B consecutive nodes, the computed
# suggestion, HCG_*_DOMAIN_LOCAL, JSON and SVG. tests/cluster/domains.bats
# checks that srun's tasks on a cluster with topology get the same.

setup() {
  HCG=${HCG:-hcg}
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

@test "check --domain-size: ep inside a domain is silent, across domains warned with a suggestion" {
  # 8 ranks on 4 nodes (2 each), domains of 2 nodes: ranks 0-3 and 4-7.
  run "$HCG" check -n 8 --nodes 4 --domain-size 2 'ep=4,dp=2'
  [ "$status" -eq 0 ]
  [ "${lines[1]}" = 'placement: world:ep: every group inside a domain (2 groups)' ]
  [ "${#lines[@]}" -eq 2 ]
  # ep crosses nodes here, but on the domain list it is judged by domain:
  # no node line, no warning.
  [ -z "$("$HCG" check -n 8 --nodes 4 -B 2 'ep=4,dp=2' 2>&1 >/dev/null)" ]
  run "$HCG" check -n 8 --nodes 4 --domain-size 2 'dp=2,ep=4'
  [ "$status" -eq 0 ]
  grep -qx 'placement: world:ep: 2 of 2 groups cross domains' <<<"$output"
  grep -qx "hcg: warning: placement: grid 'world', dim 'ep': group \[0,2,4,6\] spans domain 0 (rank 0) and domain 1 (rank 4)" <<<"$output"
  grep -qx "placement: suggestion: put ep before dp, as in 'ep=4,dp=2'" <<<"$output"
  # The suggestion is on stdout, the warning on stderr.
  [ "$("$HCG" check -n 8 --nodes 4 -B 2 'dp=2,ep=4' 2>/dev/null | grep -c suggestion)" -eq 1 ]
  [ "$("$HCG" check -n 8 --nodes 4 -B 2 'dp=2,ep=4' 2>&1 >/dev/null | grep -c warning)" -eq 1 ]
  # A distribution that keeps them inside is named too.
  run "$HCG" check -n 8 --nodes 4 -B 2 'dp=4,ep=2'
  grep -qx "placement: suggestion: put ep before dp, as in 'ep=2,dp=4', or use --distribution=cyclic" <<<"$output"
  # The suggested order is checked: it really keeps every group inside.
  run "$HCG" check -n 8 --nodes 4 -B 2 'ep=2,dp=4'
  ! grep -q cross <<<"$output"
  run "$HCG" check -n 8 --nodes 4 -B 2 -m cyclic 'dp=4,ep=2'
  ! grep -q cross <<<"$output"
}

@test "check --domain-size: the NVL72 example, a view's dim, tp on the domain list, nothing to suggest" {
  # 144 GPUs: 36 nodes of 4 in two NVL72 racks of 18 nodes; EP8 in the
  # expert view, strided by expt_dp=18: each ep group spans both racks.
  local l='llm:tp=4,dp=*; llm/expert:expt_tp=1,expt_dp=*,ep=8'
  run "$HCG" check -n 144 --tasks-per-node 4 --domain-size 18 "$l"
  [ "$status" -eq 0 ]
  grep -qx 'placement: llm:tp: every group inside a node (36 groups)' <<<"$output"
  grep -qx 'placement: llm/expert:expt_tp: every group inside a domain (144 groups)' <<<"$output"
  grep -qx 'placement: llm/expert:ep: 18 of 18 groups cross domains' <<<"$output"
  grep -qx "placement: suggestion: put ep before expt_dp, as in 'llm/expert:expt_tp=1,ep=8,expt_dp=18'" <<<"$output"
  run "$HCG" check -n 144 --tasks-per-node 4 --domain-size 18 \
    'llm:tp=4,dp=*; llm/expert:expt_tp=1,ep=8,expt_dp=*'
  grep -qx 'placement: llm/expert:ep: every group inside a domain (18 groups)' <<<"$output"
  ! grep -q suggestion <<<"$output"
  # tp on the domain list (NVL72 tensor parallel): tp=8 leaves the node of
  # 4 but not the rack.
  run "$HCG" check -n 144 --tasks-per-node 4 --domain-size 18 \
    --intra-domain-dims tp,ep 'tp=8,dp=*'
  grep -qx 'placement: world:tp: every group inside a domain (18 groups)' <<<"$output"
  ! grep -q 'node' <<<"$output"
  # Without it tp=8 crosses nodes, and nothing tried keeps it inside.
  run "$HCG" check -n 144 --tasks-per-node 4 --domain-size 18 'tp=8,dp=*'
  grep -qx 'placement: world:tp: 18 of 18 groups cross nodes' <<<"$output"
  grep -q '^placement: no dim moved earlier in its order and no other placement tried (--distribution=cyclic) keeps every group inside$' <<<"$output"
  # none: no dim judged by domain; ep goes back to the node list.
  run "$HCG" check -n 8 --nodes 4 -B 2 --intra-domain-dims none 'dp=2,ep=4'
  grep -qx 'placement: world:ep: 2 of 2 groups cross nodes' <<<"$output"
  ! grep -q 'domain' <<<"$output"
}

@test "env --domain-size: HCG_*_DOMAIN_LOCAL beside HCG_*_LOCAL, for every rank" {
  local r
  for r in 0 1 2 3 4 5 6 7; do
    run "$HCG" env -n 8 --nodes 4 --domain-size 2 --rank "$r" 'dp=2,ep=4'
    [ "$status" -eq 0 ]
    grep -qx 'HCG_WORLD_EP_LOCAL=0' <<<"$output"
    grep -qx 'HCG_WORLD_EP_DOMAIN_LOCAL=0' <<<"$output"
    run "$HCG" env -n 8 --nodes 4 --domain-size 2 --rank "$r" 'ep=4,dp=2'
    grep -qx 'HCG_WORLD_EP_DOMAIN_LOCAL=1' <<<"$output"
    [ "$(grep -c '_LOCAL=' <<<"$output")" -eq 2 ]
  done
  # Only with --domain-size.
  run "$HCG" env -n 8 --nodes 4 --rank 0 'ep=4,dp=2'
  ! grep -q DOMAIN <<<"$output"
  run "$HCG" env -n 8 --nodes 4 -B 2 --intra-domain-dims dp --rank 0 'ep=4,dp=2'
  grep -qx 'HCG_WORLD_DP_DOMAIN_LOCAL=0' <<<"$output"
  ! grep -q 'EP_DOMAIN' <<<"$output"
}

@test "explain --domain-size: text and JSON give the domain verdicts and the suggestion" {
  local l='dp=2,ep=4'
  run "$HCG" explain -n 8 --nodes 4 -B 2 "$l"
  grep -qx 'placement: 4 nodes, distribution block, 2 domains of 2 nodes' <<<"$output"
  grep -q "^  world:ep 2 of 2 groups cross domains; grid 'world', dim 'ep'" <<<"$output"
  grep -qx "  suggestion: put ep before dp, as in 'ep=4,dp=2'" <<<"$output"
  run "$HCG" explain -n 8 --nodes 4 -B 2 "$l" --rank 5
  grep -qx '  rank 5 is on node 2, domain 1' <<<"$output"
  "$HCG" explain -n 8 --nodes 4 -B 2 "$l" --format json >"$TMP/e.json"
  jq -e '.placement.domain_size == 2 and .placement.domains == 2' "$TMP/e.json"
  jq -e '.placement.checks == []' "$TMP/e.json"
  [ "$(jq -r '.placement.domain_checks | map("\(.dim)=\(.inside_domain)") | join(" ")' "$TMP/e.json")" = 'ep=false' ]
  [ "$(jq -r '.placement.domain_checks[0].example.domains | join(",")' "$TMP/e.json")" = '0,1' ]
  [ "$(jq -r '.placement.suggestion' "$TMP/e.json")" = "put ep before dp, as in 'ep=4,dp=2'" ]
  "$HCG" explain -n 8 --nodes 4 -B 2 "$l" --rank 6 --format json | jq -e '.placement.domain == 1 and .placement.node == 3'
  # Without --domain-size nothing of it.
  "$HCG" explain -n 8 --nodes 4 "$l" --format json |
    jq -e '.placement | has("domain_size") or has("domain_checks") | not'
}

@test "explain --format svg --domain-size: a frame per domain, a colour per group crossing domains" {
  "$HCG" explain -n 16 --nodes 4 --domain-size 2 --format svg 'dp=2,ep=8' >"$TMP/d.svg"
  python3 - "$TMP/d.svg" <<'PY'
import sys, xml.etree.ElementTree as ET
S = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
titles = [t.text for t in root.iter(S + "title")]
assert sum(t.startswith("domain ") for t in titles) == 2, titles
texts = " ".join(t.text or "" for t in root.iter(S + "text"))
assert "domain 0" in texts and "domain 1" in texts, texts
# Two ep groups ([0,2,..,14] and [1,3,..,15]) cross: each of the 16 ranks
# has one dot, in its group's colour, and the two groups differ.
dots = {}
for g in root.iter(S + "circle"):
    t = g.find(S + "title").text
    dots[int(t.split()[1].rstrip(":"))] = (g.get("fill"), t)
assert sorted(dots) == list(range(16)), sorted(dots)
assert len({dots[r][0] for r in range(0, 16, 2)}) == 1
assert len({dots[r][0] for r in range(1, 16, 2)}) == 1
assert dots[0][0] != dots[1][0]
assert "crosses domains" in dots[3][1]
PY
  # Groups inside their domain get no dot; without --domain-size no frame.
  [ "$("$HCG" explain -n 16 --nodes 4 -B 2 --format svg 'ep=8,dp=2' | grep -c '<circle')" -eq 0 ]
  [ "$("$HCG" explain -n 16 --nodes 4 --format svg 'dp=2,ep=8' | grep -c 'domain')" -eq 0 ]
}

@test "bad domain options are usage errors" {
  run "$HCG" check -n 8 --domain-size 2 'ep=4,dp=2'
  [ "$status" -eq 2 ]
  grep -q -- '--domain-size and --intra-domain-dims need --nodes or --tasks-per-node' <<<"$output"
  run "$HCG" check -n 8 --nodes 4 --intra-domain-dims ep 'ep=4,dp=2'
  [ "$status" -eq 2 ]
  grep -q -- '--intra-domain-dims needs --domain-size' <<<"$output"
  run "$HCG" check -n 8 --nodes 4 --domain-size 0 'ep=4,dp=2'
  [ "$status" -eq 2 ]
  grep -q -- '--domain-size wants a positive number of nodes' <<<"$output"
  run "$HCG" check -n 8 --nodes 4 -B 2 --intra-domain-dims 'ep,,tp' 'ep=4,dp=2'
  [ "$status" -eq 2 ]
  run "$HCG" enum -n 8 --nodes 4 -B 2 'ep=4,dp=2' ep
  [ "$status" -eq 2 ]
  # A domain larger than the step is one domain: everything inside.
  run "$HCG" check -n 8 --nodes 4 -B 9 'dp=2,ep=4'
  [ "$status" -eq 0 ]
  grep -qx 'placement: world:ep: every group inside a domain (2 groups)' <<<"$output"
}
