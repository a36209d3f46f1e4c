#!/usr/bin/env bats
# Every task's HCG_* variables are exactly those `hcg explain` gives for its
# rank: all of them, nothing missing, nothing extra. Real srun, real
# slurmstepd, the built plugin (tests/cluster/run.sh starts the cluster).

load helpers

# Task counts: small ones, primes, powers of two and the largest. Every
# count is the pure core's (its unit tests take every one); here it is the
# plugin's environment against hcg explain under a real srun, and each srun
# is CI's time on every tier.
@test "one grid, inferred dp, 1 to 24 tasks" {
  for n in 1 2 3 4 5 7 8 12 13 16 24; do
    check_layout "$n" 'dp=*'
  done
}

@test "one grid with tp, cp, pp and inferred dp at 8, 16, 24 tasks" {
  for n in 8 16 24; do
    check_layout "$n" 'tp=2,cp=2,pp=2,dp=*'
  done
}

@test "tp=2 with inferred dp at even task counts up to 24" {
  for n in 2 4 6 10 16 24; do
    check_layout "$n" 'tp=2,dp=*'
  done
}

@test "inferred tp in a grid of prime size" {
  check_layout 7 'tp=*'
  check_layout 13 'tp=*,dp=1'
}

@test "a grid with an expert view (shared pp)" {
  for n in 8 16 24; do
    check_layout "$n" \
      'llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp'
  done
  check_layout 16 'llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=2,ep=4,pp'
}

@test "non-colocated MIMO: vision then llm" {
  check_layout 16 'vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*'
  check_layout 24 'vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*'
  check_layout 12 'audio:tp=2; vision:tp=2,dp=1; llm:tp=2,pp=2,dp=*'
}

@test "colocated MIMO on the same ranks" {
  check_layout 8 'vision@0:tp=2,dp=4; llm@0:tp=4,dp=2'
  check_layout 16 'vision@0:tp=2,dp=*; llm@0:tp=4,pp=2,dp=*'
}

@test "explicit offsets, also out of order, and a view per module" {
  check_layout 8 'enc@0:tp=2,dp=2; llm@4:tp=2,pp=2'
  check_layout 8 'llm@4:tp=4; enc@0:tp=2,dp=2'
  check_layout 24 'enc@0:tp=2,dp=*; llm@8:tp=2,dp=*,pp=2; llm/expert:ep=4,expt_dp=*,pp'
}

@test "layout with comments, newlines and spaces" {
  check_layout 8 "$(printf '# the encoder\n vision : tp = 2 , dp = 2 \n\n llm: tp=2, dp=* # the rest\n')"
}

@test "a layout file (@PATH) gives the same variables" {
  printf '# MIMO\nvision:tp=2,dp=2\nllm:tp=2,pp=2,dp=*\n' >"$BATS_TEST_TMPDIR/mimo.layout"
  check_layout 16 "@$BATS_TEST_TMPDIR/mimo.layout"
}

@test "relative @PATH is read in srun's directory" {
  cd "$BATS_TEST_TMPDIR"
  echo 'tp=2,dp=*' >rel.layout
  check_layout 4 @rel.layout
}

@test "HCG_LAYOUT is canonical and parses back to itself" {
  run_tasks 12 'vision:tp=2,dp=*; llm@4:tp=4,dp=*'
  [ "$status" -eq 0 ]
  canonical=$(sed -n 's/^HCG_LAYOUT=//p' "$OUT/task.0")
  [ "$canonical" = 'vision@0:tp=2,dp=2;llm@4:tp=4,dp=2' ]
  run "$HCG" check -n 12 "$canonical"
  [ "$status" -eq 0 ]
  [ "$output" = "$canonical" ]
}

@test "the hand-over variable never reaches a task" {
  run_tasks 4 'tp=2,dp=*'
  [ "$status" -eq 0 ]
  if grep -h '^SLURM_HCG_' "$OUT"/task.*; then false; fi
  # Not even with --export=NONE, which keeps srun's SLURM_* variables.
  run_tasks 4 'tp=2,dp=*' --export=NONE
  [ "$status" -eq 0 ]
  if grep -h '^SLURM_HCG_' "$OUT"/task.*; then false; fi
  grep -qx 'HCG_RANK=3' "$OUT/task.3"
}

@test "--export=NONE: tasks still get every variable" {
  run_tasks 8 'tp=2,pp=2,dp=*' --export=NONE
  [ "$status" -eq 0 ]
  "$HCG" explain -n 8 'tp=2,pp=2,dp=*' --format json >"$OUT/explain.json"
  for r in 0 5 7; do
    diff -u <(expected_env "$OUT/explain.json" "$r") <(layout_vars "$OUT/task.$r")
  done
}

@test "a step without --hcg-layout gets no HCG_* variable" {
  run_tasks 2 'tp=2' # warm: a step with a layout just before
  rm -f "$OUT"/task.*
  run srun -n 2 --overcommit bash -c 'env | grep -E "^(HCG_|SLURM_HCG_)" >"$0/task.$SLURM_PROCID"; true' "$OUT"
  [ "$status" -eq 0 ]
  [ ! -s "$OUT/task.0" ] && [ ! -s "$OUT/task.1" ]
}

@test "an identical repeated option is accepted" {
  run srun -n 4 --overcommit --hcg-layout='tp=2,dp=*' --hcg-layout='tp=2,dp=*' \
    printenv HCG_WORLD_TP_SIZE
  [ "$status" -eq 0 ]
  [ "$(sort -u <<<"$output")" = 2 ]
}

@test "--mpi=pmix: HCG_RANK is PMIX_RANK, HCG_WORLD_SIZE the job size" {
  need_pmix
  for n in 1 6 16; do
    rm -f "$OUT"/pmix.*
    run timeout -k 5 120 srun -n "$n" --overcommit --mpi=pmix \
      --hcg-layout='vision@0:dp=*; llm@0:tp=1,dp=*' \
      bash -c 'echo "$PMIX_RANK $HCG_RANK $HCG_WORLD_SIZE $SLURM_NTASKS $SLURM_PROCID" >"$0/pmix.$SLURM_PROCID"' "$OUT"
    [ "$status" -eq 0 ] || { echo "$output"; false; }
    [ "$(ls "$OUT"/pmix.* | wc -l)" -eq "$n" ]
    for f in "$OUT"/pmix.*; do
      read -r pmix rank world ntasks procid <"$f"
      [ -n "$pmix" ] && [ "$pmix" = "$rank" ] && [ "$rank" = "$procid" ]
      [ "$world" = "$n" ] && [ "$ntasks" = "$n" ]
    done
  done
}

@test "--mpi=pmix: a PMIx client agrees on rank and job size" {
  need_pmix
  probe=$BUILD/tests/cluster/hcg_probe
  [ -x "$probe" ] || skip "hcg_probe not built"
  run timeout -k 5 120 srun -n 8 --overcommit --mpi=pmix \
    --hcg-layout='tp=2,pp=2,dp=*' "$probe" pmix
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ "$(grep -c '^ok ' <<<"$output")" -eq 8 ]
}
