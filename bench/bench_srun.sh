#!/bin/bash
# bench_srun.sh - what the hcg plugin adds to an srun: the wall time of
# `srun -n 64 --overcommit true` on the private test cluster in four
# variants, interleaved round by round (the order rotates, so drift and
# load hit all four alike):
#   none    no plugin in plugstack.conf (neither srun nor slurmstepd loads it);
#   loaded  the plugin loaded (`required`), --hcg-layout not given;
#   used    the plugin loaded and --hcg-layout given: srun reads and checks
#           the layout, slurmstepd sets every task's HCG_* variables;
#   floor   instead of the plugin, srun_floor.c (built here): it sets as
#           many variables in each task as the plugin does on average, and
#           nothing else; what Slurm charges for the variables themselves.
# Prints figures; asserts nothing.
#
#   bench/bench_srun.sh BUILD_DIR [ROUNDS] [TASKS]   (root; default 50, 64)
#
# Two settings, ROUNDS rounds of the four variants each:
#   - standalone: each srun gets its own allocation (the cluster is idle
#     before each run, so no run waits for the previous job's clean-up);
#   - in one allocation: each srun is a step of one salloc allocation,
#     which removes the scheduler's share of the time.
# Reported: each variant's median with its 95% confidence interval, and
# the median of the per-round ratios loaded/none, used/none, floor/none and
# used/floor with theirs (order statistics, bench/cluster.bash): the
# overhead is below 2% at 95% confidence when the ratio's upper bound is
# below 1.02. The plugstack.conf is rewritten between runs, outside the
# timed part (srun reads it at start, slurmstepd at every step start).
# Beside the time, the page faults of the whole machine during each srun
# (/proc/vmstat pgfault), per task, above no plugin: where tasks are
# forked and exec'd, a page a task writes or runs first is a fault, and
# on the project's virtual machines faults are most of the cost; their
# count barely moves with the machine's load, the time does (doc/plugin.md,
# "What a task costs"). Last, each task's own count, exact and free of the
# rest of the machine: the tasks run `awk` printing the minor faults in
# their /proc/self/stat, which count from fork (awk's own start, the same
# in every variant, included).
set -u
here=$(cd "$(dirname "$0")" && pwd)

faults() { awk '$1 == "pgfault" {print $2}' /proc/vmstat; }

ms() { # runs "$@", prints its wall time in microseconds and the page faults
  local t0 t1 f0 f1
  f0=$(faults)
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || {
    echo "bench_srun: '$*' failed" >&2
    exit 1
  }
  t1=$(date +%s%N)
  f1=$(faults)
  echo "$(((t1 - t0) / 1000)) $((f1 - f0))"
}

# Installs the plugstack.conf of a variant: none, the plugin's or floor.
use_plugstack() { # none|plugin|floor DIR
  cp -f "$2/plugstack.$1" "$CLUSTER_PLUGSTACK.tmp" &&
    mv -f "$CLUSTER_PLUGSTACK.tmp" "$CLUSTER_PLUGSTACK"
}

# Prints ROUNDS lines "none loaded used floor" (microseconds), then the
# page faults of each. WAIT=1: wait for an idle cluster before each srun.
rounds() { # ROUNDS TASKS LAYOUT WAIT DIR
  local rounds=$1 tasks=$2 layout=$3 wait=$4 dir=$5 i k v
  local -a t f
  local -a plain=(srun -n "$tasks" --overcommit true)
  local -a with=(srun -n "$tasks" --overcommit --hcg-layout="$layout" true)
  use_plugstack plugin "$dir"
  for i in 1 2 3; do # warm up: page cache, daemons' first steps
    "${plain[@]}" >/dev/null 2>&1
    "${with[@]}" >/dev/null 2>&1
  done
  local -a stack=(none plugin plugin floor)
  for i in $(seq 1 "$rounds"); do
    for k in 0 1 2 3; do
      v=$(((i + k) % 4))
      use_plugstack "${stack[v]}" "$dir"
      [ "$wait" = 1 ] && cluster_wait_idle 30
      if [ "$v" = 2 ]; then
        read -r "t[v]" "f[v]" < <(ms "${with[@]}")
      else
        read -r "t[v]" "f[v]" < <(ms "${plain[@]}")
      fi
    done
    echo "${t[*]} ${f[*]}"
  done
  use_plugstack plugin "$dir"
}

# Prints each task's own minor faults, one line a task: "VARIANT COUNT",
# five sruns of each variant.
own_faults() { # TASKS LAYOUT DIR
  local tasks=$1 layout=$2 dir=$3 v i
  # shellcheck disable=SC2016 # awk's $10, not the shell's
  local -a count=(awk '{print $10}' /proc/self/stat)
  for v in none loaded used floor; do
    case $v in none | floor) use_plugstack "$v" "$dir" ;; *) use_plugstack plugin "$dir" ;; esac
    for i in 0 1 2 3 4 5; do # the first warms up
      if [ "$v" = used ]; then
        srun -n "$tasks" --overcommit --hcg-layout="$layout" "${count[@]}"
      else
        srun -n "$tasks" --overcommit "${count[@]}"
      fi | { if [ "$i" = 0 ]; then cat >/dev/null; else sed "s/^/$v /"; fi; }
    done
  done
  use_plugstack plugin "$dir"
}

