#!/bin/sh
# Builds the libFuzzer targets with clang (AddressSanitizer + UBSan) and
# runs them for a bounded total time:
#   fuzz_layout   the layout parser, the validator and what they compute
#   fuzz_args     the plugin's plugstack.conf arguments (spank/args.c)
#   fuzz_forward  the hand-over slurmstepd decodes (spank/forward.c)
#   fuzz_domains  what slurmstepd reads to learn NVLink domains (spank/domains.c,
#                 topology.c, step.c, order.c, hostlist.c)
#   fuzz_megatron Megatron's arguments to a layout (runtime/core/megatron.c)
#   fuzz_plan     the variables a step's environment holds against a node's
#                 plan (spank/taskenv.c, hcgp_plan_share)
#
#   tests/fuzz/run-fuzz.sh [SECONDS] [WORKERS] [TARGET...]
#       (default 60 s in all, 1 worker, every target)
#
# The time is split: half to the layout (the largest input space), the rest
# evenly to the others (evenly among all when the layout is not run). Each target's seed corpus (tests/fuzz/corpus*) is
# copied, never modified; new inputs go to a scratch directory. Exits
# non-zero on any crash, leak or invariant failure, leaving the reproducer
# in that directory.
set -eu
seconds=${1:-60}
workers=${2:-1}
if [ $# -ge 2 ]; then shift 2; else shift $#; fi
targets=${*:-fuzz_layout fuzz_args fuzz_forward fuzz_domains fuzz_megatron fuzz_plan}
# Inputs up to the parser's own hard limit (64 KiB), so the size checks at
# the limit are fuzzed too (fuzz_forward: plus its 4 task bytes and header).
max_len=${HCG_FUZZ_MAX_LEN:-65536}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${HCG_FUZZ_DIR:-${TMPDIR:-/tmp}/hcg-fuzz}
CC=${FUZZ_CC:-clang}
fz=$src/tests/fuzz
mkdir -p "$out"

command -v "$CC" >/dev/null || { echo "run-fuzz: $CC not found (apt-get install clang libclang-rt-dev)" >&2; exit 1; }

# The language flags of every build, as configure.ac defines them.
std=$(sed -n 's/^HCG_STD_CFLAGS="\(.*\)"$/\1/p' "$src/configure.ac")
[ -n "$std" ] || { echo "run-fuzz: no HCG_STD_CFLAGS in configure.ac" >&2; exit 1; }
flags="$std -g -O1 -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -Wall -Wextra -Werror -I$src/runtime -I$src/spank"

ntargets=$(echo "$targets" | wc -w)
total=0
status=0
for t in $targets; do
  case $t in
    fuzz_layout) extra="" corpus=corpus dict=$fz/layout.dict len=$max_len ;;
    fuzz_args) extra=$src/spank/args.c corpus=corpus_args dict=$fz/args.dict len=4096 ;;
    fuzz_domains) extra="$src/spank/domains.c $src/spank/topology.c $src/spank/step.c $src/spank/order.c $src/spank/hostlist.c" corpus=corpus_domains dict=$fz/domains.dict len=65536 ;;
    fuzz_megatron) extra="" corpus=corpus_megatron dict=$fz/megatron.dict len=4096 ;;
    fuzz_plan) extra=$src/spank/taskenv.c corpus=corpus_plan dict=$fz/plan.dict len=4096 ;;
    fuzz_forward)
      extra=$src/spank/forward.c corpus=corpus_forward len=$((max_len + 64))
      dict=$out/forward.dict
      cat "$fz/layout.dict" "$fz/forward.dict" >"$dict" ;;
    *) echo "run-fuzz: no target $t" >&2; exit 2 ;;
  esac
  case " $targets " in
    *" fuzz_layout "*) has_layout=1 ;;
    *) has_layout=0 ;;
  esac
  if [ "$has_layout" -eq 0 ] || [ "$ntargets" -eq 1 ]; then
    secs=$((seconds / ntargets))
  elif [ "$t" = fuzz_layout ]; then
    secs=$((seconds / 2))
  else
    secs=$(((seconds - seconds / 2) / (ntargets - 1)))
  fi
  [ "$secs" -ge 1 ] || secs=1
  # shellcheck disable=SC2086
  $CC $flags -o "$out/$t" "$fz/$t.c" $extra "$src"/runtime/core/*.c
  mkdir -p "$out/$t.corpus"
  cp -n "$fz/$corpus"/* "$out/$t.corpus/" 2>/dev/null || true
  echo "run-fuzz: $t: $secs s, $workers worker(s), inputs up to $len bytes, corpus $(find "$out/$t.corpus" -type f | wc -l) inputs"
  rc=0
  log=$out/$t.log
  if [ "$workers" -gt 1 ]; then
    (cd "$out" && "./$t" -max_total_time="$secs" -dict="$dict" -max_len="$len" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -jobs="$workers" -workers="$workers" "$t.corpus" >"$log" 2>&1) || rc=$?
    cat "$out"/fuzz-*.log >"$log.all" 2>/dev/null || true
    rm -f "$out"/fuzz-*.log
    log=$log.all
  else
    (cd "$out" && "./$t" -max_total_time="$secs" -dict="$dict" -max_len="$len" \
      -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      "$t.corpus" >"$log" 2>&1) || rc=$?
  fi
  execs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
  cov=$(grep -ho 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  echo "run-fuzz: $t: $execs executions, ${cov:-no coverage line}, exit status $rc"
  total=$((total + execs))
  if [ "$rc" -ne 0 ]; then
    tail -n 60 "$log" >&2
    status=$rc
  fi
done
echo "run-fuzz: $total executions in all, exit status $status"
exit "$status"
