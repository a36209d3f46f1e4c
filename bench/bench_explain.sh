#!/bin/sh
# Wall time of `hcg explain --format json` (and text) at 2^16 ranks: the
# median of several runs, the output's size, and peak memory.
#   bench/bench_explain.sh PATH_TO_HCG [RUNS]
set -eu
hcg=${1:?usage: bench_explain.sh PATH_TO_HCG [RUNS]}
runs=${2:-5}
layout='llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8;llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp'
world=65536
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

for fmt in json text; do
  : > "$tmp/times"
  for _ in $(seq "$runs"); do
    start=$(date +%s.%N)
    "$hcg" explain -n "$world" "$layout" --format "$fmt" > "$tmp/out"
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN {printf "%.6f\n", b - a}' >> "$tmp/times"
  done
  size=$(wc -c < "$tmp/out")
  rss=$(/usr/bin/time -f %M "$hcg" explain -n "$world" "$layout" --format "$fmt" 2>&1 >/dev/null | tail -n 1)
  printf 'hcg explain --format %-4s at %d ranks: median %.3f s over %d runs, %d MiB of output, peak RSS %s KiB\n' \
    "$fmt" "$world" "$(median < "$tmp/times")" "$runs" $((size / 1048576)) "$rss"
done
