#!/bin/bash
# bench_exchange.sh - time libhcg's id exchange for the whole collection of
# a 5-dim grid with an expert view, one fence for the set against one fence
# per group key, at several task counts (--overcommit) on the private
# cluster. Prints figures; asserts nothing.
#
#   bench/bench_exchange.sh BUILD_DIR [RUNS] [ITERATIONS] [TASKS...]
#
# Defaults: 3 runs (srun steps) of 10 iterations at 8, 32 and 64 tasks.
# Uses the cluster of $SLURM_CONF when set (tests/cluster/run.sh, or a
# cluster started by hand); else starts one with tests/cluster/cluster.sh.
#
# One iteration of one variant takes the slowest task's time (each task
# measures from a common barrier). Reported per task count: the median time
# of each variant, the median of the per-iteration ratios naive/single, and
# the fences a naive exchange makes.
set -eu

BUILD=$(cd "${1:?usage: bench_exchange.sh BUILD_DIR [RUNS] [ITERATIONS] [TASKS...]}" && pwd)
RUNS=${2:-3}
ITERS=${3:-10}
shift $(($# < 3 ? $# : 3))
COUNTS=${*:-8 32 64}
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAYOUT='llm:tp=2,gtp_remat=1,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp'

make -s -C "$BUILD/bench" bench_exchange >/dev/null
PROG=$BUILD/bench/bench_exchange

TMP=$(mktemp -d)
OWN_CLUSTER=0
cleanup() {
  rm -rf "$TMP"
  if [ "$OWN_CLUSTER" = 1 ]; then cluster_stop; fi
}
trap cleanup EXIT
if [ -z "${SLURM_CONF:-}" ]; then
  # shellcheck source=../tests/cluster/cluster.sh
  source "$SRC/tests/cluster/cluster.sh"
  cluster_start "$BUILD"
  OWN_CLUSTER=1
fi

median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "layout: $LAYOUT"
echo "runs: $RUNS x $ITERS iterations per task count; host: $(nproc) CPUs, --overcommit"
printf '%6s %8s %12s %12s %10s %14s\n' tasks groups single_ms naive_ms ratio naive_fences
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
  # Slowest task per (run, iteration, variant).
  awk '{k = $1 " " $5 " " $4; if (!(k in m) || $6 > m[k]) m[k] = $6}
       END {for (k in m) print k, m[k]}' "$TMP/all.$n" >"$TMP/max.$n"
  single=$(awk '$3 == "single" {print $4 * 1000}' "$TMP/max.$n" | median)
  naive=$(awk '$3 == "naive" {print $4 * 1000}' "$TMP/max.$n" | median)
  ratio=$(awk '{t[$1 " " $2, $3] = $4; it[$1 " " $2] = 1}
               END {for (k in it) print t[k, "naive"] / t[k, "single"]}' "$TMP/max.$n" | median)
  groups=$(awk '$1 == "keys" && $2 == 0 {print $3}' "$TMP/run.$n.1")
  # Fences of one naive exchange (one per key of the set, the same on all):
  # the total is 1 warm-up + ITERS x (2 barriers + 1 single + K naive).
  nf=$(awk '$1 == "keys" && $2 == 0 {print $5}' "$TMP/run.$n.1")
  nf=$(((nf - 1 - ITERS * 3) / ITERS))
  printf '%6d %8s %12.2f %12.2f %10.2f %14d\n' "$n" "$groups" "$single" "$naive" "$ratio" "$nf"
done
