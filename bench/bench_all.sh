#!/bin/bash
# bench_all.sh - every benchmark (`make bench`), then one table of their
# main figures. The local ones always run: bench_rank (per-rank cost),
# bench_plugin (the plugin's per-task work), bench_explain (several sizes).
# As root, the private-cluster ones follow: bench_exchange, bench_srun and,
# where /usr/bin/python3 has torch, bench_torch. HCG_BENCH_QUICK=1 runs the
# cluster ones with few rounds (figures then have wide intervals).
#
#   bench/bench_all.sh BUILD_DIR
#
# Each benchmark appends "FIGURE<TAB>VALUE<TAB>GOAL" lines to
# $HCG_BENCH_SUMMARY; the table is those lines.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: bench_all.sh BUILD_DIR}" && pwd)
HCG_BENCH_SUMMARY=$(mktemp)
export HCG_BENCH_SUMMARY
trap 'rm -f "$HCG_BENCH_SUMMARY"' EXIT
quick=${HCG_BENCH_QUICK:-0}

make -s -C "$build/bench" bench_rank bench_plugin >/dev/null
"$build/bench/bench_rank"
echo
"$build/bench/bench_plugin"
echo
"$here/bench_explain.sh" "$build/runtime/hcg"
if [ "$(id -u)" = 0 ]; then
  echo
  if [ "$quick" = 1 ]; then
    "$here/bench_exchange.sh" "$build" 1 10 8 32 64
    echo
    "$here/bench_srun.sh" "$build" 10
  else
    "$here/bench_exchange.sh" "$build"
    echo
    "$here/bench_srun.sh" "$build"
  fi
  if /usr/bin/python3 -c 'import torch' 2>/dev/null && [ "$quick" != 1 ]; then
    echo
    "$here/bench_torch.sh" "$build"
  fi
else
  echo "(not root: the cluster benchmarks bench_exchange, bench_srun and bench_torch were skipped)"
fi

echo
echo "Summary ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
awk -F'\t' '{printf "  %-46s %-28s %s\n", $1, $2, $3}' "$HCG_BENCH_SUMMARY"
