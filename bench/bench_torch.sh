#!/bin/bash
# bench_torch.sh - one rank's whole collection of torch process groups (a
# 5-dim grid with an expert view, plus the embedding groups), made by
# hcg.torch (members only; also one group per key) and the way Megatron-LM makes them (every rank
# calls new_group for every group), side by side in one run, gloo on CPU, on
# the private cluster with --overcommit. Prints figures; asserts nothing.
#
#   bench/bench_torch.sh BUILD_DIR [RUNS] [TASKS...]
#
# Defaults: 3 runs at 8, 16 and 32 tasks (64 is possible; Megatron's way
# then takes minutes on 2 cores). Uses the cluster of $SLURM_CONF when set;
# else starts one with tests/cluster/cluster.sh. Needs /usr/bin/python3 with
# torch (scripts/deps.sh).
set -eu

BUILD=$(cd "${1:?usage: bench_torch.sh BUILD_DIR [RUNS] [TASKS...]}" && pwd)
RUNS=${2:-3}
shift $(($# < 2 ? $# : 2))
COUNTS=${*:-8 16 32}
LAYOUT='llm:tp=2,gtp_remat=1,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp'
PY=/usr/bin/python3

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
bench_start "$BUILD"
TMP=$BENCH_TMP
SRC=$BENCH_SRC
bench_python_env "$BUILD"

median() { bench_median; }

echo "layout: $LAYOUT"
echo "runs: $RUNS per task count and way; host: $(nproc) CPUs, --overcommit, gloo"
printf '%6s %9s %7s %10s %10s %10s %10s %7s %7s\n' tasks keys hcg_pgs hcg_s per_key_s megatron_s mgt_calls ratio ratio_pk
for n in $COUNTS; do
  for mode in hcg hcg_per_key megatron; do : > "$TMP/$mode.$n"; done
  for r in $(seq 1 "$RUNS"); do
    for mode in hcg hcg_per_key megatron; do
      timeout 900 srun -n "$n" --overcommit --mpi=pmix --hcg-layout="$LAYOUT" \
        "$PY" -B "$SRC/bench/bench_torch.py" "$mode" > "$TMP/out" 2> "$TMP/err" || {
        echo "srun -n $n ($mode) failed:" >&2
        tail -n 20 "$TMP/err" >&2
        exit 1
      }
      grep '^time' "$TMP/out" >> "$TMP/$mode.$n"
    done
  done
  h=$(awk '{print $3}' "$TMP/hcg.$n" | median)
  k=$(awk '{print $3}' "$TMP/hcg_per_key.$n" | median)
  m=$(awk '{print $3}' "$TMP/megatron.$n" | median)
  printf '%6d %9s %7s %10.3f %10.3f %10.3f %10s %6.1fx %6.1fx\n' "$n" \
    "$(awk 'NR == 1 {print $5}' "$TMP/hcg.$n")" "$(awk 'NR == 1 {print $7}' "$TMP/hcg.$n")" \
    "$h" "$k" "$m" "$(awk 'NR == 1 {print $7}' "$TMP/megatron.$n")" \
    "$(echo "$m $h" | awk '{print $1 / $2}')" "$(echo "$m $k" | awk '{print $1 / $2}')"
done
echo "keys: group keys holding rank 0; hcg_pgs: process groups rank 0 makes (keys"
echo "holding the same ranks share one); per_key_s: hcg with share_equal=False (one"
echo "group per key); mgt_calls: new_group calls every rank makes the Megatron way;"
echo "ratio: megatron_s / hcg_s; ratio_pk: megatron_s / per_key_s. Each time is the"
echo "median of RUNS runs, the runs of the three ways interleaved."
