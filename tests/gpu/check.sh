#!/bin/sh
# check.sh [BUILD_DIR] - hcg.torch's NCCL groups on this machine's GPU:
# 2, 4 and 8 ranks sharing it, each with its own NCCL_HOSTID, the default
# group bound to the device and not, the classic NCCL backend and nccl2
# where torch has it; every group's all_reduce sum checked. Prints a table
# (tests/gpu/nccl_check.py says how), "SKIP: no CUDA device" without one.
# Bounded: 8 minutes in all (HCG_GPU_LIMIT seconds), 120 s a case.
#
# BUILD_DIR (default build): a built tree whose runtime/.libs/libhcg.so.1
# the binding loads (a --with-pmix=dlopen build runs where there is no
# PMIx, as on a lent GPU machine). Python: $PYTHON, else python3 (the one
# with CUDA's torch). CI has no GPU: it runs this and sees the skip.
#
# libhcg's own communicators (hcg_comm_create) need PMIx and Slurm:
# tests/cluster/gpu-bundle.sh brings both to such a machine, then
# tests/cluster/nccl.bats runs them.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$here/build}
py=${PYTHON:-python3}
if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    echo "SKIP: no CUDA device"
    exit 0
fi
lib=$build/runtime/.libs/libhcg.so.1
if [ ! -e "$lib" ]; then
    echo "check.sh: $lib is missing: build first (scripts/build.sh)" >&2
    exit 1
fi
logs=$(mktemp -d)
echo "logs: $logs"
HCG_LIBRARY=$lib PYTHONPATH=$here/contrib/python${PYTHONPATH:+:$PYTHONPATH} \
    timeout "${HCG_GPU_LIMIT:-480}" "$py" -B "$here/tests/gpu/nccl_check.py" --logs "$logs"
