#!/bin/sh
# Builds the libFuzzer target for the layout parser and validator with
# clang-14 (AddressSanitizer + UBSan) and runs it for a bounded time.
#
#   tests/fuzz/run-fuzz.sh [SECONDS] [WORKERS]     (default 60 s, 1 worker)
#
# The seed corpus in tests/fuzz/corpus is copied, never modified; new inputs
# go to a scratch directory. Exits non-zero on any crash, leak or invariant
# failure, leaving the reproducer in that directory.
set -eu
seconds=${1:-60}
workers=${2:-1}
# Inputs up to the parser's own hard limit (64 KiB), so the size checks at
# the limit are fuzzed too.
max_len=${HCG_FUZZ_MAX_LEN:-65536}
src=$(cd "$(dirname "$0")/../.." && pwd)
out=${HCG_FUZZ_DIR:-${TMPDIR:-/tmp}/hcg-fuzz}
CC=${FUZZ_CC:-clang-14}
mkdir -p "$out/corpus"

command -v "$CC" >/dev/null || { echo "run-fuzz: $CC not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }

flags="-std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
  -Wall -Wextra -Werror -I$src/runtime"
# shellcheck disable=SC2086
$CC $flags -o "$out/fuzz_layout" "$src/tests/fuzz/fuzz_layout.c" "$src"/runtime/core/*.c

cp -n "$src"/tests/fuzz/corpus/* "$out/corpus/" 2>/dev/null || true
cd "$out"
echo "run-fuzz: $seconds s, $workers worker(s), inputs up to $max_len bytes, corpus $(find corpus -type f | wc -l) inputs"
status=0
if [ "$workers" -gt 1 ]; then
  ./fuzz_layout -max_total_time="$seconds" -dict="$src/tests/fuzz/layout.dict" \
    -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -jobs="$workers" -workers="$workers" corpus > fuzz.log 2>&1 || status=$?
  cat fuzz-*.log > fuzz.log.all 2>/dev/null || true
  log=fuzz.log.all
else
  ./fuzz_layout -max_total_time="$seconds" -dict="$src/tests/fuzz/layout.dict" \
    -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    corpus > fuzz.log 2>&1 || status=$?
  log=fuzz.log
fi
execs=$(grep -h 'stat::number_of_executed_units' "$log" | awk '{s += $2} END {print s + 0}')
echo "run-fuzz: $execs executions, exit status $status"
if [ "$status" -ne 0 ]; then
  tail -n 60 "$log" >&2
  exit "$status"
fi
