#!/usr/bin/env bats
# The hcg command end to end: goldens, exit codes, JSON that parses.
# Run by `make check` with HCG set to the built command.

setup() {
  HCG=${HCG:-hcg}
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

# enum LAYOUT N SPEC EXPECTED
expect_enum() {
  run "$HCG" enum -n "$2" "$1" "$3"
  [ "$status" -eq 0 ] || { echo "status $status: $output"; return 1; }
  [ "$output" = "$4" ] || { echo "'$1' -n $2 $3: got $output, expected $4"; return 1; }
}

@test "enum reproduces the enumeration goldens (doc/semantics.md 2)" {
  expect_enum 'tp=2,dp=4' 8 tp '[[0,1],[2,3],[4,5],[6,7]]'
  expect_enum 'tp=2,cp=2,dp=2' 8 tp,cp '[[0,1,2,3],[4,5,6,7]]'
  expect_enum 'pad:x=4; llm:tp=2,dp=2' 8 llm:tp '[[4,5],[6,7]]'
  expect_enum 'tp=1,cp=2,dp=4' 8 tp '[[0],[1],[2],[3],[4],[5],[6],[7]]'
  expect_enum 'a=2,b=2,c=2' 8 c '[[0,4],[1,5],[2,6],[3,7]]'
  expect_enum 'tp=2,cp=3,dp=4' 24 cp '[[0,2,4],[1,3,5],[6,8,10],[7,9,11],[12,14,16],[13,15,17],[18,20,22],[19,21,23]]'
  expect_enum 'tp=2,cp=3,dp=4' 24 dp '[[0,6,12,18],[1,7,13,19],[2,8,14,20],[3,9,15,21],[4,10,16,22],[5,11,17,23]]'
  expect_enum 'tp=2,cp=3,dp=4' 24 dp,tp '[[0,1,6,7,12,13,18,19],[2,3,8,9,14,15,20,21],[4,5,10,11,16,17,22,23]]'
  expect_enum 'pad:x=3; llm:tp=2,cp=2,dp=2' 11 llm:dp '[[3,7],[4,8],[5,9],[6,10]]'
  expect_enum 'pad:x=10; llm:tp=3,dp=2' 16 llm:dp '[[10,13],[11,14],[12,15]]'
  expect_enum 'tp=2,cp=1,pp=2,dp=2' 8 pp '[[0,2],[1,3],[4,6],[5,7]]'
  expect_enum 'tp=2,cp=1,ep=1,dp=2,pp=4' 16 dp '[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]'
  expect_enum 'tp=2,cp=1,ep=1,dp=2,pp=4' 16 pp '[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]'
  run "$HCG" enum -n 120 'tp=2,cp=3,pp=4,dp=5' dp
  [ "$status" -eq 0 ]
  [ "$(echo "$output" | jq 'length')" -eq 24 ]
  [ "$(echo "$output" | jq '[.[] | length] | unique')" = "$(printf '[\n  5\n]')" ]
  [ "$(echo "$output" | jq -c '.[23]')" = '[23,47,71,95,119]' ]
}

@test "enum reproduces the view and expert goldens (doc/semantics.md 3, 4)" {
  v='llm:tp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,pp'
  expect_enum "$v" 8 llm/expert:pp '[[0,4],[1,5],[2,6],[3,7]]'
  expect_enum "$v" 8 llm/expert:expt_tp,ep '[[0,1,2,3],[4,5,6,7]]'
  e='llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp'
  expect_enum "$e" 16 llm:cp '[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]'
  expect_enum "$e" 16 llm:dp '[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]'
  expect_enum "$e" 16 llm:dp,cp '[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]'
  expect_enum "$e" 16 llm:pp '[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],[7,15]]'
  expect_enum "$e" 16 llm:tp,pp '[[0,1,8,9],[2,3,10,11],[4,5,12,13],[6,7,14,15]]'
  expect_enum "$e" 16 llm/expert:ep '[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]'
  expect_enum "$e" 16 llm/expert:expt_tp,ep '[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]'
  expect_enum "$e" 16 llm/expert:expt_tp,ep,pp '[[0,1,2,3,8,9,10,11],[4,5,6,7,12,13,14,15]]'
  expect_enum 'a=2,b=2' 4 'world:' '[[0],[1],[2],[3]]'
}

@test "check refuses a view whose shared dim enumerates differently" {
  run "$HCG" check -n 8 'llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4'
  [ "$status" -eq 2 ]
  [[ "$output" == *"shared dim 'pp'"* ]]
  [[ "$output" == *"base pp [[0,4],[1,5],[2,6],[3,7]]"* ]]
  [[ "$output" == *"view pp [[0,1],[2,3],[4,5],[6,7]]"* ]]
  [[ "$output" == *"column 29"* ]]
}

@test "check prints the canonical layout, which checks again to itself" {
  run "$HCG" check -n 16 'vision:tp=4,dp=2; llm:tp=2,cp=1,dp=*,pp=2; llm/expert:ep=2,expt_dp=*,pp'
  [ "$status" -eq 0 ]
  [ "$output" = 'vision@0:tp=4,dp=2;llm@8:tp=2,cp=1,dp=2,pp=2;llm/expert:ep=2,expt_dp=2,pp' ]
  run "$HCG" check -n 16 "$output"
  [ "$status" -eq 0 ]
  [ "$output" = 'vision@0:tp=4,dp=2;llm@8:tp=2,cp=1,dp=2,pp=2;llm/expert:ep=2,expt_dp=2,pp' ]
}

@test "a bad layout exits 2 with a column and a caret on stderr" {
  run "$HCG" check -n 8 'llm:tp=2,pp=2,cp=0'
  [ "$status" -eq 2 ]
  [ "${lines[0]}" = "hcg: layout: column 18: size of 'cp' must be a positive integer, got '0'" ]
  [ "${lines[1]}" = "  llm:tp=2,pp=2,cp=0" ]
  [ "${lines[2]}" = "                   ^" ]
  run "$HCG" check -n 8 'tp=4'
  [ "$status" -eq 2 ]
  [[ "$output" == *"ranks [4,8) are in no grid"* ]]
  run "$HCG" check -n 12 'vision@0:tp=8; llm@4:tp=8'
  [ "$status" -eq 2 ]
  [[ "$output" == *"overlap without spanning the same ranks"* ]]
  run "$HCG" check -n 8 "$(head -c 70000 /dev/zero | tr '\0' ' ')tp=8"
  [ "$status" -eq 2 ]
  [[ "$output" == *"the limit is 65536"* ]]
}

@test "usage errors exit 2, as a bad layout does" {
  run "$HCG"
  [ "$status" -eq 2 ]
  run "$HCG" frobnicate 'tp=2'
  [ "$status" -eq 2 ]
  [[ "$output" == *"unknown command 'frobnicate'"* ]]
  run "$HCG" check -n zero 'tp=2'
  [ "$status" -eq 2 ]
  [[ "$output" == *"-n wants a positive number of ranks, got 'zero'"* ]]
  run "$HCG" check -n 2
  [ "$status" -eq 2 ]
  run "$HCG" enum -n 2 'tp=2'
  [ "$status" -eq 2 ]
  run "$HCG" explain -n 4 'tp=4' --format yaml
  [ "$status" -eq 2 ]
  run "$HCG" env -n 4 'tp=4'
  [ "$status" -eq 2 ]
  run "$HCG" help frobnicate
  [ "$status" -eq 2 ]
  [[ "$output" == *"no help for 'frobnicate'"* ]]
}

@test "other failures exit 1: specs, files, ranks" {
  run "$HCG" enum -n 4 'tp=2,dp=2' ep
  [ "$status" -eq 1 ]
  [[ "$output" == *"grid 'world' has no dim 'ep' (its dims: tp, dp)"* ]]
  run "$HCG" enum -n 8 'vision:tp=4; llm:tp=4' tp
  [ "$status" -eq 1 ]
  [[ "$output" == *"must name its grid"* ]]
  run "$HCG" check -n 4 @"$TMP/missing"
  [ "$status" -eq 1 ]
  [[ "$output" == *"cannot open layout file"* ]]
  run "$HCG" explain -n 4 'tp=4' --rank 4
  [ "$status" -eq 1 ]
  [[ "$output" == *"rank 4 is outside the world of 4 ranks"* ]]
}

@test "hcg help [COMMAND] and hcg COMMAND --help" {
  run "$HCG" help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: hcg check"* ]]
  for c in check enum explain env; do
    run "$HCG" help "$c"
    [ "$status" -eq 0 ]
    [[ "${lines[0]}" == "usage: hcg $c "* ]]
    help_out=$output
    run "$HCG" "$c" --help
    [ "$status" -eq 0 ]
    [ "$output" = "$help_out" ]
  done
  run "$HCG" check 'tp=2' -h
  [ "$status" -eq 0 ]
  [[ "${lines[0]}" == "usage: hcg check "* ]]
}

@test "layout files: comments, lines, errors name the file and line" {
  printf '# model\nvision: tp=4, dp=2   # encoder\nllm: tp=2,\n     dp=*\n' > "$TMP/l.hcg"
  run "$HCG" check -n 16 @"$TMP/l.hcg"
  [ "$status" -eq 0 ]
  [ "$output" = 'vision@0:tp=4,dp=2;llm@8:tp=2,dp=4' ]
  printf 'vision: tp=4\nllm: tp=2, dp=0\n' > "$TMP/bad.hcg"
  run "$HCG" check -n 8 @"$TMP/bad.hcg"
  [ "$status" -eq 2 ]
  [[ "${lines[0]}" == "hcg: layout '$TMP/bad.hcg': line 2, column 15: "* ]]
}

@test "explain --format json parses and agrees with enum and env" {
  l='vision:tp=2,pp=2,dp=2; llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'
  run "$HCG" explain -n 24 "$l" --format json
  [ "$status" -eq 0 ]
  echo "$output" > "$TMP/x.json"
  jq -e . "$TMP/x.json" > /dev/null
  [ "$(jq -r .mode "$TMP/x.json")" = non-colocated ]
  [ "$(jq -r .language "$TMP/x.json")" = llm ]
  [ "$(jq '.ranks | length' "$TMP/x.json")" -eq 24 ]
  [ "$(jq -c '.grids[1].collection.tp_ep.groups' "$TMP/x.json")" = "$("$HCG" enum -n 24 "$l" llm/expert:expt_tp,ep)" ]
  [ "$(jq -c '.grids[1].collection.pp.groups' "$TMP/x.json")" = "$("$HCG" enum -n 24 "$l" llm:pp)" ]
  [ "$(jq '.grids[0].collection.ep' "$TMP/x.json")" = null ]
  [ "$(jq -r '.grids[1].collection.intra_dp_cp.same_as' "$TMP/x.json")" = dp_cp ]
  [ "$(jq -c '.grids[1].embedding.embd[0]' "$TMP/x.json")" = '[8,16]' ]
  [ "$(jq -c '.bridges[0].leaders' "$TMP/x.json")" = '[{"src":3,"dest":[8,10]},{"src":7,"dest":[12,14]}]' ]
  # Every rank's variables: top-level env + rank env == `hcg env`.
  for r in 0 5 8 13 23; do
    want=$("$HCG" env -n 24 "$l" --rank "$r" | sort)
    got=$(jq -r --argjson r "$r" '(.env + .ranks[$r].env) | to_entries[] | "\(.key)=\(.value)"' "$TMP/x.json" | sort)
    [ "$want" = "$got" ] || { echo "rank $r:"; diff <(echo "$want") <(echo "$got"); return 1; }
  done
}

@test "explain --rank in json and text" {
  l='vision@0:tp=2,dp=4; llm@0:tp=4,dp=2'
  run "$HCG" explain -n 8 "$l" --rank 3 --format json
  [ "$status" -eq 0 ]
  echo "$output" | jq -e . > /dev/null
  [ "$(echo "$output" | jq -c '.groups.llm.tp')" = '{"key":"llm:tp","size":4,"members":[0,1,2,3],"index":3}' ]
  [ "$(echo "$output" | jq -c '.bridges[0].group')" = '[1,3]' ]
  [ "$(echo "$output" | jq -r '.env.HCG_GRIDS')" = 'vision,llm' ]
  [ "$(echo "$output" | jq -c '.coords.vision.base')" = '{"tp":1,"dp":1}' ]
  run "$HCG" explain -n 8 "$l" --rank 3
  [ "$status" -eq 0 ]
  [[ "$output" == *"rank 3 of 8"* ]]
  [[ "$output" == *"HCG_LLM_TP_RANK=3"* ]]
  [[ "$output" == *"gather groups: [1,3]"* ]]
  run "$HCG" explain -n 16 'tp=2,dp=*,pp=2'
  [ "$status" -eq 0 ]
  [[ "$output" == *"embd"*"[0,8]"* ]]
  [[ "$output" == *"   15 |  1  3  1 | last"* ]]
}

@test "help, version and the man page" {
  run "$HCG" --help
  [ "$status" -eq 0 ]
  [[ "$output" == *"usage: hcg check"* ]]
  run "$HCG" --version
  [ "$status" -eq 0 ]
  [[ "$output" =~ ^hcg\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
  [ -s "$HCG_SRCDIR/runtime/cli/hcg.1" ]
  if command -v man >/dev/null; then
    MANWIDTH=80 man -l "$HCG_SRCDIR/runtime/cli/hcg.1" 2>/dev/null | grep -q 'LAYOUT LANGUAGE'
  fi
}

@test "every layout file the README names exists and fits its task count" {
  local n=0 line count path
  while read -r line; do
    count=$(grep -oE -- '-n +[0-9]+' <<<"$line" | grep -oE '[0-9]+')
    path=$(grep -oE -- '--hcg-layout=@[^ ]+' <<<"$line" | cut -d@ -f2)
    run "$HCG" check -n "$count" "@$HCG_SRCDIR/$path"
    [ "$status" -eq 0 ] || { echo "$line: $output"; false; }
    n=$((n + 1))
  done < <(grep -E -- 'srun -n +[0-9]+ +--hcg-layout=@' "$HCG_SRCDIR/README.md")
  [ "$n" -ge 1 ]
}

@test "explain prints groups compactly (runs and strides), never cut with ..." {
  run "$HCG" explain -n 64 'tp=8,dp=*'
  [ "$status" -eq 0 ]
  [[ "$output" == *"[[0-7],[8-15],"* ]]
  [[ "$output" == *"[[0-56:8],[1-57:8],"* ]]
  [[ "$output" == *"[[0-63]]"* ]]
  ! grep -qF '...' <<<"$output"
  run "$HCG" explain -n 1024 'vision:tp=4,dp=*; llm@512:tp=2,pp=2,dp=*' --rank 700
  [ "$status" -eq 0 ]
  ! grep -qF '...' <<<"$output"
}
