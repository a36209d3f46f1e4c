#!/usr/bin/env bats
# hcg explain for people and programs (issue 11): text fits 100 columns for
# every layout the tests, the demo and layouts/ use; big layouts are
# summarized unless --full; --rank R stays small and quick at 2^30 ranks;
# the JSON parses. Run by `make check` with HCG set to the built command.

setup() {
  HCG=${HCG:-hcg}
  SRC=${HCG_SRCDIR:-$BATS_TEST_DIRNAME/../..}
  TMP=$(mktemp -d)
}

teardown() {
  rm -rf "$TMP"
}

# Each WORLD LAYOUT line of layouts.list, @PATH made absolute.
layouts() {
  grep -v '^#' "$SRC/tests/cli/layouts.list" | sed "s|^\([0-9]*\) @|\1 @$SRC/|"
}

# Lines of file $1 wider than 100 columns, with the command in $2.
check_width() {
  if awk 'length > 100 { bad = 1; print FILENAME ":" FNR ": " length " columns" } END { exit bad }' "$1"; then
    return 0
  fi
  echo "in: $2"
  return 1
}

@test "explain's text fits 100 columns and its json parses, for every layout" {
  local n l args k=0
  # One file each for text and json, so that awk and jq run once.
  while read -r n l; do
    for args in "" "--full" "--rank 0" "--rank $((n / 2))" "--rank $((n - 1))"; do
      echo "### hcg explain -n $n '$l' $args"
      # shellcheck disable=SC2086
      timeout 60 "$HCG" explain -n "$n" "$l" $args
    done >>"$TMP/all.text"
    timeout 60 "$HCG" explain -n "$n" "$l" --format json >>"$TMP/all.json"
    timeout 60 "$HCG" explain -n "$n" "$l" --rank $((n - 1)) --format json >>"$TMP/all.json"
    echo "$n $((n - 1))" >>"$TMP/want"
    k=$((k + 1))
  done < <(layouts)
  [ "$k" -ge 20 ]
  awk '/^### / { cmd = $0; next } length > 100 { print cmd ": " length " columns: " $0; bad = 1 }
       END { exit bad }' "$TMP/all.text"
  # Whole world then one rank, per layout: world size and rank.
  diff -u "$TMP/want" <(jq -s -r '.[] | if has("ranks") then (.ranks | length) else .rank end' \
    "$TMP/all.json" | paste -d ' ' - -)
}

@test "big grids get a rank summary; --full lists every rank and group" {
  run "$HCG" explain -n 64 'tp=8,dp=*'
  [ "$status" -eq 0 ]
  [[ "$output" == *"ranks: rank = tp + 8*dp"* ]]
  [[ "$output" == *"(56 ranks more; --full lists them all)"* ]]
  [ "${#lines[@]}" -lt 40 ]
  run "$HCG" explain -n 64 'tp=8,dp=*' --full
  [ "$status" -eq 0 ]
  [[ "$output" == *"      33 |  1  4 | first+last"* ]]
  [[ "$output" != *"more"* ]]
  run "$HCG" explain -n 1024 'vision:tp=4,dp=*; llm@512:tp=2,pp=2,dp=*'
  [ "$status" -eq 0 ]
  [[ "$output" == *"+248 more (256 groups of 2)"* ]]
  [ "${#lines[@]}" -lt 120 ]
  run "$HCG" check -n 4 'tp=4' --full
  [ "$status" -eq 2 ]
  [[ "$output" == *"--full is an option of explain only"* ]]
}

# explain --rank at 2^30 ranks: small output, groups as progressions.
#   rank_at_2_30 LAYOUT RANK
rank_at_2_30() {
  local fmt
  for fmt in text json; do
    timeout 20 "$HCG" explain -n 1073741824 "$1" --rank "$2" --format "$fmt" >"$TMP/r.$fmt"
    [ "$(wc -c <"$TMP/r.$fmt")" -lt 16384 ] || { echo "$1 --rank $2 --format $fmt: $(wc -c <"$TMP/r.$fmt") bytes"; return 1; }
  done
  check_width "$TMP/r.text" "$1 --rank $2"
  jq -e . "$TMP/r.json" >/dev/null
}

@test "explain --rank R at 2^30 ranks is bounded, in text and json" {
  rank_at_2_30 'tp=2,cp=2,pp=2,dp=*' 5
  grep -qE '^ +dp_cp +world:dp-cp +\[5,7\]\+\[0-1073741816:8\]  index 0 of 268435456$' "$TMP/r.text"
  grep -qE '^ +dp +world:dp +\[5-1073741821:8\]  index 0 of 134217728$' "$TMP/r.text"
  [ "$(jq -c .groups.world.dp_cp "$TMP/r.json")" = '{"key":"world:dp-cp","size":268435456,"ranges":{"size":268435456,"first":5,"terms":[{"count":2,"stride":2},{"count":134217728,"stride":8}]},"index":0}' ]
  [ "$(jq -c .groups.world.tp "$TMP/r.json")" = '{"key":"world:tp","size":2,"members":[4,5],"index":1}' ]
  rank_at_2_30 'vision:tp=4,dp=*; llm@536870912:tp=2,pp=2,dp=*' 1000000007
  rank_at_2_30 'vision@0:tp=2,dp=*; llm@0:tp=4,cp=2,dp=*' 1073741823
  rank_at_2_30 'vision@0:tp=1,dp=*; llm@0:tp=536870912,dp=2' 7
  [ "$(jq -c '.bridges[0].ranges' "$TMP/r.json")" = '{"size":536870912}' ]
  rank_at_2_30 'llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp' 123456789
  # The whole world's text is summarized, so it is quick too.
  timeout 20 "$HCG" explain -n 1073741824 'tp=2,cp=2,pp=2,dp=*' >"$TMP/w.text"
  [ "$(wc -c <"$TMP/w.text")" -lt 16384 ]
}
