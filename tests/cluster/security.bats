#!/usr/bin/env bats
# What a user can do to their own step (doc/security.md): forge the
# hand-over by running srun with a plugstack.conf of their own, or pass
# HCG_* variables the plugin did not set. The node's policy wins.

load helpers

teardown() {
  cluster_plugstack
}

@test "a forged hand-over longer than the node's max_layout_bytes is refused" {
  cluster_plugstack max_layout_bytes=64
  # The user's own srun configuration raises the limit.
  conf=$(cluster_conf_variant mine max_layout_bytes=65536)
  layout='first:tp=2; second:tp=2; third:tp=2; fourth:tp=2; fifth:tp=2; llm:tp=2'
  SLURM_CONF=$conf try_srun 12 "$layout" --time=1
  refused "longer than this site's max_layout_bytes=64"
}

@test "a forged hand-over with another language module is refused" {
  cluster_plugstack language=enc
  # Without language=, the user's srun picks llm by the core's rule.
  conf=$(cluster_conf_variant mine)
  SLURM_CONF=$conf try_srun 4 'llm:tp=2; enc:tp=2' --time=1
  refused "uses grid 'llm' as the language module, but this site sets language=enc"
  # With the site's own configuration the same layout runs, with enc.
  check_layout 4 'llm:tp=2; enc:tp=2' --language enc
  grep -qx 'HCG_LANGUAGE=enc' "$OUT/task.0"
}

@test "inherited HCG_* variables never reach a task; user settings do" {
  HCG_RANK=0 HCG_WORLD_SIZE=2 HCG_OLD_TP_RANK=1 HCG_TIMEOUT=7 \
    run_tasks 1 'dp=*' --time=1
  [ "$status" -eq 0 ]
  grep -qx 'HCG_WORLD_SIZE=1' "$OUT/task.0"
  grep -qx 'HCG_TIMEOUT=7' "$OUT/task.0"
  ! grep -q '^HCG_OLD_' "$OUT/task.0"
  # Everything else is exactly what hcg explain gives.
  "$HCG" explain -n 1 'dp=*' --format json >"$OUT/explain.json"
  diff -u <(expected_env "$OUT/explain.json" 0) \
    <(grep -v '^HCG_TIMEOUT=' "$OUT/task.0")
}

@test "what the step's environment holds stands for a task's own only where the node computes it so" {
  # srun passes the shared variables (doc/plugin.md); values given with
  # --export replace them: wrong ones, and one no task has.
  run_tasks 8 'tp=2,dp=*' --time=1 \
    --export=ALL,HCG_WORLD_TP_SIZE=9,HCG_WORLD_DP_SIZE=4,HCG_WORLD_PP_SIZE=3,HCG_GRIDS=x
  [ "$status" -eq 0 ]
  "$HCG" explain -n 8 'tp=2,dp=*' --format json >"$OUT/explain.json"
  for r in 0 3 7; do
    diff -u <(expected_env "$OUT/explain.json" "$r") <(layout_vars "$OUT/task.$r")
  done
}

@test "a step without --hcg-layout gets no HCG_* variable but user settings" {
  run env HCG_RANK=0 HCG_WORLD_SIZE=2 HCG_LAYOUT=x HCG_TIMEOUT=7 \
    timeout -k 5 60 srun -n 1 --time=1 /bin/bash -c 'env | grep "^HCG_" | sort'
  [ "$status" -eq 0 ]
  [ "$output" = 'HCG_TIMEOUT=7' ]
}

@test "a nested step does not inherit the outer step's variables" {
  run timeout -k 5 60 srun -n 1 --overcommit --time=1 --hcg-layout='dp=*' \
    /bin/bash -c 'env | grep "^HCG_RANK="; env | grep -c "^HCG_" >/dev/null
                  srun -n 1 --overlap --time=1 /bin/bash -c "env | grep ^HCG_ | wc -l"'
  echo "$output"
  [ "$status" -eq 0 ]
  [ "${lines[0]}" = 'HCG_RANK=0' ]
  [ "${lines[1]}" = '0' ]
}
