#!/bin/bash
# bench_srun.sh - what the hcg plugin adds to an srun: the wall time of
# `srun -n 64 --overcommit true` with and without --hcg-layout on the
# private test cluster (tests/cluster/cluster.sh). Prints figures; asserts
# nothing.
#
#   bench/bench_srun.sh BUILD_DIR [RUNS] [TASKS]     (root; default 21, 64)
#
# Two settings, each alternating the two variants so that drift hits both:
#   - standalone: each srun gets its own allocation (the cluster is idle
#     before each run, so no run waits for the previous job's clean-up);
#   - in one allocation: each srun is a step of one salloc allocation,
#     which removes the scheduler's share of the time.
# Both variants load the plugin (it is `required` in plugstack.conf); the
# difference is the plugin's work for a step that uses it: reading and
# checking the layout in srun, and setting every task's variables in
# slurmstepd.
set -u
here=$(cd "$(dirname "$0")" && pwd)

ms() { # runs "$@", prints its wall time in microseconds
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || {
    echo "bench_srun: '$*' failed" >&2
    exit 1
  }
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}

# Prints RUNS lines "without with" (microseconds). WAIT=1: wait for an idle
# cluster before each srun.
pairs() { # RUNS TASKS LAYOUT WAIT
  local runs=$1 tasks=$2 layout=$3 wait=$4 i a b
  local -a plain=(srun -n "$tasks" --overcommit true)
  local -a with=(srun -n "$tasks" --overcommit --hcg-layout="$layout" true)
  for i in 1 2 3; do # warm up: page cache, daemons' first steps
    "${plain[@]}" >/dev/null 2>&1
    "${with[@]}" >/dev/null 2>&1
  done
  for i in $(seq 1 "$runs"); do
    if [ $((i % 2)) = 1 ]; then
      [ "$wait" = 1 ] && cluster_wait_idle 30
      a=$(ms "${plain[@]}")
      [ "$wait" = 1 ] && cluster_wait_idle 30
      b=$(ms "${with[@]}")
    else
      [ "$wait" = 1 ] && cluster_wait_idle 30
      b=$(ms "${with[@]}")
      [ "$wait" = 1 ] && cluster_wait_idle 30
      a=$(ms "${plain[@]}")
    fi
    echo "$a $b"
  done
}

if [ "${1:-}" = --pairs ]; then # inside salloc, see below
  shift
  pairs "$@"
  exit 0
fi

build=${1:?usage: bench/bench_srun.sh BUILD_DIR [RUNS] [TASKS]}
runs=${2:-21}
tasks=${3:-64}
layout=${HCG_BENCH_LAYOUT:-'vision:tp=4,dp=2; llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'}

# shellcheck source=tests/cluster/cluster.sh
source "$here/../tests/cluster/cluster.sh"
trap 'cluster_stop' EXIT
trap 'exit 130' INT TERM
cluster_start "$build" || exit 1
cd "$CLUSTER_DIR/tmp" || exit 1
"$HCG" check -n "$tasks" "$layout" >/dev/null || exit 1

report() { # LABEL < pairs
  awk -v label="$1" '
    { a[NR] = $1; b[NR] = $2; r[NR] = $2 / $1 }
    function median(x, n,   i, j, t) {
      for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
        if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
      return x[int((n + 1) / 2)]
    }
    END {
      n = NR; ma = median(a, n); mb = median(b, n); mr = median(r, n)
      printf "%-20s without %7.1f ms   with %7.1f ms   ratio of medians %.3f   median ratio %.3f (%d runs)\n",
        label, ma / 1000, mb / 1000, mb / ma, mr, n
    }'
}

echo "srun -n $tasks --overcommit true, with and without --hcg-layout ($(nproc) CPUs, one node)"
echo "layout: $layout"
pairs "$runs" "$tasks" "$layout" 1 | report standalone
salloc -n "$tasks" --overcommit "$here/bench_srun.sh" --pairs "$runs" "$tasks" \
  "$layout" 0 2>/dev/null | report "in one allocation"
