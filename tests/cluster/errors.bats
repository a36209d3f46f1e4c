#!/usr/bin/env bats
# Bad input is refused with the core's message (what, where, column and
# caret) and a non-zero exit, and no task runs: each step would leave a
# marker file per task if it ran.

load helpers

# A job a test started and may leave running when it fails.
teardown() {
  if [ -n "${CANCEL:-}" ]; then scancel "$CANCEL" 2>/dev/null || true; fi
}

# The caret sits under the column the message names.
caret_matches_column() {
  local col line caret
  col=$(grep -oE 'column [0-9]+' <<<"$output" | head -n 1 | grep -oE '[0-9]+')
  [ -n "$col" ] || return 1
  caret=$(grep -E '^ +\^$' <<<"$output" | head -n 1)
  [ -n "$caret" ] || return 1
  # Two spaces of indentation, then the column (1-based).
  [ "${#caret}" -eq $((2 + col)) ]
}

@test "syntax error: message with column and caret, no task" {
  try_srun 4 'llm:tp=2,pp=2,cp=0'
  refused "hcg: layout: column 18: size of 'cp' must be a positive integer, got '0'" \
    '^  llm:tp=2,pp=2,cp=0$' '^ {19}\^$'
  caret_matches_column
}

@test "syntax errors of several kinds" {
  try_srun 4 'tp=2,,dp=2'
  refused 'hcg: layout: column [0-9]+' '\^'
  caret_matches_column
  try_srun 4 'TP=2,dp=2'
  refused "hcg: layout: column 1: .*'TP'" '\^'
  try_srun 4 'tp=2,tp=2'
  refused "names dim 'tp' twice" '\^'
  try_srun 4 'tp=x'
  refused 'hcg: layout: column' '\^'
  try_srun 4 'llm/expert:ep=2'
  refused 'hcg: layout: column' '\^'
  try_srun 4 ''
  refused 'the layout is empty'
  try_srun 4 'a_b:x=1; a:b_x=2; llm:tp=1'
  refused 'HCG_A_B_X_RANK' '\^'
}

@test "syntax errors are caught before srun asks for an allocation" {
  # No job is created for it: job ids on this private cluster go up by one
  # per job, so the job after the refused srun has the next id.
  run sbatch --parsable --wrap true -o /dev/null
  first=$output
  try_srun 4 'tp=2,dp='
  refused 'hcg: layout: column 9' 'init_post_opt'
  run sbatch --parsable --wrap true -o /dev/null
  [ "$output" -eq $((first + 1)) ]
}

@test "wrong product for the task count" {
  try_srun 6 'tp=2,pp=2,dp=2'
  refused "grid 'world' is over sized" 'step of 6 tasks' 'no task will run' '\^'
  caret_matches_column
  try_srun 8 'tp=2,dp=2'
  refused 'ranks \[4,8\) are in no grid' 'step of 8 tasks'
  try_srun 6 'tp=4,dp=*'
  refused "6 ranks are not a multiple of 4" '\^'
  try_srun 1 'tp=2'
  refused 'over sized' 'step of 1 task;'
}

@test "gap between modules" {
  try_srun 6 'vision@0:tp=2; llm@4:tp=2'
  refused 'ranks \[2,4\) are in no grid' 'vision \[0,2\), llm \[4,6\)'
}

@test "overlap between modules" {
  try_srun 6 'vision@0:tp=4; llm@2:tp=4'
  refused "grids 'vision' \[0,4\) and 'llm' \[2,6\) overlap" '\^'
  caret_matches_column
}

@test "a view whose shared dim enumerates differently" {
  try_srun 8 'llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4'
  refused "shared dim 'pp'" '\^'
}

@test "no language module among several grids" {
  try_srun 4 'a:tp=2; b:tp=2'
  refused 'no language module' 'plugstack language=NAME'
}

@test "syntax error in a layout file names the file, line and column" {
  printf '# two modules\nvision:tp=2,dp=2\nllm:tp=2,dp=\n' >"$BATS_TEST_TMPDIR/bad.layout"
  try_srun 8 "@$BATS_TEST_TMPDIR/bad.layout"
  refused "hcg: layout '$BATS_TEST_TMPDIR/bad.layout': line 3, column 13" \
    '^  llm:tp=2,dp=$' '\^'
  caret_matches_column
}

@test "a layout file that does not fit the task count" {
  printf 'vision:tp=2,dp=2\nllm:tp=2,dp=*\n' >"$BATS_TEST_TMPDIR/mimo.layout"
  try_srun 5 "@$BATS_TEST_TMPDIR/mimo.layout"
  refused "hcg: layout '$BATS_TEST_TMPDIR/mimo.layout': line 2, column 13" \
    'step of 5 tasks'
}

