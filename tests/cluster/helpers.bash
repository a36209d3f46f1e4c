# shellcheck shell=bash
# helpers.bash - shared by tests/cluster/*.bats. Needs the cluster that
# tests/cluster/run.sh starts (see cluster.sh for the exported variables).

# cluster_plugstack, cluster_conf_variant, cluster_wait_idle, ...
# shellcheck source=tests/cluster/cluster.sh
source "$BATS_TEST_DIRNAME/cluster.sh"
# STAMP, ended_soon
# shellcheck source=tests/cluster/timing.bash
source "$BATS_TEST_DIRNAME/timing.bash"

cluster_required() {
  if [ -z "${CLUSTER_DIR:-}" ] || [ -z "${SLURM_CONF:-}" ]; then
    skip "no test cluster: run tests/cluster/run.sh BUILD_DIR"
  fi
}

# The harness exports HCG_BUILD and HCG_SRCDIR; tasks inherit srun's
# environment, so they would show up among the task's HCG_* variables.
# Keep their values under other names and drop them for srun.
clean_env() {
  SRCDIR=${HCG_SRCDIR:-$SRCDIR}
  BUILD=${HCG_BUILD:-$BUILD}
  unset HCG_BUILD HCG_SRCDIR
  export SRCDIR BUILD
}

# The interpreter with torch: Debian's by default; HCG_TEST_PYTHON names
# another (a CUDA build of torch on a GPU machine, say).
PY=${HCG_TEST_PYTHON:-/usr/bin/python3}

# The setup of the .bats files that run hcg.torch in tasks (torch.bats,
# megatron.bats, mesh.bats): skips without torch; the tasks import hcg
# from the source tree and load the build's libhcg.
torch_setup() {
  cluster_required
  clean_env
  "$PY" -c 'import torch.distributed' 2> /dev/null ||
    skip "no torch for $PY (scripts/deps.sh installs python3-torch)"
  OUT=$BATS_TEST_TMPDIR/out
  mkdir -p "$OUT"
  chmod 777 "$BATS_TEST_TMPDIR" "$OUT"
  export PYTHONPATH=$SRCDIR/contrib/python
  export HCG_LIBRARY=$BUILD/runtime/.libs/libhcg.so.1
  SCRIPTS=$BATS_TEST_DIRNAME/torch
}

setup() {
  cluster_required
  clean_env
  # The previous test's job may still be completing; a step started then
  # prints 'queued and waiting for resources' into the output under test.
  cluster_wait_idle 30 || true
  OUT=$BATS_TEST_TMPDIR/out
  mkdir -p "$OUT"
  chmod 777 "$BATS_TEST_TMPDIR" "$OUT"
  MARKER=$BATS_TEST_TMPDIR/marker
}

# Runs a step whose every task writes its sorted HCG_* variables (and any
# forwarding variable that must not reach it) to $OUT/task.RANK.
#   run_tasks N LAYOUT [SRUN_ARGS...]   ($SRUN_ARGS is added too)
run_tasks() {
  local n=$1 layout=$2
  shift 2
  rm -f "$OUT"/task.*
  # shellcheck disable=SC2086
  run timeout -k 5 120 srun -n "$n" --overcommit --hcg-layout="$layout" \
    ${SRUN_ARGS:-} "$@" \
    /bin/bash -c 'env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"' \
    "$OUT"
}

# What `hcg explain --format json` says rank R gets: the common variables
# (.env) and the rank's own (.ranks[R].env), sorted NAME=VALUE lines.
#   expected_env JSON_FILE R
expected_env() {
  jq -r --argjson r "$2" \
    '(.env + .ranks[$r].env) | to_entries[] | "\(.key)=\(.value)"' "$1" |
    sort
}

# A task's variables without HCG_*_LOCAL, which depend on the nodes, not
# on the layout (placement.bats checks them).
layout_vars() {
  grep -v '^HCG_.*_LOCAL=' "$1" || true
}

