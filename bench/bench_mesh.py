"""One task of bench_mesh.sh: time one N-D DeviceMesh, made by
hcg.torch.device_mesh or by torch's init_device_mesh, of the same shape and
dim names.

    srun --hcg-layout=LAYOUT python3 bench_mesh.py hcg|torch

Both start from the same default group (hcg.torch.init, gloo) and a
barrier, and end with one all-reduce over every mesh dim (so a group that
connects lazily has connected when the clock stops). 'hcg':
hcg.torch.device_mesh(["pp", "dp", "cp", "tp"]): each rank makes its own
groups with their members, DeviceMesh.from_group builds the mesh. 'torch':
init_device_mesh("cpu", (pp, dp, cp, tp), mesh_dim_names=...), which makes
every dim's groups with the world taking part. Rank 0 prints "time MODE
SECONDS dims D", the slowest rank's time.
"""

import os
import sys
import time

import torch
import torch.distributed as dist

import hcg.torch as ht

DIMS = ("pp", "dp", "cp", "tp")


def main() -> int:
    mode = sys.argv[1]
    task = ht.init(backend="gloo", timeout=600)
    L = task.layout
    sizes = {d.name: d.size for d in L.grid(L.language).dims}
    dist.barrier()
    t0 = time.perf_counter()
    if mode == "hcg":
        mesh = ht.device_mesh(list(DIMS))
    else:
        from torch.distributed.device_mesh import init_device_mesh
        mesh = init_device_mesh("cpu", tuple(sizes[n] for n in DIMS),
                                mesh_dim_names=DIMS)
    for name in DIMS:
        t = torch.ones(1)
        dist.all_reduce(t, group=mesh.get_group(name))
    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if task.rank == 0:
        print("time %s %.4f dims %s" % (mode, elapsed.item(),
                                        "x".join(str(sizes[n]) for n in DIMS)),
              flush=True)
    dist.barrier()
    # Leave without tearing torch's groups down: on torch 2.6, gloo groups
    # freed at exit can abort the process (doc/torch.md, "Exiting
    # promptly"); hcg keeps its own groups' backends, torch's own are not.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
