#!/usr/bin/env bats
# libhcg's NCCL communicators on the private cluster: where a GPU exists,
# hcg-hello creates every communicator of the rank's collections through
# one exchange, all-reduces on each and checks the sums; otherwise the test
# says why it skips ("SKIP: no CUDA device"). Run by tests/cluster/run.sh.

load runtime

setup() {
  runtime_setup
}

# skip_without_gpu: skips, saying why, when hcg-hello found no device or
# libhcg has no NCCL.
skip_without_gpu() {
  if task_out | grep -q '^comms [0-9]* skipped: HCG_ECUDA'; then
    echo "SKIP: no CUDA device" >&3
    skip "SKIP: no CUDA device"
  fi
  if task_out | grep -q '^comms [0-9]* skipped: HCG_ENOTSUP'; then
    echo "SKIP: libhcg built without NCCL" >&3
    skip "SKIP: libhcg built without NCCL"
  fi
}

# The GPUs this node shows (NCCL wants one rank per GPU in a communicator).
gpu_count() {
  nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
}

@test "communicators for every group, and an all-reduce on each" {
  local n layout
  n=$(gpu_count)
  if [ "${n:-0}" -ge 8 ]; then
    n=8
    layout='llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp'
  elif [ "${n:-0}" -ge 2 ]; then
    layout="llm:tp=2,dp=*"
    n=$((n / 2 * 2))
  elif [ "${n:-0}" -eq 1 ]; then
    layout="llm:tp=1,dp=1" # one rank: singleton communicators
  else
    n=8 # no GPU seen: hcg-hello itself must say so
    layout='llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp'
  fi
  hello "$n" "$layout" --timeout 60
  skip_without_gpu
  [ "$status" -eq 0 ] || { show; false; }
  check_groups "$n" "$layout"
  # Every group line has its communicator, and every all-reduce summed
  # the members' rank+1.
  [ "$(task_out | grep -c '^comm .* allreduce=ok')" -eq "$(task_out | grep -c '^group ')" ]
  if task_out | grep -q 'allreduce=FAILED'; then false; fi
  # The exchange printed (1), then hcg_comm_create's exchange and
  # agreement (2): three fences in all.
  [ "$(fence_counts)" = 3 ]
}

@test "GPU: every option reaches NCCL and the communicators work (one task)" {
  # One rank per communicator: the option mapping, non-blocking init,
  # finalize and destroy for real, wherever one GPU is enough.
  local opts
  for opts in "min_ctas=4" "min_ctas=2 max_ctas=8" "max_ctas=2" \
    "cga_cluster_size=2" "split_share=1" "collnet_enable=0" \
    "traffic_class=0" "net_name=Socket" "high_priority=1"; do
    local args=() o
    for o in $opts; do args+=(--comm-option "$o"); done
    hello 1 'llm:tp=1,dp=1' --timeout 60 "${args[@]}"
    skip_without_gpu
    [ "$status" -eq 0 ] || { echo "options: $opts"; show; false; }
    [ "$(task_out | grep -c '^comm .* allreduce=ok')" -eq "$(task_out | grep -c '^group ')" ] || {
      echo "options: $opts"
      show
      false
    }
  done
}

# scalable_tasks: the task count for the bounded fan-in cases: every GPU up
# to 8 (one rank per GPU in a communicator), or 4 where none is seen
# (hcg-hello must then say so). Skips, saying why, with 1 or 2 GPUs: a
# group cut into slices of HCG_FANIN=2 needs 3 members.
scalable_tasks() {
  local n
  n=$(gpu_count)
  if [ "${n:-0}" -eq 0 ]; then
    echo 4
  elif [ "$n" -lt 3 ]; then
    echo "SKIP: ncclCommInitRankScalable with several ids needs 3 GPUs, found $n" >&3
    echo 0
  else
    echo $((n > 8 ? 8 : n))
  fi
}

@test "GPU: bounded fan-in: ncclCommInitRankScalable with several ids, one id within the bound, all-reduces checked" {
  # HCG_FANIN=2: the dp group of N > 2 members is cut into ceil(N/2)
  # slices and formed with as many ids (ncclCommInitRankScalable, NCCL
  # 2.23+); the tp groups of one member, within the bound, with one id.
  local n
  n=$(scalable_tasks)
  [ "$n" -gt 0 ] || skip "fewer than 3 GPUs"
  HCG_FANIN=2 hello "$n" 'llm:tp=1,dp=*' --timeout 60
  skip_without_gpu
  [ "$status" -eq 0 ] || { show; false; }
  check_groups "$n" 'llm:tp=1,dp=*'
  [ "$(task_out | grep -c '^comm .* allreduce=ok')" -eq "$(task_out | grep -c '^group ')" ]
  if task_out | grep -q 'allreduce=FAILED'; then false; fi
}

@test "GPU: bounded fan-in: a failing NCCL initialization with several ids aborts every member, within the timeout" {
  # A network NCCL does not have fails every rank's initialization; each
  # aborts its communicators and says so, none waits for the timeout.
  local n t0=$SECONDS
  n=$(scalable_tasks)
  [ "$n" -gt 0 ] || skip "fewer than 3 GPUs"
  HCG_FANIN=2 hello "$n" 'llm:tp=1,dp=*' --timeout 40 --comm-option net_name=NoSuchNet
  skip_without_gpu
  [ "$status" -ne 0 ] || { show; false; }
  [ "$(task_err | grep -c 'HCG_ENCCL')" -ge "$n" ] || { show; false; }
  [ $((SECONDS - t0)) -lt 40 ]
}
