#!/usr/bin/env bats
# scripts/deps-graph.sh: the C tree has no circle of files, and the check
# would see one. The small trees here stand for the three circles it found
# in main before they were taken apart (a call each way between two files;
# a header of one file included by a file the first one calls; a loop
# through four files), and for what must not count (a name a file defines
# itself, static or not; a struct tag; a header without a .c of its name;
# a name in a comment, a string or a file-level assertion).

setup() {
  GRAPH=$BATS_TEST_DIRNAME/../../scripts/deps-graph.sh
  T=$BATS_TEST_TMPDIR/tree
  mkdir -p "$T"
}

# write FILE TEXT...: the file, one argument a line.
write() {
  local f=$T/$1
  shift
  printf '%s\n' "$@" >"$f"
}

@test "the C tree has no circle" {
  run "$GRAPH"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *" C files, "*" dependencies, no circle" ]]
}

@test "a call each way is a circle, named with what each file uses" {
  write main.c 'int parse_count(const char *s);' \
    'int main(void) { return layout_dispatch(0) + parse_count("1"); }'
  write layout.c 'int layout_dispatch(int n) {' '  return parse_count("2") + n;' '}'
  write count_user.c 'static int helper(void) { return 0; }'
  # main.c defines parse_count itself (no circle through it), and
  # layout.c calls it there: the circle of runtime/cli.
  echo 'int parse_count(const char *s) { return s[0]; }' >>"$T/main.c"
  run "$GRAPH" "$T/main.c" "$T/layout.c" "$T/count_user.c"
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"circle: $T/layout.c -> $T/main.c -> $T/layout.c"* ]]
  [[ "$output" == *"$T/layout.c -> $T/main.c: uses parse_count"* ]]
  [[ "$output" == *"$T/main.c -> $T/layout.c: uses layout_dispatch"* ]]
  [[ "$output" == *"1 circle(s) among 3 C files"* ]]
}

@test "a header of one file, reached through another header, is a dependency" {
  # spank/: topology.c filled a struct that domains.h declared, while
  # domains.c calls topology.c.
  write domains.h '#include "step.h"' 'struct dom { int n; };' \
    'void dom_build(struct dom *d);'
  write domains.c '#include "domains.h"' '#include "topology.h"' \
    'void dom_build(struct dom *d) { topo_read(d); }'
  write topology.h '#include "domains.h"' 'int topo_read(struct dom *d);'
  write topology.c '#include "topology.h"' 'int topo_read(struct dom *d) {' \
    '  return d->n;' '}'
  write step.h 'struct step { int n; };'
  run "$GRAPH" "$T"/*.c "$T"/*.h
  echo "$output"
  [ "$status" -eq 1 ]
  [[ "$output" == *"circle: $T/domains.c -> $T/topology.c -> $T/domains.c"* ]]
  [[ "$output" == *"$T/topology.c -> $T/domains.c: includes topology.h -> domains.h"* ]]
  # The struct in a header of its own, with no .c of its name: no circle.
  write domain_types.h 'struct dom { int n; };'
  write domains.h '#include "domain_types.h"' 'void dom_build(struct dom *d);'
  write topology.h '#include "domain_types.h"' 'int topo_read(struct dom *d);'
  run "$GRAPH" "$T"/*.c "$T"/*.h
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"2 C files, 1 dependencies, no circle"* ]]
}

@test "a loop through several files is named once, with the files in it" {
  # runtime/lib: the key speller lived in exchange.c, above the files
  # that call it.
  write exchange.c 'int pmix_key(int e) { return e; }' \
    'int exchange(void) { return round_run() + blame(); }'
  write round.c 'int round_run(void) { return pmix_key(1) + bundle_key(); }'
  write bundle.c 'int bundle_key(void) { return pmix_key(2); }'
  write blame.c 'int blame(void) { return bundle_key() + pmix_key(3); }'
  write fence.c 'int fence(void) { return 0; }'
  run "$GRAPH" "$T"/*.c
  echo "$output"
  [ "$status" -eq 1 ]
  [ "$(grep -c 'circle:' <<<"$output")" -eq 1 ]
  [[ "$output" == *"circle: $T/blame.c -> $T/exchange.c -> $T/blame.c"* ]]
  [[ "$output" == *"(4 files depend on one another: $T/blame.c $T/bundle.c $T/exchange.c $T/round.c)"* ]]
  # The speller in a file below them all: no circle.
  write keys.c 'int pmix_key(int e) { return e; }'
  write exchange.c 'int exchange(void) { return round_run() + blame(); }'
  run "$GRAPH" "$T"/*.c
  echo "$output"
  [ "$status" -eq 0 ]
}

@test "what a file defines itself, struct tags, comments and assertions are no dependency" {
  write a.c 'static int shared_name(void) { return 0; }' \
    'struct b_table { int n; };' \
    '_Static_assert(LIMIT == 4, "a file-level assertion defines nothing");' \
    'int a_run(void) { struct b_table t = {0}; return shared_name() + t.n; }' \
    '/* b_only() in a comment */ const char *s = "b_only()";'
  write b.c 'int shared_name(void) { return a_run() + LIMIT; }' \
    'const struct b_table *b_table = 0;' \
    'int b_only(void) { return 1; }'
  run "$GRAPH" --graph "$T/a.c" "$T/b.c"
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$T/b.c -> $T/a.c: uses a_run"$'\n'* ]]
  [[ "$output" != *"$T/a.c -> $T/b.c"* ]]
}

@test "a macro names what its body names; a pointer to a function is a variable" {
  # HCG__CONFIG_READ (core/contract.h) calls hcg__config_read; libhcg's
  # testing sets hcgrt_pmix_gets_seen, which pmix.c defines.
  write contract.h '#define CONFIG_READ(cfg) \' '  config_read(cfg)'
  write config.c 'int config_read(const void *c) { return c == 0; }' \
    'void (*seen_hook)(int n);'
  write ctx.c '#include "contract.h"' \
    'int ctx_new(void) { seen_hook = 0; return CONFIG_READ(0); }'
  run "$GRAPH" --graph "$T"/*.c "$T"/*.h
  echo "$output"
  [ "$status" -eq 0 ]
  [[ "$output" == *"$T/ctx.c -> $T/config.c: uses config_read (in CONFIG_READ), uses seen_hook"$'\n'* ]]
}
