#!/usr/bin/env bats
# The plugin loads in srun, sbatch, salloc and slurmstepd, and its
# plugstack.conf arguments are parsed strictly: an error where a user runs a
# command, a log line on the node.

load helpers

teardown() {
  # Whatever a test did to the node's plugstack.conf, put it back.
  cluster_plugstack
}

@test "srun, sbatch and salloc --help list --hcg-layout" {
  for cmd in srun sbatch salloc; do
    run "$cmd" --help
    [ "$status" -eq 0 ]
    grep -qE -- '--hcg-layout=LAYOUT +\[hcg\]' <<<"$output"
  done
}

@test "the plugin is loaded in slurmstepd: only it can set HCG_RANK" {
  run srun -n 3 --overcommit --hcg-layout='tp=3' printenv HCG_RANK
  [ "$status" -eq 0 ]
  # One value a task: set on the node, task by task, not inherited from
  # srun (which never had HCG_RANK).
  [ "$(sort <<<"$output" | tr '\n' ' ')" = '0 1 2 ' ]
  [ -z "${HCG_RANK:-}" ]
}

@test "the plugin loads in sbatch: sbatch checks the layout itself" {
  run sbatch --hcg-layout='tp=' --wrap true
  [ "$status" -ne 0 ]
  grep -q '^sbatch: error: hcg: layout: column 4' <<<"$output"
}

