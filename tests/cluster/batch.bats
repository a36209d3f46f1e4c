#!/usr/bin/env bats
# sbatch and salloc: the option reaches every srun of the job.

load helpers

# A batch script whose srun writes each task's HCG_* variables.
write_job() { # FILE [#SBATCH LINE...]
  local f=$1
  shift
  {
    echo '#!/bin/bash'
    local l
    for l in "$@"; do echo "#SBATCH $l"; done
    echo 'rm -f "$2"' # a layout file may be gone by the time srun runs
    echo 'srun /bin/bash -c '\''env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"'\'' "$1"'
  } >"$f"
}

# Compares $OUT/task.* with hcg explain for N tasks.
check_tasks() { # N LAYOUT
  local n=$1 r
  "$HCG" explain -n "$n" "$2" --format json >"$OUT/explain.json"
  [ "$(ls "$OUT" | grep -c '^task\.')" -eq "$n" ]
  for r in $(seq 0 $((n - 1))); do
    diff -u <(expected_env "$OUT/explain.json" "$r") <(layout_vars "$OUT/task.$r")
  done
}

@test "sbatch --wait --hcg-layout on the command line: srun inherits it" {
  write_job "$BATS_TEST_TMPDIR/job.sh"
  run timeout 120 sbatch --wait -n 8 --overcommit -o "$OUT/job.out" \
    --hcg-layout='vision:tp=2,dp=2; llm:tp=2,dp=*' "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  check_tasks 8 'vision:tp=2,dp=2; llm:tp=2,dp=*'
}

@test "#SBATCH --hcg-layout in the script: srun inherits it" {
  write_job "$BATS_TEST_TMPDIR/job.sh" '-n 12' '--overcommit' \
    '--hcg-layout="llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=3,expt_dp=*,pp"'
  run timeout 120 sbatch --wait -o "$OUT/job.out" "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  check_tasks 12 'llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=3,expt_dp=*,pp'
}

@test "the same value in #SBATCH and on the command line is accepted" {
  write_job "$BATS_TEST_TMPDIR/job.sh" '-n 4' '--overcommit' '--hcg-layout=tp=2,dp=*'
  run timeout 120 sbatch --wait -o "$OUT/job.out" --hcg-layout='tp=2,dp=*' \
    "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ]
  check_tasks 4 'tp=2,dp=*'
}

@test "different values in #SBATCH and on the command line are refused" {
  write_job "$BATS_TEST_TMPDIR/job.sh" '-n 4' '--overcommit' '--hcg-layout=tp=2,dp=*'
  run timeout 120 sbatch --wait -o "$OUT/job.out" --hcg-layout='tp=4' \
    "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -ne 0 ]
  grep -q "sbatch: error: hcg: --hcg-layout is given twice with different values" <<<"$output"
  [ ! -e "$OUT/job.out" ]
}

@test "sbatch reads @PATH as the user and passes the text: the file may vanish" {
  echo 'vision@0:tp=2,dp=*; llm@0:tp=4,dp=*' >"$BATS_TEST_TMPDIR/lay.layout"
  write_job "$BATS_TEST_TMPDIR/job.sh"
  # The script deletes the file before its srun runs.
  run timeout 120 sbatch --wait -n 8 --overcommit -o "$OUT/job.out" \
    --hcg-layout="@$BATS_TEST_TMPDIR/lay.layout" "$BATS_TEST_TMPDIR/job.sh" "$OUT" \
    "$BATS_TEST_TMPDIR/lay.layout"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  [ ! -e "$BATS_TEST_TMPDIR/lay.layout" ]
  check_tasks 8 'vision@0:tp=2,dp=*; llm@0:tp=4,dp=*'
}

@test "sbatch with a relative @PATH and a job in another directory" {
  mkdir -p "$BATS_TEST_TMPDIR/submit" "$BATS_TEST_TMPDIR/work"
  echo 'tp=2,pp=2,dp=*' >"$BATS_TEST_TMPDIR/submit/rel.layout"
  write_job "$BATS_TEST_TMPDIR/job.sh"
  cd "$BATS_TEST_TMPDIR/submit"
  run timeout 120 sbatch --wait -n 8 --overcommit -D "$BATS_TEST_TMPDIR/work" \
    -o "$OUT/job.out" --hcg-layout=@rel.layout "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  check_tasks 8 'tp=2,pp=2,dp=*'
}

