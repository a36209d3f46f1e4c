#!/bin/bash
# Sets up everything and runs the hcg demo on Debian 12, as root: a private
# Slurm cluster (munged, slurmctld, slurmd in a temporary directory, removed
# on exit), a MIMO layout launched with srun --hcg-layout, what each task
# got, a bad layout refused, libhcg forming every group with one PMIx
# exchange, and a tiny PyTorch model trained over hcg.torch's groups. Safe
# to run again.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
layout=${HCG_DEMO_LAYOUT:-'vision:tp=2,dp=2; llm:tp=2,dp=*,pp=2; llm/expert:ep=2,expt_dp=*,pp'}
tasks=${HCG_DEMO_TASKS:-12}

# Each set-up step names itself when it fails, with the lines that say why.
scripts/deps.sh || { echo "demo: step 'packages' (scripts/deps.sh) failed" >&2; exit 1; }
mkdir -p build
scripts/build.sh build > build/demo-build.log 2>&1 || {
  tail -n 40 build/demo-build.log >&2
  echo "demo: step 'build' failed (whole log: build/demo-build.log)" >&2
  exit 1
}
hcg=$src/build/runtime/hcg
hello=$src/build/runtime/hcg-hello

# shellcheck source=tests/cluster/cluster.sh
source tests/cluster/cluster.sh
trap 'cluster_stop' EXIT
trap 'exit 130' INT TERM
cluster_start "$src/build" > build/demo-cluster.log 2>&1 || {
  cat build/demo-cluster.log >&2
  echo "demo: step 'private Slurm cluster' failed (log: build/demo-cluster.log)" >&2
  exit 1
}
unset HCG_BUILD HCG_SRCDIR # the harness's own variables, not the tasks'
cd "$CLUSTER_DIR/tmp"

# Bold headings on a terminal only: no escape codes in a file or a pipe.
if [ -t 1 ]; then
  section() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
else
  section() { printf '\n== %s\n' "$*"; }
fi
show() { printf '$ %s\n' "$*"; }

section "1. The layout, checked with no cluster"
show "hcg check -n $tasks '$layout'"
"$hcg" check -n "$tasks" "$layout"

section "2. srun --hcg-layout: every task gets its coordinates (before it starts)"
show "srun -n $tasks --overcommit --mpi=pmix --hcg-layout='$layout' ..."
# shellcheck disable=SC2016 # expanded by each task's bash, not here
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" /bin/bash -c '
  # Walk the canonical layout (HCG_LAYOUT) so coordinates come in dim order.
  out=""
  IFS=";" read -ra items <<< "$HCG_LAYOUT"
  for item in "${items[@]}"; do
    head=${item%%:*} grid=${head%%[@/]*}
    [[ ",$HCG_GRIDS," == *",$grid,"* ]] || continue
    view=""; [[ $head == */* ]] && view=${head#*/}
    stem="HCG_${grid^^}${view:+_${view^^}}"
    out+="${view:-$grid}:"
    IFS="," read -ra dims <<< "${item#*:}"
    for d in "${dims[@]}"; do
      d=${d%%=*} var="${stem}_${d^^}_RANK"
      out+=" $d=${!var}"
    done
    out+="  "
  done
  printf "task %2d (PMIx rank %2s)  %s\n" "$HCG_RANK" "$PMIX_RANK" "$out"' |
  sort -k2 -n

section "3. A layout that does not fit is refused: no task program runs"
bad='vision:tp=2,dp=2; llm:tp=2,dp=3,pp=2'
show "srun -n $tasks --overcommit --hcg-layout='$bad' touch ran"
rm -f ran
rc=0
srun -n "$tasks" --overcommit --hcg-layout="$bad" touch ran > refused.log 2>&1 || rc=$?
cat refused.log
echo "srun exit status: $rc; marker written by a task: $([ -e ran ] && echo yes || echo no)"

section "4. libhcg: hcg-hello forms all of its groups with ONE PMIx exchange"
show "srun -n $tasks --overcommit --mpi=pmix --hcg-layout='$layout' hcg-hello"
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" "$hello" > hello.out 2> hello.err || true
grep -E '^group (0|8) ' hello.out | sort -k2,2n -k3,3 | head -n 24
echo "..."
grep -E '^comms 0 ' hello.out || true
grep -E '^fences' hello.out | sort -k2 -n | head -n 3
echo "(rank 0 formed $(grep -c '^group 0 ' hello.out) groups and rank 8 $(grep -c '^group 8 ' hello.out), each with one fence)"
if [ -s hello.err ]; then
  echo "stderr:" && head -n 5 hello.err
fi

section "5. PyTorch: hcg.torch.init() and a tiny model trained with tp=2, dp=2"
if /usr/bin/python3 -c 'import torch.distributed' 2> /dev/null; then
  ex=$src/contrib/python/examples/train_tiny.py
  show "srun -n 4 --overcommit --mpi=pmix --hcg-layout='tp=2,dp=*' python3 $ex"
  PYTHONPATH=$src/contrib/python HCG_LIBRARY=$src/build/runtime/.libs/libhcg.so.1 \
    timeout 300 srun -n 4 --overcommit --mpi=pmix --hcg-layout='tp=2,dp=*' \
    /usr/bin/python3 -B "$ex" 2>&1 | head -n 8 || true
  show "python3 $ex --reference   # the same model in one process"
  /usr/bin/python3 -B "$ex" --reference
else
  echo "(no torch for /usr/bin/python3: scripts/deps.sh installs python3-torch)"
fi

section "Done"
echo "The cluster in $CLUSTER_DIR is being stopped and removed."
