#!/bin/bash
# bench_mesh.sh - one N-D DeviceMesh (pp, dp, cp, tp) made by
# hcg.torch.device_mesh (hcg's groups, made by their members alone, then
# DeviceMesh.from_group) and by torch's init_device_mesh (every dim's groups
# made with the whole world), the same shape and names, side by side in one
# run, gloo on CPU, on the private cluster with --overcommit. Prints
# figures; asserts nothing. Not run by CI.
#
#   bench/bench_mesh.sh BUILD_DIR [RUNS] [TASKS...]
#
# Defaults: 3 runs at 8, 16 and 32 tasks. Uses the cluster of $SLURM_CONF
# when set; else starts one with tests/cluster/cluster.sh. Needs
# /usr/bin/python3 with a torch that has DeviceMesh.from_group (2.4+).
# Without mpi_pmix (CLUSTER_PMIX=0, Debian's Slurm 26.05) the store is
# named by MASTER_ADDR/MASTER_PORT.
set -eu

BUILD=$(cd "${1:?usage: bench_mesh.sh BUILD_DIR [RUNS] [TASKS...]}" && pwd)
RUNS=${2:-3}
shift $(($# < 2 ? $# : 2))
COUNTS=${*:-8 16 32}
LAYOUT='llm:tp=2,cp=2,dp=*,pp=2'
PY=/usr/bin/python3

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
bench_start "$BUILD"
TMP=$BENCH_TMP
SRC=$BENCH_SRC
bench_python_env "$BUILD"

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

echo "layout: $LAYOUT; torch $("$PY" -c 'import torch; print(torch.__version__)')"
echo "runs: $RUNS per task count and way; host: $(nproc) CPUs, --overcommit, gloo"
printf '%6s %10s %10s %10s %8s\n' tasks mesh hcg_s torch_s ratio
for n in $COUNTS; do
  for mode in hcg torch; do : > "$TMP/$mode.$n"; done
  for _ in $(seq 1 "$RUNS"); do
    for mode in hcg torch; do
      rdv=(--mpi=pmix)
      if [ "${CLUSTER_PMIX:-1}" = 0 ]; then
        rdv=()
        export MASTER_ADDR=127.0.0.1 MASTER_PORT
        MASTER_PORT=$(free_port)
      fi
      timeout 900 srun -n "$n" --overcommit "${rdv[@]}" --hcg-layout="$LAYOUT" \
        "$PY" -B "$SRC/bench/bench_mesh.py" "$mode" > "$TMP/out" 2> "$TMP/err" || {
        echo "srun -n $n ($mode) failed:" >&2
        tail -n 20 "$TMP/err" >&2
        exit 1
      }
      grep '^time' "$TMP/out" >> "$TMP/$mode.$n"
    done
  done
  h=$(awk '{print $3}' "$TMP/hcg.$n" | bench_median)
  t=$(awk '{print $3}' "$TMP/torch.$n" | bench_median)
  printf '%6d %10s %10.3f %10.3f %7.1fx\n' "$n" "$(awk 'NR == 1 {print $5}' "$TMP/hcg.$n")" \
    "$h" "$t" "$(echo "$t $h" | awk '{print $1 / $2}')"
  for mode in hcg torch; do
    printf '%6s %s parts of the slowest rank, SECONDS/CALLS, each run: %s\n' '' "$mode" \
      "$(awk '{printf "%s[%s] ", (NR > 1 ? " " : ""), substr($0, index($0, "parts ") + 6)}' "$TMP/$mode.$n")"
  done
done
echo "mesh: pp x dp x cp x tp; hcg_s: hcg.torch.device_mesh; torch_s: init_device_mesh;"
echo "ratio: torch_s / hcg_s. Each time is the slowest rank's, the median of RUNS runs,"
echo "the two ways interleaved. parts: meet = the members' meetings at the store, make ="
echo "torch's group construction (gloo's connections), new_group = init_device_mesh's calls."
echo "On gloo expect a ratio near 1.0x: each rank connects the same groups either way (its"
echo "own, one per mesh dim); init_device_mesh's extra new_group calls, where the rank is no"
echo "member, return at once (doc/torch.md, Benchmark)."