@test "sbatch --export=NONE: srun still inherits the layout" {
  write_job "$BATS_TEST_TMPDIR/job.sh"
  run timeout 120 sbatch --wait -n 4 --overcommit --export=NONE -o "$OUT/job.out" \
    --hcg-layout='tp=2,dp=*' "$BATS_TEST_TMPDIR/job.sh" "$OUT"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  check_tasks 4 'tp=2,dp=*'
}

@test "in a job, srun may replace or drop the inherited layout" {
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
srun -n 2 --hcg-layout='tp=2' printenv HCG_LAYOUT
srun -n 1 --hcg-layout=none bash -c 'echo "none:${HCG_LAYOUT-unset}"'
srun -n 4 printenv HCG_LAYOUT | sort -u
SCRIPT
  run timeout 120 sbatch --wait -n 4 --overcommit -o "$OUT/job.out" \
    --hcg-layout='tp=2,dp=*' "$BATS_TEST_TMPDIR/job.sh"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  # The tasks' lines; srun's own notes (a step waiting for the previous
  # one's resources, on a busy machine) go to the same file.
  run grep -v '^srun: ' "$OUT/job.out"
  [ "${lines[0]}" = 'world@0:tp=2' ] || { cat "$OUT/job.out"; false; }
  [ "${lines[1]}" = 'world@0:tp=2' ]
  [ "${lines[2]}" = 'none:unset' ]
  [ "${lines[3]}" = 'world@0:tp=2,dp=2' ]
  [ "${#lines[@]}" -eq 4 ]
}

@test "an inherited layout is checked against each step's task count" {
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
srun -n 1 touch "$1.1"
echo "rc=$?"
SCRIPT
  run timeout 120 sbatch --wait -n 4 --overcommit -o "$OUT/job.out" \
    --hcg-layout='tp=2,dp=*' "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  grep -q 'rc=1' "$OUT/job.out"
  grep -q 'hcg: layout: column 9' "$OUT/job.out"
  grep -q 'step of 1 task; no task will run' "$OUT/job.out"
  if ls "$MARKER"*; then false; fi
}

@test "sbatch refuses a layout with a syntax error: no job is submitted" {
  printf '#!/bin/bash\ntouch "$1"\n' >"$BATS_TEST_TMPDIR/job.sh"
  run timeout 60 sbatch --wait -n 2 -o "$OUT/job.out" --hcg-layout='tp=2,dp=0' \
    "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  [ "$status" -ne 0 ]
  grep -q "sbatch: error: hcg: layout: column 9: size of 'dp' must be a positive integer" <<<"$output"
  grep -qE '^ {10}\^$' <<<"$output"
  if grep -q 'Submitted batch job' <<<"$output"; then false; fi
  [ ! -e "$MARKER" ] && [ ! -e "$OUT/job.out" ]
}

@test "sbatch refuses an unknown file and a huge layout" {
  printf '#!/bin/bash\ntouch "$1"\n' >"$BATS_TEST_TMPDIR/job.sh"
  run timeout 60 sbatch -n 2 --hcg-layout="@$BATS_TEST_TMPDIR/nope" "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  [ "$status" -ne 0 ]
  grep -q "cannot open layout file '$BATS_TEST_TMPDIR/nope'" <<<"$output"
  run timeout 60 sbatch -n 2 --hcg-layout="$(head -c 102400 /dev/zero | tr '\0' '#')" \
    "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  [ "$status" -ne 0 ]
  grep -q 'is 102400 bytes; the limit is 16384 bytes' <<<"$output"
  if grep -q 'Submitted batch job' <<<"$output"; then false; fi
}

@test "salloc --hcg-layout: srun inside the allocation inherits it" {
  run timeout 120 salloc -n 6 --overcommit --hcg-layout='vision:tp=2; llm:tp=2,dp=*' \
    srun bash -c 'env | grep -E "^(HCG_|SLURM_HCG_)" | sort >"$0/task.$SLURM_PROCID"' "$OUT"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  check_tasks 6 'vision:tp=2; llm:tp=2,dp=*'
}

@test "salloc refuses a bad layout before allocating" {
  run timeout 60 salloc -n 2 --hcg-layout='tp=2,dp=' touch "$MARKER"
  [ "$status" -ne 0 ]
  grep -q 'salloc: error: hcg: layout: column 9' <<<"$output"
  if grep -q 'Granted job allocation' <<<"$output"; then false; fi
  [ ! -e "$MARKER" ]
}
