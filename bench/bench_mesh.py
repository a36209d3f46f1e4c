"""One task of bench_mesh.sh: time one N-D DeviceMesh, made by
hcg.torch.device_mesh or by torch's init_device_mesh, of the same shape and
dim names.

    srun --hcg-layout=LAYOUT python3 bench_mesh.py hcg|torch

Both start from the same default group (hcg.torch.init, gloo) and a
barrier, and end with one all-reduce over every mesh dim (so a group that
connects lazily has connected when the clock stops). Where the time went
is measured too, by wrapping the calls: 'hcg': the members' meetings at
the store (_meet.meet) and torch's group construction (the way's make);
'torch': torch's new_group calls (how many, and their time). 'hcg':
hcg.torch.device_mesh(["pp", "dp", "cp", "tp"]): each rank makes its own
groups with their members, DeviceMesh.from_group builds the mesh. 'torch':
init_device_mesh("cpu", (pp, dp, cp, tp), mesh_dim_names=...), which makes
every dim's groups with the world taking part. Rank 0 prints "time MODE
SECONDS dims D parts NAME=SECONDS...", the slowest rank's time and its
parts.
"""

import os
import sys
import time

import torch
import torch.distributed as dist

import hcg.torch as ht

DIMS = ("pp", "dp", "cp", "tp")


class Parts:
    """Time spent in wrapped calls, by name, and how many calls."""

    def __init__(self) -> None:
        self.seconds: dict = {}
        self.calls: dict = {}

    def wrap(self, owner, attr: str, name: str) -> None:
        inner = getattr(owner, attr)

        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + \
                    time.perf_counter() - start
                self.calls[name] = self.calls.get(name, 0) + 1

        setattr(owner, attr, timed)


def instrument(mode: str) -> Parts:
    parts = Parts()
    if mode == "hcg":
        from hcg.torch import _meet, groups

        parts.wrap(_meet, "meet", "meet")
        way = groups.way()
        parts.wrap(way, "make", "make")
    else:
        import torch.distributed.device_mesh as dm

        owner = dm if hasattr(dm, "new_group") else dist
        parts.wrap(owner, "new_group", "new_group")
    return parts


def main() -> int:
    mode = sys.argv[1]
    task = ht.init(backend="gloo", timeout=600)
    parts = instrument(mode)
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
    mine = time.perf_counter() - t0
    # The slowest rank's time and parts: every rank learns which is slowest.
    slowest = torch.tensor([mine, float(task.rank)], dtype=torch.float64)
    every = [torch.zeros(2, dtype=torch.float64) for _ in range(task.world_size)]
    dist.all_gather(every, slowest)
    who = int(max(every, key=lambda t: t[0].item())[1].item())
    names = sorted(parts.seconds)
    mine_parts = torch.tensor([parts.seconds[n] for n in names] +
                              [float(parts.calls[n]) for n in names], dtype=torch.float64)
    if task.rank != who:
        mine_parts.zero_()
    dist.all_reduce(mine_parts)
    if task.rank == 0:
        k = len(names)
        said = " ".join("%s=%.4f/%d" % (n, mine_parts[i].item(), int(mine_parts[k + i].item()))
                        for i, n in enumerate(names))
        print("time %s %.4f dims %s parts %s" % (
            mode, max(t[0].item() for t in every),
            "x".join(str(sizes[n]) for n in DIMS), said), flush=True)
    dist.barrier()
    # Leave without tearing torch's groups down: on torch 2.6, gloo groups
    # freed at exit can abort the process (doc/torch.md, "Exiting
    # promptly"); hcg keeps its own groups' backends, torch's own are not.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
