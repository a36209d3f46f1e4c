#!/usr/bin/env bats
# One source per fact: the layout grammar (runtime/core/parse.c), the
# process-group fields (runtime/core/collection.c) and the plugin's
# plugstack.conf arguments (runtime/core/plugstack.h) live once in the code, which
# `hcg help grammar|fields|plugstack` prints. Every copy in the README, the
# man pages, doc/, hcg.h, etc/ and the Python binding is held to that
# output here, so that a doc that drifts from the code fails a test.

setup() {
  [ -x "$HCG" ] || skip "HCG is not set to the built hcg command"
  S=$HCG_SRCDIR
  T=$BATS_TEST_TMPDIR
}

# has_block FILE BLOCK_FILE [INDENT]: FILE holds every line of BLOCK_FILE,
# in order and in a row, each after INDENT.
has_block() {
  awk -v indent="${3:-}" '
    NR == FNR { want[n++] = indent $0; next }
    !found { if ($0 == want[m]) { if (++m == n) found = 1 }
             else m = ($0 == want[0]) ? 1 : 0 }
    END { exit !found }' "$2" "$1" || {
    echo "$1 does not hold this block (${3:+indented '$3', }as printed by hcg):"
    sed "s/^/  $3/" "$2"
    false
  }
}

@test "hcg help TOPIC: grammar, fields and plugstack; an unknown topic is a usage error" {
  for t in grammar fields plugstack; do
    run "$HCG" help "$t"
    [ "$status" -eq 0 ]
    [ -n "$output" ]
  done
  run "$HCG" help
  [[ "$output" == *"  grammar "* && "$output" == *"  fields "* && "$output" == *"  plugstack "* ]]
  run "$HCG" help frobnicate
  [ "$status" -eq 2 ]
}

@test "the grammar: every copy is the one hcg help grammar prints" {
  "$HCG" help grammar >"$T/grammar"
  has_block "$S/README.md" "$T/grammar"
  has_block "$S/runtime/cli/hcg.1" "$T/grammar"
  has_block "$S/runtime/cli/hcg-layout.5" "$T/grammar"
  has_block "$S/doc/interfaces.md" "$T/grammar" "    "
  # Any other file that writes the grammar out holds the same one; hcg.h
  # only points to it.
  local f n=0
  while read -r f; do
    case $f in runtime/core/parse.c | README.md | runtime/cli/hcg.1 | \
      runtime/cli/hcg-layout.5 | doc/interfaces.md) continue ;; esac
    echo "$f writes the grammar out: point to 'hcg help grammar' or add it here"
    n=$((n + 1))
  done < <(cd "$S" && grep -rlE 'LAYOUT +:=' README.md doc runtime spank contrib/python etc 2>/dev/null)
  [ "$n" -eq 0 ]
}

@test "the grammar's NAME bound is the parser's" {
  "$HCG" help grammar >"$T/grammar"
  local max
  max=$(sed -nE 's/^NAME +:= \[a-z\]\[a-z0-9_\]\{0,([0-9]+)\}$/\1/p' "$T/grammar")
  [ -n "$max" ]
  local name
  name=a$(printf 'b%.0s' $(seq "$max"))
  run "$HCG" check -n 2 "$name:tp=2"
  [ "$status" -eq 0 ]
  run "$HCG" check -n 2 "${name}c:tp=2"
  [ "$status" -eq 2 ]
}

