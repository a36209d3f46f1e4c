#!/bin/bash
# bench_exchange.sh - libhcg's id exchange against its floor and its naive
# form, in one job per task count, interleaved: a bare PMIx round (put 128
# bytes, commit, fence, get 128 bytes), hcg_exchange_ids for the whole
# collection of a 5-dim grid with an expert view (one fence), the same with
# one fence per group key, and the fence alone. On the private cluster's
# one node (2 CPUs): 8 to 128 tasks oversubscribe it (--overcommit), so
# the figures are those of a loaded node, and the higher counts mostly
# measure the CPU share. Prints figures; asserts nothing.
#
#   bench/bench_exchange.sh BUILD_DIR [RUNS] [ITERATIONS] [TASKS...]
#
# Defaults: 3 runs (srun steps) of 10 iterations at 8, 32, 64 and 128
# tasks. Uses the cluster of $SLURM_CONF when set (tests/cluster/run.sh, or
# a cluster started by hand); else starts one (bench/cluster.bash).
#
# One iteration of one variant takes the slowest task's time (each task
# measures from a common barrier). Reported per task count: the median of
# each variant with its 95% confidence interval, the median of the
# per-iteration ratios single/bare and naive/single (paired: the variants
# of an iteration run back to back), and the per-unit costs
# doc/scaling.md uses: a fence, and an exchange's time per get beyond the
# bare round. $HCG_BENCH_SUMMARY, when set, receives the main figures.
set -eu

BUILD=$(cd "${1:?usage: bench_exchange.sh BUILD_DIR [RUNS] [ITERATIONS] [TASKS...]}" && pwd)
RUNS=${2:-3}
ITERS=${3:-10}
shift $(($# < 3 ? $# : 3))
COUNTS=${*:-8 32 64 128}
LAYOUT='llm:tp=2,gtp_remat=1,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp'

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
make -s -C "$BUILD/bench" bench_exchange >/dev/null
PROG=$BUILD/bench/bench_exchange
bench_start "$BUILD"
TMP=$BENCH_TMP

ms() { awk -v v="$1" '$3 == v {print $4 * 1000}' "$2"; }
ci() { bench_ci | awk '{printf "%.2f [%.2f-%.2f]", $1, $2, $3}'; }

echo "layout: $LAYOUT"
echo "runs: $RUNS x $ITERS iterations per task count; host: $(nproc) CPUs," \
  "load $(cut -d' ' -f1-3 /proc/loadavg) at start; --overcommit (oversubscribed)"
echo "milliseconds, median [95% CI] of the slowest task per iteration"
printf '%5s %6s %21s %21s %21s %21s %9s %9s %9s %8s\n' tasks groups fence_ms bare_ms \
  single_ms naive_ms single/bare naive/single us/get gets
for n in $COUNTS; do
  : >"$TMP/all.$n"
  for r in $(seq 1 "$RUNS"); do
    timeout 600 srun -n "$n" --overcommit --mpi=pmix --hcg-layout="$LAYOUT" \
      "$PROG" "$ITERS" >"$TMP/run.$n.$r" 2>"$TMP/err.$n.$r" || {
      echo "srun -n $n failed:" >&2
      cat "$TMP/err.$n.$r" >&2
      exit 1
    }
    awk -v r="$r" '$1 == "time" {print r, $0}' "$TMP/run.$n.$r" >>"$TMP/all.$n"
  done
  # Slowest task per (run, iteration, variant): "RUN ITER VARIANT SECONDS".
  awk '{k = $1 " " $5 " " $4; if (!(k in m) || $6 > m[k]) m[k] = $6}
       END {for (k in m) print k, m[k]}' "$TMP/all.$n" >"$TMP/max.$n"
  ratio() { # A B: median over iterations of A/B
    awk -v a="$1" -v b="$2" '$3 == a || $3 == b {t[$1 " " $2, $3] = $4; it[$1 " " $2] = 1}
      END {for (k in it) if (t[k, a] && t[k, b]) print t[k, a] / t[k, b]}' "$TMP/max.$n" | bench_median
  }
  groups=$(awk '$1 == "keys" && $2 == 0 {print $3}' "$TMP/run.$n.1")
  # PMIx gets of one single exchange (the warm-up), the most of any task.
  gets=$(awk '$1 == "keys" {if ($7 > m) m = $7} END {print m + 0}' "$TMP/run.$n.1")
  bare=$(ms bare "$TMP/max.$n" | bench_median)
  single=$(ms single "$TMP/max.$n" | bench_median)
  per_get=$(awk -v s="$single" -v b="$bare" -v g="$gets" 'BEGIN {print (g > 1 ? (s - b) * 1000 / (g - 1) : 0)}')
  printf '%5d %6s %21s %21s %21s %21s %8.2fx %8.2fx %9.0f %8s\n' "$n" "$groups" \
    "$(ms fence "$TMP/max.$n" | ci)" "$(ms bare "$TMP/max.$n" | ci)" \
    "$(ms single "$TMP/max.$n" | ci)" "$(ms naive "$TMP/max.$n" | ci)" \
    "$(ratio single bare)" "$(ratio naive single)" "$per_get" "$gets"
  if [ -n "${HCG_BENCH_SUMMARY:-}" ]; then
    {
      printf 'exchange n=%d: hcg / bare round\t%.2fx\tgoal <= 1.25x\n' "$n" "$(ratio single bare)"
      printf 'exchange n=%d: fence per group / hcg\t%.2fx\tgoal >= 8x\n' "$n" "$(ratio naive single)"
      printf 'exchange n=%d: one fence\t%.2f ms\t\n' "$n" "$(ms fence "$TMP/max.$n" | bench_median)"
    } >>"$HCG_BENCH_SUMMARY"
  fi
done
echo "us/get: (single - bare) / (gets - 1), the time each get beyond the bare"
echo "round's one adds to the exchange; gets: PMIx gets of the busiest task (one per"
echo "distinct leader of its groups in a job without relays)"