# Every task of an N-task step got exactly what hcg explain says. One jq,
# one awk and one diff for the whole step, every line prefixed with its
# rank: per rank they were 4 processes each, and the cluster suites run
# some 400 ranks' worth of these.
#   check_layout N LAYOUT [EXPLAIN_ARGS...]
check_layout() {
  local n=$1 layout=$2 r
  shift 2
  run_tasks "$n" "$layout"
  if [ "$status" -ne 0 ]; then
    echo "srun -n $n --hcg-layout='$layout' failed ($status): $output"
    return 1
  fi
  "$HCG" explain -n "$n" "$@" "$layout" --format json >"$OUT/explain.json" ||
    return 1
  [ "$(jq '.ranks | length' "$OUT/explain.json")" -eq "$n" ] || return 1
  for r in $(seq 0 $((n - 1))); do
    if [ ! -f "$OUT/task.$r" ]; then
      echo "task $r of $n wrote nothing for '$layout'"
      return 1
    fi
  done
  [ "$(ls "$OUT" | grep -c '^task\.')" -eq "$n" ] || return 1
  if ! diff -u <(jq -r '.env as $e | .ranks | to_entries[] | .key as $r |
      ($e + .value.env) | to_entries[] | "\($r) \(.key)=\(.value)"' \
    "$OUT/explain.json" | sort) <(tasks_layout_vars "$n"); then
    echo "tasks of $n differ from hcg explain for '$layout' (lines: RANK NAME=VALUE)"
    return 1
  fi
}

# Every task's variables but HCG_*_LOCAL (see layout_vars), as "RANK
# NAME=VALUE" lines, sorted as check_layout's expected ones are.
tasks_layout_vars() {
  local n=$1 r
  for r in $(seq 0 $((n - 1))); do
    echo "$OUT/task.$r"
  done | xargs awk '!/^HCG_.*_LOCAL=/ {
    r = FILENAME; sub(/.*\./, "", r); print r " " $0 }' | sort
}

# A refused step: non-zero exit, the message, and the task never ran.
#   refused PATTERN...   (after `run ... touch $MARKER.$SLURM_PROCID`)
refused() {
  local p
  if [ "$status" -eq 0 ]; then
    echo "exit status 0, expected a failure; output: $output"
    return 1
  fi
  for p in "$@"; do
    if ! grep -qE -- "$p" <<<"$output"; then
      echo "no '$p' in: $output"
      return 1
    fi
  done
  if ls "$MARKER"* >/dev/null 2>&1; then
    echo "a task ran although the layout was refused"
    return 1
  fi
}

# srun that would leave a marker per task if any task ran.
#   try_srun N LAYOUT [SRUN_ARGS...]
try_srun() {
  local n=$1 layout=$2
  shift 2
  # shellcheck disable=SC2086
  run timeout -k 5 120 srun -n "$n" --overcommit --hcg-layout="$layout" \
    ${SRUN_ARGS:-} "$@" \
    /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
}

# rendezvous: for the tests that run hcg.torch, how hcg.torch.init() finds
# rank 0's store in this cluster. With mpi_pmix: srun --mpi=pmix, and rank 0's address (a free port) goes
# through libhcg's PMIx broadcast. Without (Debian's Slurm 26.05): no
# --mpi, and MASTER_ADDR/MASTER_PORT (a free port) name the store, as
# torchrun's would. Sets RDV (srun arguments) and exports the variables.
rendezvous() {
  RDV=()
  if [ "${CLUSTER_PMIX:-1}" = 1 ] && [ -z "${MASTER_PORT:-}" ]; then
    RDV=(--mpi=pmix)
  elif [ -z "${MASTER_PORT:-}" ]; then
    export MASTER_ADDR=127.0.0.1 MASTER_PORT
    MASTER_PORT=$(_cluster_free_port)
  fi
}

# same_losses REFERENCE OUT: the example's 5 loss lines in OUT equal those
# of its one-process run in REFERENCE, step by step to 1e-12, matched by
# step number: whatever else torch prints (its warnings, gloo's connection
# lines) is not a step line.
same_losses() {
  awk '$1 != "step" { next }
    NR == FNR { ref[$2] = $4; next }
    { n++; if (!($2 in ref)) { print "step " $2 ": no reference"; bad = 1; next }
      d = $4 - ref[$2]; if (d < 0) d = -d; r = d / ref[$2]
      if (r > 1e-12) { print "step " $2 ": " $4 " vs " ref[$2]; bad = 1 } }
    END { exit bad || n != 5 }' "$1" "$2"
}
