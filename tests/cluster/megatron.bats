#!/usr/bin/env bats
# Megatron-LM's job script under real Slurm: the layout comes from
# Megatron's arguments (hcg layout --megatron), the tasks check their
# arguments against it and build Megatron's groups (HyperCommGrid before
# torch.distributed starts, to_megatron(), the MIMO topology). Run by
# tests/cluster/run.sh. Every srun is bounded by `timeout`.

load helpers

setup() {
  torch_setup
  HCG=$BUILD/runtime/hcg
}

# job N LAYOUT_ARGS TASK_ARGS: the job script, the launcher's layout from
# LAYOUT_ARGS, the tasks given TASK_ARGS (the same, unless a test says).
job() {
  local n=$1 largs=$2 targs=$3 layout
  layout=$("$HCG" layout --megatron "$largs" -n "$n") || return 1
  rm -f "$OUT"/out.* "$OUT"/err.*
  rendezvous # --mpi=pmix, or MASTER_ADDR/PORT where Slurm has no mpi_pmix
  # shellcheck disable=SC2086 # $targs is split as a job script splits $ARGS
  run timeout -k 5 150 srun -n "$n" --overcommit "${RDV[@]}" \
    --hcg-layout="$layout" --output="$OUT/out.%t" --error="$OUT/err.%t" \
    "$PY" -B "$BATS_TEST_DIRNAME/torch/megatron_job.py" $targs
}

outs() { cat "$OUT"/out.* 2> /dev/null; }

show() {
  echo "--- srun (status $status): $output"
  outs | head -n 20
  cat "$OUT"/err.* 2> /dev/null | head -n 40
}

@test "one model with experts: the layout from ARGS, the tasks agree and build Megatron's groups" {
  ARGS="--num-layers 4 --tensor-model-parallel-size 2 --pipeline-model-parallel-size 2 --expert-model-parallel-size 2 --bf16"
  job 8 "$ARGS" "$ARGS"
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(outs | grep -c '^ok .* tp=2 ep=2 layout=world@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=2;')" -eq 8 ] || { show; false; }
}

@test "arguments that disagree with the launcher's layout: every task refuses, naming the dim" {
  job 4 "--tensor-model-parallel-size 2" "--tensor-model-parallel-size 4 --use-tp-pp-dp-mapping"
  [ "$status" -ne 0 ]
  [ "$(outs | grep -c "^refused .*--tensor-model-parallel-size is 4, but grid 'world' has tp=2")" -eq 4 ] || { show; false; }
}

@test "MIMO: encoder and language module from the example's arguments, Megatron's topology" {
  ARGS="--encoder-tp 2 --encoder-dp 2 --llm-offset 4 --llm-tp 2 --llm-pp 2 --llm-dp 1"
  job 8 "$ARGS" "$ARGS"
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(outs | grep -c '^ok .* modules=encoder ')" -eq 4 ] || { show; false; }
  [ "$(outs | grep -c '^ok .* modules=language ')" -eq 4 ] || { show; false; }
  # Colocated, with experts: both modules on every rank (4 tasks: each job
  # of 8 costs CI about 40 s on 2 CPUs, most of it 8 imports of torch).
  ARGS="--encoder-tp 2 --encoder-dp 2 --llm-offset 0 --llm-tp 2 --llm-dp 2 --llm-ep 2"
  job 4 "$ARGS" "$ARGS"
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(outs | grep -c '^ok .* modules=encoder,language ')" -eq 4 ] || { show; false; }
}
