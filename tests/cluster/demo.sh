#!/bin/bash
# demo.sh - start the private Slurm cluster, run a MIMO layout with srun and
# print each task's place in the grids, then tear the cluster down.
#
#   tests/cluster/demo.sh BUILD_DIR [LAYOUT] [TASKS]     (root)
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/cluster/demo.sh BUILD_DIR [LAYOUT] [TASKS]}
layout=${2:-'vision:tp=2,dp=2; llm:tp=2,dp=*,pp=2; llm/expert:ep=2,expt_dp=*,pp'}
tasks=${3:-12}

# shellcheck source=tests/cluster/cluster.sh
source "$here/cluster.sh"
trap 'cluster_stop' EXIT
trap 'exit 130' INT TERM
cluster_start "$build" || exit 1
cd "$CLUSTER_DIR/tmp" || exit 1
unset HCG_BUILD HCG_SRCDIR

echo "\$ srun -n $tasks --overcommit --mpi=pmix --hcg-layout='$layout' ..."
# Each task prints its rank, the grids it is in and its coordinates.
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" /bin/bash -c '
  coords=$(env | grep -E "^HCG_.*_RANK=" | grep -v "^HCG_RANK=" |
    sed -E "s/^HCG_//; s/_RANK=/=/" | tr "\n" " ")
  printf "rank %2d  (PMIx %2s)  grids %-12s %s\n" "$HCG_RANK" "$PMIX_RANK" \
    "$HCG_GRIDS" "$coords"' | sort -k2 -n
status=${PIPESTATUS[0]}
echo
echo "canonical layout: $(srun -n "$tasks" --overcommit --hcg-layout="$layout" \
  printenv HCG_LAYOUT | head -n 1)"
exit "$status"
