#!/bin/bash
# bench_torch.sh - one rank's whole collection of torch process groups (a
# 5-dim grid with an expert view, plus the embedding groups), made by
# hcg.torch (members only) and the way Megatron-LM makes them (every rank
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
unset HCG_BUILD HCG_SRCDIR
export PYTHONPATH=$SRC/contrib/python HCG_LIBRARY=$BUILD/runtime/.libs/libhcg.so.0

median() { bench_median; }

echo "layout: $LAYOUT"
echo "runs: $RUNS per task count and way; host: $(nproc) CPUs, --overcommit, gloo"
printf '%6s %10s %12s %10s %12s %10s %8s\n' tasks hcg_s hcg_members megatron_s mgt_calls groups ratio
for n in $COUNTS; do
  : > "$TMP/hcg.$n"
  : > "$TMP/megatron.$n"
  for r in $(seq 1 "$RUNS"); do
    for mode in hcg megatron; do
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
  m=$(awk '{print $3}' "$TMP/megatron.$n" | median)
  printf '%6d %10.3f %12s %10.3f %12s %10s %7.1fx\n' "$n" "$h" \
    "$(awk 'NR == 1 {print $9}' "$TMP/hcg.$n")" "$m" \
    "$(awk 'NR == 1 {print $7}' "$TMP/megatron.$n")" \
    "$(awk 'NR == 1 {print $5}' "$TMP/hcg.$n")" "$(echo "$m $h" | awk '{print $1 / $2}')"
done
echo "hcg_members: members of rank 0's groups (what its work follows);"
echo "mgt_calls: new_group calls every rank makes the Megatron way"
