#!/usr/bin/env bats
# hcg layout --megatron ARGS -n N: the layout Megatron-LM builds from its
# parallel arguments (one model, experts, gtp_remat, the order; MIMO), what
# the tasks then get (HCG_*_SIZE, the round trip to the sizes), and bad
# arguments (exit 2, the column and a caret).

setup() {
  HCG=${HCG:-hcg}
}

# layout ARGS N EXPECTED [OPTIONS...]
expect_layout() {
  local args=$1 n=$2 want=$3
  shift 3
  run "$HCG" layout --megatron "$args" -n "$n" "$@"
  [ "$status" -eq 0 ] || { echo "status $status: $output"; return 1; }
  [ "$output" = "$want" ] || { echo "'$args' -n $n: got $output, expected $want"; return 1; }
}

# size LAYOUT N RANK VAR: the value of HCG_VAR that task RANK gets
size_of() {
  "$HCG" env -n "$2" "$1" --rank "$3" | sed -n "s/^$4=//p"
}

@test "one model: the grid world and its expert view, dp what the world leaves" {
  expect_layout "--num-layers 24 --tensor-model-parallel-size 2 --bf16 --pipeline-model-parallel-size 4" 16 \
    'world@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=4;world/expert:expt_tp=2,ep=1,expt_gtp_remat=1,expt_dp=2,pp'
  # The groups are Megatron's order tp-cp-ep-dp-pp (doc/semantics.md 2).
  run "$HCG" enum -n 16 "$output" world:pp
  [ "$output" = '[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]' ]
  expect_layout "" 4 \
    'world@0:tp=1,gtp_remat=1,cp=1,dp=4,pp=1;world/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp'
}

@test "experts, context parallelism, gtp_remat and --use-tp-pp-dp-mapping" {
  expect_layout "--tensor-model-parallel-size=2 --context-parallel-size 2 --expert-model-parallel-size 4 --expert-tensor-parallel-size 1" 32 \
    'world@0:tp=2,gtp_remat=1,cp=2,dp=8,pp=1;world/expert:expt_tp=1,ep=4,expt_gtp_remat=1,expt_dp=8,pp'
  expect_layout "--tensor-model-parallel-size 2 --tensor-parallel-num-weight-shards 4 --expert-tensor-parallel-size 1 --expert-tensor-parallel-num-weight-shards 2 --expert-model-parallel-size 2" 16 \
    'world@0:tp=2,gtp_remat=2,cp=1,dp=4,pp=1;world/expert:expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=4,pp'
  expect_layout "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --use-tp-pp-dp-mapping" 8 \
    'world@0:tp=2,gtp_remat=1,cp=1,pp=2,dp=2;world/expert:expt_tp=2,ep=1,expt_gtp_remat=1,pp,expt_dp=2'
  run "$HCG" enum -n 8 "$output" world:dp
  [ "$output" = '[[0,4],[1,5],[2,6],[3,7]]' ]
}

@test "MIMO: an encoder at rank 0 and the language module, disjoint or colocated" {
  expect_layout "--encoder-tp 2 --encoder-dp 2 --llm-offset 4 --llm-tp 2 --llm-pp 2 --llm-dp 1" 8 \
    'radio@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=1;radio/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp;language@4:tp=2,gtp_remat=1,cp=1,dp=1,pp=2;language/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=2,pp' \
    --encoder-name radio
  expect_layout "--encoder-tp 4 --encoder-dp 2 --llm-offset 0 --llm-tp 2 --llm-dp 4 --llm-ep 2" 8 \
    'encoder@0:tp=4,gtp_remat=1,cp=1,dp=2,pp=1;encoder/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=8,pp;language@0:tp=2,gtp_remat=1,cp=1,dp=4,pp=1;language/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=4,pp'
  run "$HCG" explain -n 8 "$output" --format json
  [ "$(echo "$output" | jq -r .mode)" = colocated ]
  expect_layout "--llm-only --llm-offset 0 --llm-tp 2 --llm-pp 2 --llm-dp 2" 8 \
    'language@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=2;language/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp'
  # Megatron's example defaults for what is not given.
  run "$HCG" layout --megatron "--encoder-dp 2" -n 8
  [ "$status" -eq 0 ]
  [ "$output" = "$("$HCG" layout --megatron '--encoder-tp 2 --llm-offset 4 --llm-tp 2 --llm-dp 2' -n 8)" ]
}