# Every bad argument, in srun's plugstack.conf, fails srun, sbatch and
# salloc with a message naming it; no task runs.
@test "bad plugstack arguments fail srun, sbatch and salloc" {
  local -a bad=(
    'bogus=1|unknown argument .bogus=1.'
    'max_layout_bytes=0|max_layout_bytes=0: the value must be an integer from 1 to 65536'
    'max_layout_bytes=65537|max_layout_bytes=65537: the value must be an integer from 1 to 65536'
    'max_layout_bytes=12k|max_layout_bytes=12k: the value must be'
    'export_dims=maybe|export_dims=maybe: the value must be yes or no'
    'export_dims|argument .export_dims. needs a value'
    'language=Bad-Name|language=Bad-Name: the value must be a grid name'
    'export_dims=no export_dims=no|argument .export_dims. is given more than once'
    'placement=sometimes|placement=sometimes: the value must be off, warn or refuse'
    'intra_node_dims=tp,,cp|intra_node_dims=tp,,cp: the value must be dim names'
  )
  local i=0 entry args msg conf
  for entry in "${bad[@]}"; do
    args=${entry%%|*}
    msg=${entry#*|}
    i=$((i + 1))
    # shellcheck disable=SC2086
    conf=$(cluster_conf_variant "bad$i" $args)
    SLURM_CONF=$conf try_srun 2 'tp=2'
    refused "srun: error: hcg: plugstack.conf: $msg"
    SLURM_CONF=$conf run sbatch -n 2 --wrap "touch $MARKER"
    refused "sbatch: error: hcg: plugstack.conf: $msg"
    SLURM_CONF=$conf run salloc -n 2 touch "$MARKER"
    refused "salloc: error: hcg: plugstack.conf: $msg"
    # Even a step without --hcg-layout: a broken line must be fixed.
    SLURM_CONF=$conf run srun -n 1 touch "$MARKER"
    refused "hcg: plugstack.conf: $msg"
  done
}

@test "bad plugstack arguments on the node: logged, the job still runs" {
  # srun keeps a good configuration; slurmstepd reads the bad one.
  conf=$(cluster_conf_variant good)
  cluster_plugstack bogus=1 export_dims=perhaps
  SLURM_CONF=$conf check_layout 4 'tp=2,dp=*'
  grep -q "hcg: plugstack.conf: unknown argument 'bogus=1'.*(ignored on this node; the default is used)" \
    "$CLUSTER_LOGS/slurmd.log"
  grep -q "hcg: plugstack.conf: export_dims=perhaps: the value must be yes or no (ignored on this node" \
    "$CLUSTER_LOGS/slurmd.log"
  [ "$(cluster_node_state)" = idle ] || cluster_wait_idle 20
}

@test "export_dims=no: tasks get only the common variables" {
  cluster_plugstack export_dims=no
  run_tasks 8 'vision:tp=2,dp=2; llm:tp=2,dp=*'
  [ "$status" -eq 0 ]
  "$HCG" explain -n 8 'vision:tp=2,dp=2; llm:tp=2,dp=*' --format json >"$OUT/explain.json"
  for r in 0 3 4 7; do
    diff -u <(expected_env "$OUT/explain.json" "$r" |
      grep -E '^HCG_(VERSION|LAYOUT|RANK|WORLD_SIZE|GRIDS|LANGUAGE)=') "$OUT/task.$r"
  done
  [ "$(wc -l <"$OUT/task.5")" -eq 6 ]
}

@test "placement=off: no HCG_*_LOCAL; intra_node_dims= picks the dims checked" {
  cluster_plugstack placement=off
  run_tasks 4 'tp=2,dp=*'
  [ "$status" -eq 0 ]
  [ -s "$OUT/task.0" ]
  if grep '_LOCAL=' "$OUT/task.0"; then false; fi
  cluster_plugstack intra_node_dims=dp,pp
  run_tasks 4 'tp=2,dp=*,pp=1'
  [ "$status" -eq 0 ]
  grep -qx 'HCG_WORLD_DP_LOCAL=1' "$OUT/task.3"
  grep -qx 'HCG_WORLD_PP_LOCAL=1' "$OUT/task.3"
  if grep 'HCG_WORLD_TP_LOCAL' "$OUT/task.3"; then false; fi
}

@test "export_dims=yes is the default and can be spelled out" {
  cluster_plugstack export_dims=yes max_layout_bytes=16384
  check_layout 4 'tp=2,dp=*'
}

@test "language=NAME picks the language module" {
  cluster_plugstack language=enc
  check_layout 4 'enc:tp=2; dec:tp=2' --language enc
  grep -qx 'HCG_LANGUAGE=enc' "$OUT/task.3"
  try_srun 4 'llm:tp=2; dec:tp=2'
  refused "the language module 'enc' is not a grid of the layout \(grids: llm, dec\)"
  # It chooses among several grids: a one-grid layout still runs.
  check_layout 4 'tp=2,dp=*'
  grep -qx 'HCG_LANGUAGE=world' "$OUT/task.0"
}

@test "srun's language choice is what the node uses" {
  # Only srun's plugstack.conf names the language module; the node's has no
  # language= and would otherwise refuse a layout without llm/language.
  conf=$(cluster_conf_variant lang language=dec)
  SLURM_CONF=$conf check_layout 4 'enc:tp=2; dec:tp=2' --language dec
  grep -qx 'HCG_LANGUAGE=dec' "$OUT/task.0"
}

@test "max_layout_bytes bounds text and files" {
  conf=$(cluster_conf_variant small max_layout_bytes=32)
  SLURM_CONF=$conf check_layout 4 'tp=2,dp=*                       ' # 32 bytes
  SLURM_CONF=$conf try_srun 4 'tp=2,dp=*                        ' # 33 bytes
  refused 'is 33 bytes; the limit is 32 bytes \(max_layout_bytes in plugstack.conf\)'
  printf 'tp=2,dp=*\n# a comment that makes it long\n' >"$BATS_TEST_TMPDIR/long.layout"
  SLURM_CONF=$conf try_srun 4 "@$BATS_TEST_TMPDIR/long.layout"
  refused 'is 41 bytes; the limit is 32' 'max_layout_bytes=32'
}

@test "a raised max_layout_bytes admits a long layout" {
  conf=$(cluster_conf_variant big max_layout_bytes=65536)
  pad=$(head -c 40000 /dev/zero | tr '\0' ' ')
  SLURM_CONF=$conf check_layout 4 "tp=2,dp=*$pad"
}

@test "the shipped drop-in etc/plugstack.conf.d/hcg.conf works as is" {
  # It names the plugin without a path (found in PluginDir) and spells out
  # the default arguments.
  cluster_plugstack_raw "include $SRCDIR/etc/plugstack.conf.d/*.conf"
  check_layout 8 'vision:tp=2,dp=2; llm:tp=2,dp=*'
  run srun --help
  grep -q -- '--hcg-layout' <<<"$output"
}
