#!/usr/bin/env bats
# Two nodes: ranks spread over two slurmstepd, PMIx across nodes, and the
# refusal of heterogeneous steps (which Slurm only runs on distinct nodes).
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
  run timeout 120 srun -N 2 -n 6 --overcommit --mpi=pmix --hcg-layout='tp=3,dp=*' \
    /bin/bash -c 'echo "$SLURMD_NODENAME $PMIX_RANK $HCG_RANK $HCG_WORLD_SIZE"'
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "${#lines[@]}" -eq 6 ]
  while read -r node pmix rank world; do
    [ "$pmix" = "$rank" ] && [ "$world" = 6 ]
  done <<<"$output"
  [ "$(cut -d' ' -f1 <<<"$output" | sort -u | wc -l)" -eq 2 ]
}

@test "--mpi=pmix across nodes: a PMIx client agrees" {
  probe=$BUILD/tests/cluster/hcg_probe
  [ -x "$probe" ] || skip "hcg_probe not built"
  run timeout 120 srun -N 2 -n 8 --overcommit --mpi=pmix \
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

@test "heterogeneous steps are refused, no task runs" {
  run timeout 120 srun -n 1 --overcommit --hcg-layout='tp=1' \
    /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER" : \
    -n 2 --overcommit /bin/bash -c 'touch "$0.het.$SLURM_PROCID"' "$MARKER"
  refused 'srun: error: hcg: heterogeneous steps are not supported yet'
}

@test "a heterogeneous step without --hcg-layout still runs" {
  run timeout 120 srun -n 1 --overcommit true : -n 2 --overcommit true
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