if [ "${1:-}" = --rounds ]; then # inside salloc, see below
  shift
  rounds "$@"
  exit 0
fi
if [ "${1:-}" = --own-faults ]; then
  shift
  own_faults "$@"
  exit 0
fi

build=${1:?usage: bench/bench_srun.sh BUILD_DIR [ROUNDS] [TASKS]}
nrounds=${2:-50}
tasks=${3:-64}
layout=${HCG_BENCH_LAYOUT:-'vision:tp=4,dp=2; llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'}

# shellcheck source=cluster.bash
source "$here/cluster.bash"
bench_start "$build" own
cd "$CLUSTER_DIR/tmp" || exit 1
"$HCG" check -n "$tasks" "$layout" >/dev/null || exit 1
cp "$CLUSTER_PLUGSTACK" "$BENCH_TMP/plugstack.plugin"
echo "# bench_srun: no plugin" >"$BENCH_TMP/plugstack.none"
export CLUSTER_PLUGSTACK
# The floor: as many variables a task as the plugin gives, on average.
"${CC:-cc}" -O2 -fPIC -shared -Wall -Wextra -Werror -o "$BENCH_TMP/srun_floor.so" \
  "$here/srun_floor.c" || exit 1
vars=$(srun -n "$tasks" --overcommit --hcg-layout="$layout" bash -c 'env | grep -c "^HCG_"' |
  awk '{s += $1} END {if (NR) printf "%d", s / NR + 0.5}')
[ -n "$vars" ] || exit 1
echo "required $BENCH_TMP/srun_floor.so vars=$vars" >"$BENCH_TMP/plugstack.floor"

ci() { bench_ci | awk '{printf "%7.1f [%.1f-%.1f]", $1, $2, $3}'; }
rci() { bench_ci | awk '{printf "%.3f [%.3f-%.3f]", $1, $2, $3}'; }
report() { # LABEL FILE
  local f=$2
  printf '%s (%d rounds)\n' "$1" "$(wc -l <"$f")"
  printf '  ms:    none %s   loaded %s   used %s   floor %s\n' \
    "$(awk '{print $1 / 1000}' "$f" | ci)" "$(awk '{print $2 / 1000}' "$f" | ci)" \
    "$(awk '{print $3 / 1000}' "$f" | ci)" "$(awk '{print $4 / 1000}' "$f" | ci)"
  printf '  ratio: loaded/none %s   used/none %s   floor/none %s   used/floor %s\n' \
    "$(awk '{print $2 / $1}' "$f" | rci)" "$(awk '{print $3 / $1}' "$f" | rci)" \
    "$(awk '{print $4 / $1}' "$f" | rci)" "$(awk '{print $3 / $4}' "$f" | rci)"
  printf '  page faults a task: none %s   loaded - none %s   used - none %s   floor - none %s\n' \
    "$(awk -v n="$tasks" '{print $5 / n}' "$f" | ci)" \
    "$(awk -v n="$tasks" '{print ($6 - $5) / n}' "$f" | ci)" \
    "$(awk -v n="$tasks" '{print ($7 - $5) / n}' "$f" | ci)" \
    "$(awk -v n="$tasks" '{print ($8 - $5) / n}' "$f" | ci)"
  if [ -n "${HCG_BENCH_SUMMARY:-}" ]; then
    printf 'srun -n %d %s: used/none\t%s\tgoal <= 1.02\n' "$tasks" "$1" \
      "$(awk '{print $3 / $1}' "$f" | rci)" >>"$HCG_BENCH_SUMMARY"
    printf 'srun -n %d %s: used/floor\t%s\tSlurm'"'"'s share apart\n' "$tasks" "$1" \
      "$(awk '{print $3 / $4}' "$f" | rci)" >>"$HCG_BENCH_SUMMARY"
  fi
}

echo "srun -n $tasks --overcommit true: no plugin, plugin loaded, plugin used, floor ($vars variables a task)"
echo "($(nproc) CPUs, one node, load $(cut -d' ' -f1-3 /proc/loadavg) at start)"
echo "layout: $layout"
echo "medians [95% CI]"
rounds "$nrounds" "$tasks" "$layout" 1 "$BENCH_TMP" >"$BENCH_TMP/standalone"
report standalone "$BENCH_TMP/standalone"
salloc -n "$tasks" --overcommit "$here/bench_srun.sh" --rounds "$nrounds" "$tasks" \
  "$layout" 0 "$BENCH_TMP" 2>/dev/null >"$BENCH_TMP/alloc"
report "in one allocation" "$BENCH_TMP/alloc"
salloc -n "$tasks" --overcommit "$here/bench_srun.sh" --own-faults "$tasks" "$layout" \
  "$BENCH_TMP" 2>/dev/null >"$BENCH_TMP/own"
printf "each task's own page faults, fork to exec (%d tasks a variant):\n " \
  "$(($(wc -l <"$BENCH_TMP/own") / 4))"
for v in none loaded used floor; do
  printf ' %s %s' "$v" "$(awk -v v="$v" '$1 == v {print $2}' "$BENCH_TMP/own" | ci)"
done
echo