@test "unknown file" {
  try_srun 2 "@$BATS_TEST_TMPDIR/no-such.layout"
  refused "cannot open layout file '$BATS_TEST_TMPDIR/no-such.layout': No such file or directory"
  try_srun 2 '@'
  refused "'@' must be followed by a file name"
}

@test "unreadable file: a directory, a FIFO, a device" {
  mkdir "$BATS_TEST_TMPDIR/dir.layout"
  try_srun 2 "@$BATS_TEST_TMPDIR/dir.layout"
  refused "'$BATS_TEST_TMPDIR/dir.layout' is not a regular file"
  mkfifo "$BATS_TEST_TMPDIR/fifo.layout"
  # A FIFO with no writer must not block srun.
  try_srun 2 "@$BATS_TEST_TMPDIR/fifo.layout"
  refused "'$BATS_TEST_TMPDIR/fifo.layout' is not a regular file"
  try_srun 2 "@/dev/zero"
  refused "'/dev/zero' is not a regular file"
}

@test "unreadable file: no permission for the user running srun" {
  command -v runuser >/dev/null || skip "no runuser"
  id nobody >/dev/null 2>&1 || skip "no user nobody"
  echo 'tp=2' >"$BATS_TEST_TMPDIR/secret.layout"
  chmod 600 "$BATS_TEST_TMPDIR/secret.layout"
  # srun reads @PATH as the user who runs it, so nobody cannot read it (root
  # could: which is also why slurmstepd must never be the one to read it).
  cd /tmp
  run runuser -u nobody -- env SLURM_CONF="$SLURM_CONF" \
    srun -n 2 --overcommit --hcg-layout="@$BATS_TEST_TMPDIR/secret.layout" \
    bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
  refused "cannot open layout file '$BATS_TEST_TMPDIR/secret.layout': Permission denied"
}

@test "a 100 KiB layout argument is refused with the limit" {
  big=$(head -c 102400 /dev/zero | tr '\0' '#')
  try_srun 2 "$big"
  refused 'hcg: the layout given to --hcg-layout is 102400 bytes; the limit is 16384 bytes \(max_layout_bytes in plugstack.conf\)'
  # Slurm's own "Invalid argument" line, which would repeat the value, is
  # not printed: the output stays short.
  [ "${#output}" -lt 2000 ]
}

@test "a 1 MiB layout file is refused with the limit" {
  head -c 1048576 /dev/zero | tr '\0' '#' >"$BATS_TEST_TMPDIR/big.layout"
  try_srun 2 "@$BATS_TEST_TMPDIR/big.layout"
  refused "layout file '$BATS_TEST_TMPDIR/big.layout' is 1048576 bytes; the limit is 16384" \
    'max_layout_bytes=16384'
}

@test "a layout just under the limit is accepted, just over refused" {
  pad=$(head -c 16000 /dev/zero | tr '\0' ' ')
  check_layout 4 "tp=2,dp=*$pad"
  pad=$(head -c 16380 /dev/zero | tr '\0' ' ')
  try_srun 4 "tp=2,dp=*$pad"
  refused 'is 16389 bytes; the limit is 16384'
}

@test "a file with a NUL byte" {
  printf 'tp=2\0,dp=1' >"$BATS_TEST_TMPDIR/nul.layout"
  try_srun 2 "@$BATS_TEST_TMPDIR/nul.layout"
  refused 'NUL byte'
}

@test "too many grids" {
  many=$(for i in $(seq 0 16); do printf 'g%d:tp=1;' "$i"; done)
  try_srun 17 "$many"
  refused 'at most 16 grids'
}

@test "conflicting repeated options" {
  try_srun 4 'tp=2,dp=*' --hcg-layout='tp=4'
  refused "hcg: --hcg-layout is given twice with different values \('tp=2,dp=\*' and 'tp=4'\)"
  try_srun 4 'tp=4' --hcg-layout=none
  refused 'given twice with different values'
}

# How a layout that does not fit is refused depends on who made the job's
# allocation (spank/forward.h, doc/plugin.md): an srun that made its own
# fails in local_user_init, and Slurm then starts no task and no
# slurmstepd; an srun inside a job lets its tasks refuse the step, since
# failing there would leave the step behind, holding its CPUs.

# Lines of slurmd's log that launched a step's tasks (a slurmstepd).
launches() { grep -c 'launch task' "$CLUSTER_LOGS/slurmd.log" || true; }

