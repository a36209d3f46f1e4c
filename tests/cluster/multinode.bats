#!/usr/bin/env bats
# Two nodes: ranks spread over two slurmstepd, PMIx across nodes, and
# heterogeneous steps (whose components Slurm puts on distinct nodes).
# This file starts its own two-node cluster (CLUSTER_NODE_COUNT=2, the
# second node in a network namespace) next to run.sh's one-node cluster.

load helpers
load twonode

@test "two nodes are up" {
  run sinfo -h -N -o '%N %T'
  [ "$status" -eq 0 ]
  grep -qx "$CLUSTER_NODE idle" <<<"$output"
  grep -qx 'hcgn2 idle' <<<"$output"
}

@test "tasks on two nodes get exactly hcg explain's variables" {
  SRUN_ARGS='-N 2'
  check_layout 8 'tp=2,pp=2,dp=*'
  check_layout 12 'vision:tp=2,dp=2; llm:tp=2,dp=*'
  check_layout 16 'llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=2,ep=4,pp'
  # Both nodes ran tasks.
  run srun -N 2 -n 4 --overcommit --hcg-layout='tp=2,dp=*' printenv SLURMD_NODENAME
  [ "$(sort -u <<<"$output" | wc -l)" -eq 2 ]
}

@test "--mpi=pmix across nodes: HCG_RANK is PMIX_RANK" {
  need_pmix
  run timeout -k 5 120 srun -N 2 -n 6 --overcommit --mpi=pmix --hcg-layout='tp=3,dp=*' \
    /bin/bash -c 'echo "$SLURMD_NODENAME $PMIX_RANK $HCG_RANK $HCG_WORLD_SIZE"'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "${#lines[@]}" -eq 6 ]
  while read -r node pmix rank world; do
    [ "$pmix" = "$rank" ] && [ "$world" = 6 ]
  done <<<"$output"
  [ "$(cut -d' ' -f1 <<<"$output" | sort -u | wc -l)" -eq 2 ]
}

@test "--mpi=pmix across nodes: a PMIx client agrees" {
  need_pmix
  probe=$BUILD/tests/cluster/hcg_probe
  [ -x "$probe" ] || skip "hcg_probe not built"
  run timeout -k 5 120 srun -N 2 -n 8 --overcommit --mpi=pmix \
    --hcg-layout='vision:tp=2,dp=2; llm:tp=2,dp=*' "$probe" pmix
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(grep -c '^ok ' <<<"$output")" -eq 8 ]
}

@test "sbatch on two nodes: srun inherits the layout" {
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
srun /bin/bash -c 'env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"' "$1"
SCRIPT
  run timeout 120 sbatch --wait -N 2 -n 8 --overcommit -o "$OUT/job.out" \
    --hcg-layout='tp=2,dp=*,pp=2' "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  "$HCG" explain -n 8 'tp=2,dp=*,pp=2' --format json >"$OUT/explain.json"
  for r in $(seq 0 7); do
    diff -u <(expected_env "$OUT/explain.json" "$r") <(layout_vars "$OUT/task.$r")
  done
}

# srun A : B, each task writing its HCG_* variables to $OUT/task.RANK.
#   het_step N0 N1 SRUN_ARGS_OF_THE_FIRST... (the layout among them)
het_step() {
  local n0=$1 n1=$2
  shift 2
  local cmd='env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"'
  rm -f "$OUT"/task.*
  run timeout -k 5 120 srun -n "$n0" --overcommit "$@" /bin/bash -c "$cmd" "$OUT" : \
    -n "$n1" --overcommit /bin/bash -c "$cmd" "$OUT"
}

# Every task of an N-task step got exactly hcg explain's variables.
explained() { # N LAYOUT
  local r
  "$HCG" explain -n "$1" "$2" --format json >"$OUT/explain.json"
  for r in $(seq 0 $(($1 - 1))); do
    diff -u <(expected_env "$OUT/explain.json" "$r") "$OUT/task.$r" || return 1
  done
}

@test "heterogeneous MIMO step: vision on one component, llm on the other, ranks of the whole step" {
  het_step 4 4 --hcg-layout='vision:tp=2,dp=2; llm:tp=2,dp=*'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  explained 8 'vision:tp=2,dp=2; llm:tp=2,dp=*'
  # A grid may also span both components whole; @PATH is read by srun.
  echo 'tp=2,dp=*' >"$BATS_TEST_TMPDIR/layout.hcg"
  het_step 2 4 --hcg-layout="@$BATS_TEST_TMPDIR/layout.hcg"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  explained 6 'tp=2,dp=*'
}

# Runs a heterogeneous --mpi=pmix srun. Slurm 22.05's srun can hang after
# such a step has ended, every task having exited 0: its main thread joins
# mpi/pmix's abort agent (pmixp_abort_agent_stop) once per component and
# never returns, and it then ignores SIGTERM (seen here with gdb; not the
# plugin's code). Such an srun is killed after 60 s and its job cancelled;
# the test then judges the step by its tasks' output alone, which the
# callers check line by line.
run_het_pmix() {
  run timeout -k 5 60 "$@"
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    echo "# srun hung after the step (Slurm 22.05, pmixp_abort_agent_stop): killed" >&3
    scancel --quiet --user=root 2>/dev/null || true
    cluster_wait_idle 30 || true
    status=0
  fi
}