@test "the fields: README, semantics.md, hcg(1), hcg.h and hcg.layout.FIELDS hold hcg help fields" {
  "$HCG" help fields >"$T/fields"
  has_block "$S/README.md" "$T/fields"
  has_block "$S/doc/semantics.md" "$T/fields"
  has_block "$S/runtime/cli/hcg.1" "$T/fields"
  # hcg_layout.h: enum hcg_field in the same order, each comment its dims.
  local name view dims want got upper
  tail -n +2 "$T/fields" | while read -r name view dims; do
    upper=$(tr a-z A-Z <<<"$name")
    want=$dims
    [ "$view" = expert ] && [[ "$dims" != "the same group as "* ]] && want="expert: $dims"
    got=$(sed -nE "s|^ *HCG_FIELD_${upper}, */\* *(.*[^ ]) *\*/.*|\1|p" "$S/runtime/hcg_layout.h")
    [ "$got" = "$want" ] || { echo "hcg_layout.h: HCG_FIELD_$upper says '$got', hcg help fields '$want'"; false; }
  done
  tail -n +2 "$T/fields" | awk '{ print "HCG_FIELD_" toupper($1) }' >"$T/want-order"
  grep -oE '^ *HCG_FIELD_[A-Z_]+,' "$S/runtime/hcg_layout.h" | tr -d ' ,' >"$T/got-order"
  diff "$T/want-order" "$T/got-order"
  # The Python binding's FIELDS: written out, in the same order (enum
  # hcg_field); else asked of the library (hcg_field_name), as it is now,
  # and test_layout.py compares them with `hcg help fields`.
  local py=$S/contrib/python/hcg/layout.py
  if grep -qE '^FIELDS\b.*= *\($' "$py"; then
    tail -n +2 "$T/fields" | awk '{ print $1 }' >"$T/want-names"
    sed -n '/^FIELDS\b/,/^)/p' "$py" | grep -oE '"[a-z_]+"' | tr -d '"' >"$T/got-names"
    diff "$T/want-names" "$T/got-names"
  else
    grep -qE '^FIELDS\b.*= *_field_names\(\)' "$py"
    grep -q 'hcg_field_name' "$py"
  fi
}

@test "the plugstack arguments: README, plugin.md, spank_hcg(8) and the drop-in list hcg help plugstack's" {
  "$HCG" help plugstack | grep -v '^ ' >"$T/args"
  [ "$(wc -l <"$T/args")" -ge 6 ]
  local arg key value dflt md n
  n=0
  while read -r arg; do
    n=$((n + 1))
    key=${arg%%=*}
    value=$(sed -E 's/^[^=]+=([^ ]+) \(default .*\)$/\1/' <<<"$arg")
    dflt=$(sed -E 's/^.* \(default (.*)\)$/\1/' <<<"$arg")
    md="| \`$key=${value//|/\\|}\` |"
    # The default's column: the README's second, plugin.md's third.
    for fc in README.md:3 doc/plugin.md:4; do
      f=${fc%:*}
      got=$(grep -F -- "$md" "$S/$f" | sed 's/\\|/\x01/g' | cut -d'|' -f"${fc#*:}" |
        tr -d '`' | sed 's/^ *//; s/ *$//')
      [ "$got" = "$dflt" ] ||
        { echo "$f: the row '$md ...' gives the default '$got', the plugin '$dflt'"; false; }
    done
    [ "$(grep -cE "^\.(B|BI|BR|RB) +(\[ +)?$key=" "$S/spank/spank_hcg.8")" -ge 2 ] ||
      { echo "spank_hcg.8: '$key=' not both in SYNOPSIS and ARGUMENTS"; false; }
    # The drop-in: "#   KEY=VALUE", alone or before its meaning.
    grep -E -- "^#   $key=" "$S/etc/plugstack.conf.d/hcg.conf" | awk '{ print $2 }' |
      grep -qxF -- "$key=$value" ||
      { echo "etc/plugstack.conf.d/hcg.conf: no '#   $key=$value'"; false; }
  done <"$T/args"
  # No argument documented that the plugin does not take.
  for f in README.md doc/plugin.md; do
    [ "$(grep -cE '^\| `[a-z_]+=' "$S/$f")" -eq "$n" ] ||
      { echo "$f: its argument table has rows other than hcg help plugstack's $n"; false; }
  done
}

@test "srun's placement of a step: its variable and bound in spank/order.h are the ones plugin.md and spank_hcg(8) name" {
  local env max
  env=$(sed -nE 's/^#define HCGP_ORDER_ENV "([A-Z_]+)"$/\1/p' "$S/spank/order.h")
  max=$(sed -nE 's/^#define HCGP_ORDER_MAX \(([0-9]+) \* 1024\)$/\1/p' "$S/spank/order.h")
  [ -n "$env" ] && [ -n "$max" ] || { echo "spank/order.h: no HCGP_ORDER_ENV or HCGP_ORDER_MAX"; false; }
  grep -qF "\`$env\`" "$S/doc/plugin.md" || { echo "doc/plugin.md does not name $env"; false; }
  grep -qF "$env" "$S/spank/spank_hcg.8" || { echo "spank_hcg.8 does not name $env"; false; }
  grep -qF "at most $max KiB" "$S/doc/plugin.md" || { echo "doc/plugin.md does not say 'at most $max KiB'"; false; }
}