@test "srun outside a job: srun refuses, no task or slurmstepd starts, the job ends" {
  local before
  before=$(launches)
  try_srun 12 'tp=5,dp=*' --time=1
  refused "cannot infer 'dp'" 'step of 12 tasks; no task will run'
  echo "$output"
  [ "$status" -eq 1 ]
  # hcg's message (3 lines with the caret), its summary, then Slurm's own
  # two lines for a failing plugin; no line from a node.
  [ "$(grep -c '\^$' <<<"$output")" -eq 1 ]
  grep -q 'local_user_init() failed' <<<"$output"
  grep -q 'Failure in local plugin stack' <<<"$output"
  [ "${#lines[@]}" -eq 6 ]
  if grep -qE 'Exited with exit code|slurmstepd|refused the layout of this step' <<<"$output"; then false; fi
  [ "$(launches)" -eq "$before" ]
  # Nothing is left behind: the job is gone and the node is idle.
  cluster_wait_idle 30
  [ "$(cluster_node_state)" = idle ]
}

@test "inside a job: the tasks refuse; one hcg message and one line per node" {
  # salloc's own lines aside, as for a step of a batch script.
  run timeout -k 5 120 salloc -n 12 --overcommit --time=1 \
    srun --hcg-layout='tp=5,dp=*' bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
  [ "$status" -eq 1 ]
  output=$(grep -v '^salloc: ' <<<"$output")
  refused "cannot infer 'dp'" 'no task will run' \
    'srun refused the layout of this step; no task runs'
  echo "$output"
  # hcg's message (3 lines with the caret), srun's summary line, the first
  # task's one line: 5 at most; then Slurm's own report of the node's tasks,
  # one line per batch of tasks that exited together (one, or more when
  # they exit apart: sid's Slurm 26.05 split 12 tasks in two under load).
  mapfile -t lines < <(grep -v 'Exited with exit code' <<<"$output")
  [ "${#lines[@]}" -le 5 ]
  exited=$(grep -c 'Exited with exit code' <<<"$output")
  [ "$exited" -ge 1 ]
  [ "$(grep -cE '^srun: error: [^ ]+: tasks? [0-9,-]+: Exited with exit code 1$' \
    <<<"$output")" -eq "$exited" ]
  ! grep -qE 'task_init\(\) failed|Failed to invoke spank|local_user_init' <<<"$output"
  [ "$(grep -c '\^$' <<<"$output")" -eq 1 ]
  cluster_wait_idle 30
  [ "$(cluster_node_state)" = idle ]
}

@test "after a refused step, the next step of the same job runs" {
  # Had srun failed the first step, Slurm (22.05 to 26.05 alike) would
  # keep it until the job ends, and the second srun would wait for its
  # CPUs forever.
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
srun -n 2 --hcg-layout='tp=3' touch "$1.bad"
echo "bad=$?"
srun -n 2 --hcg-layout='tp=2' printenv HCG_RANK
echo "good=$?"
SCRIPT
  run timeout 120 sbatch --wait -n 2 --overcommit -o "$OUT/job.out" \
    "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  [ "$status" -eq 0 ] || { cat "$OUT/job.out"; false; }
  grep -qx 'bad=1' "$OUT/job.out"
  grep -qx 'good=0' "$OUT/job.out"
  [ "$(grep -cx '[01]' "$OUT/job.out")" -eq 2 ]
  if ls "$MARKER"*; then false; fi
}

@test "srun --jobid into a running job: the tasks refuse, the job's next step runs" {
  # srun given a job on its command line (--jobid, or an abbreviation
  # getopt accepts) is inside that job, even with no SLURM_JOB_ID.
  cat >"$BATS_TEST_TMPDIR/job.sh" <<'SCRIPT'
#!/bin/bash
for _ in $(seq 1 400); do [ -e "$1.go" ] && break; sleep 0.25; done
srun -n 2 --hcg-layout='tp=2' printenv HCG_RANK
echo "good=$?"
SCRIPT
  run sbatch --parsable -n 2 --overcommit -o "$OUT/job.out" \
    "$BATS_TEST_TMPDIR/job.sh" "$MARKER"
  [ "$status" -eq 0 ]
  local id=$output
  CANCEL=$id
  for _ in $(seq 1 120); do
    [ "$(squeue -h -j "$id" -o %T)" = RUNNING ] && break
    sleep 0.25
  done
  for opt in --jobid --jobi; do
    run timeout -k 5 60 srun "$opt=$id" -n 2 --overcommit --hcg-layout='tp=3' \
      bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
    refused 'step of 2 tasks; no task will run' 'Exited with exit code 1'
    if grep -q 'local_user_init' <<<"$output"; then false; fi
  done
  touch "$MARKER.go"
  for _ in $(seq 1 240); do
    [ -z "$(squeue -h -j "$id" 2>/dev/null)" ] && break
    sleep 0.25
  done
  grep -qx 'good=0' "$OUT/job.out" || { cat "$OUT/job.out"; false; }
}
