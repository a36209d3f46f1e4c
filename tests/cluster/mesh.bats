#!/usr/bin/env bats
# hcg.torch.device_mesh on real torch (Debian's python3-torch, gloo on the
# CPU) under srun --hcg-layout, 8 tasks: torch's DeviceMesh made of hcg's
# groups (check_mesh.py says what each job checks). Two short jobs, each
# bounded by `timeout`. A torch without DeviceMesh.from_group (Debian 12's
# 1.13) skips, saying why; the unit tests (contrib/python/tests/test_mesh.py)
# check its error, and a rank outside the grid. Run by
# tests/cluster/run.sh.

load helpers

GRID='llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp'
TITAN='llm:tp=2,cp=1,dp_shard=2,dp_replicate=2,pp=1; llm/expert:etp=1,ep=2,efsdp=*,dp_replicate,pp'

setup() {
  torch_setup
  "$PY" -c 'from torch.distributed.device_mesh import DeviceMesh; DeviceMesh.from_group' \
    2> /dev/null || skip "this torch has no DeviceMesh.from_group (PyTorch 2.4+)"
}

# mesh_run LAYOUT MODE: check_mesh.py MODE on 8 tasks.
mesh_run() {
  rm -f "$OUT"/out.* "$OUT"/err.*
  rendezvous
  export MESH_TEST_LAYOUT=$1
  run timeout -k 5 150 srun -n 8 --overcommit "${RDV[@]}" --hcg-layout="$1" \
    --output="$OUT/out.%t" --error="$OUT/err.%t" "$PY" -B "$SCRIPTS/check_mesh.py" "$2"
}

outs() { cat "$OUT"/out.* 2> /dev/null; }

show() {
  echo "--- srun (status $status): $output"
  outs | head -n 20
  cat "$OUT"/err.* 2> /dev/null | head -n 60
}

all_ok() {
  [ "$(outs | grep -c '^ok ')" -eq 8 ] || { show; return 1; }
  if outs | grep -q '^bad'; then show; return 1; fi
}

@test "4-D grid and its expert view: every mesh dim is hcg's group; DTensor; bad input; the job's store" {
  export MESH_SECRET_FILE=$BATS_TEST_TMPDIR/secret
  rm -f "$MESH_SECRET_FILE"
  mesh_run "$GRID" grid
  [ "$status" -eq 0 ] || { show; false; }
  all_ok
  if [ ${#RDV[@]} -gt 0 ]; then
    # With PMIx's broadcast the store is the job's own: an outsider that
    # reaches its port gets nothing, whichever way it asks.
    outs | grep -q '^ok 0 .* secret=yes outsider: tcpstore=refused raw=closed forged=refused$' ||
      { show; false; }
    # The secret is in no output of the job and no log of the cluster.
    local secret
    secret=$(cat "$MESH_SECRET_FILE")
    [ ${#secret} -eq 32 ] || { show; false; }
    [ -d "$CLUSTER_LOGS" ] && [ -s "$CLUSTER_LOGS/slurmd.log" ] || { echo "no cluster logs"; false; }
    if grep -rlF "$secret" "$OUT" "$CLUSTER_LOGS"; then
      echo "the job's secret is in the files above"
      false
    fi
  else
    outs | grep -q '^ok 0 .* secret=none' || { show; false; }
  fi
}

@test "torchtitan's meshes from hcg's groups; FSDP2 + TP train as one process" {
  mesh_run "$TITAN" titan
  [ "$status" -eq 0 ] || { show; false; }
  all_ok
  if outs | grep -q '^skip-fsdp'; then
    skip "meshes checked; FSDP2: $(outs | grep -m1 '^skip-fsdp' | cut -d' ' -f2-)"
  fi
  [ "$(outs | grep -c 'fsdp-losses=')" -eq 8 ] || { show; false; }
}