@test "round trip: arguments -> layout -> the sizes each task gets" {
  l=$("$HCG" layout --megatron "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --expert-model-parallel-size 4" -n 16)
  [ "$(size_of "$l" 16 5 HCG_WORLD_TP_SIZE)" = 2 ]
  [ "$(size_of "$l" 16 5 HCG_WORLD_PP_SIZE)" = 2 ]
  [ "$(size_of "$l" 16 5 HCG_WORLD_DP_SIZE)" = 4 ]
  [ "$(size_of "$l" 16 5 HCG_WORLD_EXPERT_EP_SIZE)" = 4 ]
  [ "$(size_of "$l" 16 5 HCG_WORLD_EXPERT_EXPT_TP_SIZE)" = 2 ]
  [ "$(size_of "$l" 16 5 HCG_WORLD_EXPERT_EXPT_DP_SIZE)" = 1 ]
  l=$("$HCG" layout --megatron "--encoder-tp 2 --encoder-dp 2 --llm-offset 4 --llm-tp 2 --llm-dp 2 --llm-ep 2" -n 8)
  [ "$(size_of "$l" 8 1 HCG_GRIDS)" = encoder ]
  [ "$(size_of "$l" 8 1 HCG_ENCODER_TP_SIZE)" = 2 ]
  [ "$(size_of "$l" 8 6 HCG_GRIDS)" = language ]
  [ "$(size_of "$l" 8 6 HCG_LANGUAGE_DP_SIZE)" = 2 ]
  [ "$(size_of "$l" 8 6 HCG_LANGUAGE_EXPERT_EP_SIZE)" = 2 ]
  # And back to Megatron's arguments with the Python binding, when the
  # build's library is at hand (not for an installed hcg, nor a sanitizer
  # build, whose runtime python3 does not load first).
  lib=$(dirname "$HCG")/.libs/libhcg.so.1
  if [ -e "$lib" ] && [ -n "${HCG_SRCDIR:-}" ] && command -v python3 >/dev/null &&
     ! ldd "$lib" 2>/dev/null | grep -q 'lib[a-z]*san'; then
    run env HCG_LIBRARY="$lib" PYTHONPATH="$HCG_SRCDIR/contrib/python" python3 -B -c \
      "import hcg, hcg.torch as ht; print(' '.join(ht.megatron_args(hcg.Layout('$l', 8)).argv()))"
    [ "$status" -eq 0 ] || { echo "$output"; return 1; }
    [ "$output" = "--encoder-tp 2 --encoder-dp 2 --llm-offset 4 --llm-tp 2 --llm-cp 1 --llm-pp 1 --llm-dp 2 --llm-ep 2 --llm-expt-tp 1" ]
    [ "$("$HCG" layout --megatron "$output" -n 8)" = "$l" ]
  fi
}

@test "bad arguments: what, where, why, exit 2, nothing on stdout" {
  run "$HCG" layout --megatron "--bf16 --tensor-model-parallel-size two" -n 8
  [ "$status" -eq 2 ]
  [ "${lines[0]}" = "hcg: megatron arguments: column 37: --tensor-model-parallel-size wants an integer, got 'two'" ]
  [ "${lines[1]}" = "  --bf16 --tensor-model-parallel-size two" ]
  [ "${lines[2]}" = "                                      ^" ]
  run "$HCG" layout --megatron "--tensor-model-parallel-size 3" -n 8
  [ "$status" -eq 2 ]
  [ "$output" = "hcg: megatron arguments: the world of 8 ranks is not divisible by tp*gtp_remat*cp*pp = 3 (--tensor-model-parallel-size 3)" ]
  run "$HCG" layout --megatron "--expert-model-parallel-size 3" -n 8
  [ "$status" -eq 2 ]
  [[ "$output" == *"not divisible by expt_tp*ep*expt_gtp_remat*pp = 3"* ]]
  run "$HCG" layout --megatron "--encoder-tp 2 --llm-offset 2" -n 8
  [ "$status" -eq 2 ]
  [[ "$output" == *"fully share ranks or be disjoint: encoder [0, 4), language [2, 6)"* ]]
  run "$HCG" layout --megatron "--encoder-tp 2 --llm-offset 5" -n 9
  [ "$status" -eq 2 ]
  [[ "$output" == *"cover the world [0, 9) with no gaps"* ]]
  run "$HCG" layout --megatron "--num-distributed-optimizer-instances 2" -n 8
  [ "$status" -eq 2 ]
  run "$HCG" layout --megatron "--tensor-model-parallel-size" -n 8
  [ "$status" -eq 2 ]
  [[ "$output" == *"--tensor-model-parallel-size needs a value"* ]]
  # A long line is shown around the column.
  run "$HCG" layout --megatron "$(printf -- '--num-layers 2 %.0s' $(seq 20)) --context-parallel-size x" -n 8
  [ "$status" -eq 2 ]
  [[ "${lines[1]}" == "  ..."* ]]
  [ "$(( ${#lines[2]} ))" -le 82 ]
}

@test "usage: -n and --megatron are needed; help; warnings go to stderr" {
  run "$HCG" layout --megatron "--tensor-model-parallel-size 2"
  [ "$status" -eq 2 ]
  [[ "$output" == *"-n N is needed"* ]]
  run "$HCG" layout -n 8
  [ "$status" -eq 2 ]
  run "$HCG" layout -n 8 --megatron "" extra
  [ "$status" -eq 2 ]
  run "$HCG" layout --megatron "" -n 8 --encoder-name language
  [ "$status" -eq 2 ]
  run "$HCG" help layout
  [ "$status" -eq 0 ]
  [[ "$output" == *'srun --hcg-layout="$(hcg layout --megatron "$ARGS" -n $SLURM_NTASKS)"'* ]]
  run "$HCG" layout --help
  [ "$status" -eq 0 ]
  run "$HCG" --help
  [[ "$output" == *"hcg layout  --megatron ARGS -n N"* ]]
  # A stock argument beside the MIMO ones: a warning, and the layout alone on stdout.
  out=$("$HCG" layout --megatron "--tensor-model-parallel-size 4 --encoder-tp 2" -n 8 2>/dev/null)
  [[ "$out" == encoder@0:* ]]
  err=$("$HCG" layout --megatron "--tensor-model-parallel-size 4 --encoder-tp 2" -n 8 2>&1 >/dev/null)
  [[ "$err" == *"warning: --tensor-model-parallel-size is not used with Megatron's MIMO arguments"* ]]
}
