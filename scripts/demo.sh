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
make -C build/bench bench_exchange >> build/demo-build.log 2>&1 || {
  tail -n 40 build/demo-build.log >&2
  echo "demo: step 'build bench_exchange' failed (log: build/demo-build.log)" >&2
  exit 1
}
hcg=$src/build/runtime/hcg
hello=$src/build/runtime/hcg-hello
naive=$src/build/bench/hcg-hello-naive # hcg-hello with the naive exchange
bench=$src/build/bench/bench_exchange

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
# Each section names itself and says in one line what it proves.
if [ -t 1 ]; then
  section() { printf '\n\033[1m== %s\033[0m\n%s' "$1" "${2:+$2$'\n'}"; }
else
  section() { printf '\n== %s\n%s' "$1" "${2:+$2$'\n'}"; }
fi
show() { printf '$ %s\n' "$*"; }
# The node takes a moment to be idle after a step's job ends; a srun started
# before then prints "srun: job N queued and waiting for resources".
srun() {
  cluster_wait_idle 30 || true
  command srun "$@"
}

section "1. The layout, checked with no cluster" \
  "proves: a layout is valid (or why not) for a task count before any job is submitted"
show "hcg check -n $tasks '$layout'"
"$hcg" check -n "$tasks" "$layout"

section "2. srun --hcg-layout: every task gets its coordinates (before it starts)" \
  "proves: the plugin gives each task its rank in every dim, as PMIx numbers the tasks"
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

section "3. A layout that does not fit is refused: no task program runs" \
  "proves: a bad layout stops the step in srun with one message and a caret; nothing runs"
bad='vision:tp=2,dp=2; llm:tp=2,dp=3,pp=2'
show "srun -n $tasks --overcommit --hcg-layout='$bad' touch ran"
rm -f ran
rc=0
srun -n "$tasks" --overcommit --hcg-layout="$bad" touch ran > refused.log 2>&1 || rc=$?
cat refused.log
echo "srun exit status: $rc; marker written by a task: $([ -e ran ] && echo yes || echo no)"

section "4. libhcg: hcg-hello forms all of its groups with ONE PMIx exchange" \
  "proves: one fence serves every group of a rank; one fence per group costs more fences and time"
show "srun -n $tasks --overcommit --mpi=pmix --hcg-layout='$layout' hcg-hello"
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" "$hello" > hello.out 2> hello.err || true
grep -E '^group (0|8) ' hello.out | sort -k2,2n -k3,3 | head -n 24
echo "..."
grep -E '^comms 0 ' hello.out || true
grep -E '^fences (0|8) ' hello.out | sort -k2 -n
echo "(rank 0 formed $(grep -c '^group 0 ' hello.out) groups and rank 8 $(grep -c '^group 8 ' hello.out), each with one fence)"
if [ -s hello.err ]; then
  echo "stderr:" && head -n 5 hello.err
fi
# The same groups with one fence per group key (the naive exchange of
# bench/, in hcg-hello-naive), then both ways timed by the exchange
# benchmark, interleaved in one job.
show "srun ... bench/hcg-hello-naive --quiet --no-comm --random-ids   # one fence per group key"
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" "$naive" \
  --quiet --no-comm --random-ids > naive.out 2> naive.err || true
grep -E '^fences (0|8) ' naive.out | sort -k2 -n
iters=5
show "srun ... bench_exchange $iters   # both ways, $iters times each, interleaved"
srun -n "$tasks" --overcommit --mpi=pmix --hcg-layout="$layout" "$bench" "$iters" \
  > bench.out 2> bench.err || true
# Per iteration the slowest rank (each rank times from a common barrier);
# then the median over the iterations.
median_ms() {
  awk -v v="$1" '$1 == "time" && $3 == v {
      if (!($4 in t) || $5 > t[$4]) t[$4] = $5 }
    END { for (i in t) print t[i] * 1000 }' bench.out | sort -n |
    awk '{a[NR] = $1} END {
      if (NR) printf "%.1f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
      else printf "?" }'
}
fences() { awk -v r="$2" '$1 == "fences" && $2 == r {print $3}' "$1"; }
printf '%-26s %18s %26s\n' "" "fences (rank 0/8)" "ms per rank (median of $iters)"
printf '%-26s %18s %26s\n' "one exchange (hcg)" \
  "$(fences hello.out 0)/$(fences hello.out 8)" "$(median_ms single)"
printf '%-26s %18s %26s\n' "one fence per group key" \
  "$(fences naive.out 0)/$(fences naive.out 8)" "$(median_ms naive)"
echo "(the private cluster's node has 2 CPUs shared by $tasks tasks; see bench/ for scaling)"
if [ -s naive.err ] || [ -s bench.err ]; then
  echo "stderr:" && cat naive.err bench.err | head -n 5
fi

section "5. PyTorch: hcg.torch.init() and a tiny model trained with tp=2, dp=2" \
  "proves: hcg.torch's groups train a model to the same losses as one process does"
if /usr/bin/python3 -c 'import torch.distributed' 2> /dev/null; then
  ex=$src/contrib/python/examples/train_tiny.py
  show "srun -n 4 --overcommit --mpi=pmix --hcg-layout='tp=2,dp=*' python3 $ex"
  rc=0
  PYTHONPATH=$src/contrib/python HCG_LIBRARY=$src/build/runtime/.libs/libhcg.so.1 \
    timeout 300 srun -n 4 --overcommit --mpi=pmix --hcg-layout='tp=2,dp=*' \
    /usr/bin/python3 -B "$ex" > torch.out 2>&1 || rc=$?
  head -n 20 torch.out
  show "python3 $ex --reference   # the same model in one process"
  /usr/bin/python3 -B "$ex" --reference | tee torch.ref
  # The demo proves what it says or fails: the same losses, step by step.
  if [ "$rc" -ne 0 ] || [ "$(grep -c '^step ' torch.out)" -ne "$(grep -c '^step ' torch.ref)" ] ||
    ! paste -d' ' <(grep '^step ' torch.out) torch.ref | awk '
      { d = $4 - $8; if (d < 0) d = -d; if (d > 1e-12 * ($8 < 0 ? -$8 : $8)) bad = 1 }
      END { exit bad }'; then
    echo "demo: step 'PyTorch' failed: srun exited $rc, or its losses are not the one-process losses" >&2
    exit 1
  fi
  echo "(the same losses, step by step)"
else
  echo "(no torch for /usr/bin/python3: scripts/deps.sh installs python3-torch)"
fi

section "Done"
echo "The cluster in $CLUSTER_DIR is being stopped and removed."