@test "heterogeneous step under --mpi=pmix: one namespace, hcg-hello forms the groups of both components in one exchange" {
  need_pmix
  local hello=$BUILD/runtime/hcg-hello
  run_het_pmix srun -n 4 --overcommit --mpi=pmix \
    --hcg-layout='vision:tp=2,dp=2; llm:tp=2,dp=*' "$hello" : \
    -n 4 --overcommit "$hello"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  grep -qx 'group 1 vision:tp members=0,1 index=1 leader=0 id=[0-9a-f]*' <<<"$output"
  grep -qx 'group 6 llm:dp members=4,6 index=1 leader=4 id=[0-9a-f]*' <<<"$output"
  [ "$(grep -c '^fences [0-7] 1 exchanges 1$' <<<"$output")" -eq 8 ]
  # One PMIx namespace: PMIx rank and job size are the step's.
  local probe=$BUILD/tests/cluster/hcg_probe
  [ -x "$probe" ] || return 0
  run_het_pmix srun -n 2 --overcommit --mpi=pmix \
    --hcg-layout='vision:tp=2; llm:tp=2,dp=*' "$probe" pmix : -n 4 --overcommit "$probe" pmix
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(grep -c '^ok [0-5] 6 HCG_RANK=[0-5] HCG_WORLD_SIZE=6$' <<<"$output")" -eq 6 ]
}

@test "heterogeneous step: a grid straddling the components is refused, no task runs" {
  run timeout -k 5 120 srun -n 4 --overcommit --hcg-layout='vision:tp=2,dp=3; llm:tp=2' \
    /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER" : \
    -n 4 --overcommit /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
  refused "hcg: no task of this component runs: grid 'vision' \(ranks 0-5\) straddles the components of this heterogeneous step \(component 0: ranks 0-3, component 1: ranks 4-7\)"
}

@test "heterogeneous step: --hcg-layout belongs to the whole step, a different one per component is refused" {
  # Given with the second component: still the whole step's.
  local cmd='env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"'
  run timeout -k 5 120 srun -n 2 --overcommit /bin/bash -c "$cmd" "$OUT" : \
    -n 2 --overcommit --hcg-layout='vision:tp=2; llm:tp=2' /bin/bash -c "$cmd" "$OUT"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  explained 4 'vision:tp=2; llm:tp=2'
  # The same value twice is one layout.
  het_step 2 2 --hcg-layout='tp=4'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  # Two values: refused before the allocation.
  run timeout -k 5 120 srun -n 2 --overcommit --hcg-layout='tp=2' \
    /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER" : \
    -n 2 --overcommit --hcg-layout='tp=4' /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
  refused "hcg: --hcg-layout is given twice with different values \('tp=2' and 'tp=4'\)"
}

# --overlap: Slurm 22.05 sometimes leaves a het job's next step waiting
# (srun in step_ctx_create_timeout, nothing printed) for resources its
# previous step has already freed, and wakes it only after minutes (seen
# with gdb: 1 of about 20 steps on a loaded machine; CI once). The steps
# here run one after the other; sharing the CPUs changes nothing tested.
@test "sbatch hetjob: srun --het-group=0,1 inherits the layout, or replaces it" {
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
#SBATCH -n 2 --overcommit --hcg-layout=vision:tp=2;llm:tp=2,dp=*
#SBATCH hetjob
#SBATCH -n 4 --overcommit
set -e
cmd='env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"'
srun --overlap --het-group=0,1 /bin/bash -c "$cmd" "$1"
srun --overlap --het-group=0,1 --hcg-layout='tp=2,dp=*' /bin/bash -c "$cmd" "$1/over"
srun --overlap --het-group=0,1 --hcg-layout=none /bin/bash -c '[ -z "$HCG_RANK" ]'
SCRIPT
  mkdir -m 777 "$OUT/over"
  run timeout 120 sbatch --wait -o "$OUT/job.out" "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  explained 6 'vision:tp=2;llm:tp=2,dp=*'
  OUT=$OUT/over explained 6 'tp=2,dp=*'
}

@test "a heterogeneous step without --hcg-layout still runs" {
  run timeout -k 5 120 srun -n 1 --overcommit true : -n 2 --overcommit true
  [ "$status" -eq 0 ]
}

@test "both nodes are idle and healthy afterwards" {
  cluster_wait_idle 60
  run sinfo -h -N -o '%N %T'
  if grep -v ' idle$' <<<"$output"; then false; fi
  if grep -iE 'segfault|segmentation|core dumped|SIGSEGV|SIGABRT|drain' \
    "$CLUSTER_LOGS"/slurmd*.log "$CLUSTER_LOGS"/slurmctld.log; then false; fi
  run awk -f "$BATS_TEST_DIRNAME/spank_errors.awk" "$CLUSTER_LOGS"/slurmd*.log
  [ -z "$output" ]
}
