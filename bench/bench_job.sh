#!/bin/bash
# bench_job.sh - real srun jobs of 64 tasks (--overcommit, gloo, real PMIx)
# under the default limit of 1024 open files, each forming every group of a
# 5-dim grid with an expert view three ways in the same job: hcg.torch,
# torch's new_group for every group (Megatron-LM's way), and, where torch
# has it, init_device_mesh beside hcg.torch.device_mesh (bench_job.py).
# Prints figures side by side, and what the busiest rank's store served;
# asserts nothing. Not run by CI (a job of 64 torch processes takes minutes
# on 2 CPUs).
#
#   bench/bench_job.sh BUILD_DIR [RUNS] [TASKS]
#
# Defaults: 1 run of 64 tasks, each job cut after BENCH_JOB_LIMIT seconds
# (1500; the steps that ended are still printed). Uses the cluster of $SLURM_CONF when set;
# else starts one with tests/cluster/cluster.sh. Needs /usr/bin/python3
# with torch. Without mpi_pmix (CLUSTER_PMIX=0, Debian's Slurm 26.05) the
# job meets at one store named by MASTER_ADDR/MASTER_PORT, hcg.torch's
# small-job path: the figures then say so.
set -eu

BUILD=$(cd "${1:?usage: bench_job.sh BUILD_DIR [RUNS] [TASKS]}" && pwd)
RUNS=${2:-1}
TASKS=${3:-64}
LAYOUT='llm:tp=2,gtp_remat=1,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp'
PY=/usr/bin/python3
NOFILE=1024
LIMIT=${BENCH_JOB_LIMIT:-1500}  # seconds a job may take

# shellcheck source=cluster.bash
source "$(dirname "${BASH_SOURCE[0]}")/cluster.bash"
bench_start "$BUILD"
TMP=$BENCH_TMP
SRC=$BENCH_SRC
bench_python_env "$BUILD"

rdv=(--mpi=pmix)
way="PMIx: every rank's own store, large groups through relays"
if [ "${CLUSTER_PMIX:-1}" = 0 ]; then
  rdv=()
  way="no mpi_pmix: one store at rank 0 (MASTER_ADDR), the small-job path"
fi
if [ "${BENCH_JOB_INIT:-}" = torch ]; then
  rdv=()
  way="BENCH_JOB_INIT=torch: torch's own TCPStore (MASTER_ADDR), new_group alone, no hcg store"
fi
echo "layout: $LAYOUT"
echo "tasks: $TASKS, --overcommit, gloo, ulimit -n $NOFILE; host: $(nproc) CPUs; $way"
for r in $(seq 1 "$RUNS"); do
  if [ ${#rdv[@]} = 0 ]; then
    export MASTER_ADDR=127.0.0.1 MASTER_PORT
    MASTER_PORT=$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  fi
  start=$(date +%s.%N)
  # The soft limit srun passes on to the tasks (Slurm propagates it).
  rc=0
  (ulimit -Sn "$NOFILE" && timeout "$LIMIT" srun -n "$TASKS" --overcommit "${rdv[@]}" \
    --hcg-layout="$LAYOUT" "$PY" -B "$SRC/bench/bench_job.py") > "$TMP/out" 2> "$TMP/err" || rc=$?
  wall=$(echo "$(date +%s.%N) $start" | awk '{printf "%.1f", $1 - $2}')
  echo "run $r (the job's wall time $wall s, torch's import included):"
  sed 's/^/  /' "$TMP/out"
  if [ -n "${BENCH_JOB_STACKS:-}" ] && grep -qE '^(Thread|Current thread) ' "$TMP/err"; then
    echo "  Python stacks of a step that ran over $BENCH_JOB_STACKS s (BENCH_JOB_STACKS), first and last rank:"
    grep -E '^(Thread|Current thread|  File)' "$TMP/err" | head -n 160 | sed 's/^/    /'
  fi
  if [ "$rc" = 124 ]; then
    echo "  the job did not end within $LIMIT s (BENCH_JOB_LIMIT): the steps above ended, the next did not"
    # Where new_group stood, and all of it at that rate: a projection.
    grep '^progress new_group' "$TMP/out" | tail -n 1 |
      awk '{ printf "  new_group: %d of %d groups in %.1f s; all %d at that rate: about %.0f s (projected, not measured)\n", $3, $5, $8, $5, $5 * $8 / $3 }'
  elif [ "$rc" != 0 ]; then
    echo "run $r: srun -n $TASKS failed ($rc):" >&2
    tail -n 30 "$TMP/err" >&2
    exit 1
  fi
done
echo "time STEP: the slowest rank's seconds from a barrier until every group the step"
echo "made has done one all-reduce. hcg = hcg.torch.new_collection (members alone);"
echo "new_group = torch.distributed.new_group for every group of every key, all ranks"
echo "(Megatron's way, last); mesh_torch = init_device_mesh(pp, dp, cp, tp); mesh_hcg ="
echo "hcg.torch.device_mesh of the same dims (fresh groups). stores: what the ranks'"
echo "own stores served before new_group (init included)."
