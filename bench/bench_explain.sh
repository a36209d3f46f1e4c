#!/bin/sh
# Wall time of `hcg explain` (--format json and text) at several world
# sizes: the median of several runs, the output's size, peak memory, and
# the time per rank (the output lists every rank, so it grows with the
# world by design: text with --full, since plain text summarizes a big
# layout). Prints figures; asserts nothing.
#   bench/bench_explain.sh PATH_TO_HCG [RUNS] [WORLD...]
# Defaults: 5 runs at 1024, 16384 and 65536 ranks. $HCG_BENCH_SUMMARY,
# when set, receives the text format's time per rank at each size.
set -eu
hcg=${1:?usage: bench_explain.sh PATH_TO_HCG [RUNS] [WORLD...]}
runs=${2:-5}
shift $(($# < 2 ? $# : 2))
worlds=${*:-1024 16384 65536}
layout='llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8;llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp'
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "hcg explain, layout '$layout', median of $runs runs"
printf '%8s %6s %10s %12s %12s %10s\n' world format median_s output_KiB peak_RSS_KiB us/rank
for world in $worlds; do
  for fmt in json text; do
    : >"$tmp/times"
    for _ in $(seq "$runs"); do
      start=$(date +%s.%N)
      "$hcg" explain -n "$world" "$layout" --format "$fmt" --full >"$tmp/out"
      end=$(date +%s.%N)
      awk -v a="$start" -v b="$end" 'BEGIN {printf "%.6f\n", b - a}' >>"$tmp/times"
    done
    size=$(wc -c <"$tmp/out")
    rss=$(/usr/bin/time -f %M "$hcg" explain -n "$world" "$layout" --format "$fmt" --full 2>&1 >/dev/null | tail -n 1)
    med=$(median <"$tmp/times")
    per=$(awk -v m="$med" -v w="$world" 'BEGIN {printf "%.2f", m * 1e6 / w}')
    printf '%8d %6s %10.3f %12d %12s %10s\n' "$world" "$fmt" "$med" $((size / 1024)) "$rss" "$per"
  done
  if [ -n "${HCG_BENCH_SUMMARY:-}" ]; then
    printf 'hcg explain -n %d --format text\t%s us/rank\t\n' "$world" "$per" >>"$HCG_BENCH_SUMMARY"
  fi
done
