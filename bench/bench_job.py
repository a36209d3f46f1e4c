"""One task of bench_job.sh: in ONE job, every group of the grid layout
made by hcg.torch and by torch's own ways, timed side by side, and what
each rank's store served.

    ulimit -n 1024; srun -n 64 --overcommit --mpi=pmix --hcg-layout=LAYOUT \
        python3 bench_job.py

The same job, one step after the other in this order, each from a barrier
and each ending with one all-reduce in every group it made (so that a group that
connects lazily has connected when the clock stops); every time is the
slowest rank's:

hcg          hcg.torch.new_collection(): every field of the language grid,
             its expert view and the embedding groups, made by their
             members alone (keys holding the same ranks share a group);
mesh_hcg     where torch has DeviceMesh.from_group (2.4+):
             hcg.torch.device_mesh of the grid's dims (pp, dp, cp, tp)
             with a factory of its own (fresh groups, not those hcg made
             above);
mesh_torch   init_device_mesh of the same dims, every dim's groups made
             with the world;
new_group    the same groups as hcg, the way Megatron-LM makes them: every
             rank calls torch.distributed.new_group for every group of
             every key (collective over the world), last, printing
             "progress new_group I of N groups after S s" as it goes.

BENCH_JOB_STEPS=NAME,... runs only those steps; BENCH_JOB_INIT=torch
starts with torch's own rendezvous (MASTER_ADDR/MASTER_PORT, a TCPStore)
instead of hcg.torch.init() and runs new_group alone, the control;
BENCH_JOB_STACKS=SECONDS dumps the Python stacks of the first and last
rank once a step has run that long. Rank 0 prints "time STEP SECONDS groups G" as each step ends and, before
new_group, "stores: ..." (the busiest store's proven connections and
requests, rank 0's, how many ranks' stores served anything) and "files: ..."
(the most descriptors any rank held open, and the soft limit the tasks ran
under).
"""

import faulthandler
import os
import resource
import sys
import time

import torch
import torch.distributed as dist

import hcg.torch as ht
from bench_torch import enumerations  # beside this file: the same groups
from hcg.torch._base import STATE

DIMS = ("pp", "dp", "cp", "tp")


def slowest(seconds: float) -> float:
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def touch(groups) -> None:
    """One all-reduce in each group (each process group once)."""
    seen = set()
    for pg in groups:
        if pg is None or id(pg) in seen:
            continue
        seen.add(id(pg))
        dist.all_reduce(torch.ones(1), group=pg)


def by_hcg() -> int:
    pgs = ht.new_collection()
    made = [pgs[f] for f in ht.ATTRIBUTES if pgs[f] is not None]
    touch(made)
    return len({id(pg) for pg in made})


def by_new_group(L, rank: int, say) -> int:
    enums = enumerations(L)
    every = [ranks for key in sorted(enums) for ranks in enums[key]]
    mine = []
    t0 = time.perf_counter()
    for i, ranks in enumerate(every, 1):
        pg = dist.new_group(ranks=ranks)
        if rank in ranks:
            mine.append(pg)
        # Where this way stands (rank 0's count: new_group is collective
        # over the world, so no rank is far ahead): a job cut short by its
        # time limit still says how far it got, and at what rate.
        if i % 16 == 0 or i == len(every):
            say("progress new_group %d of %d groups after %.1f s"
                % (i, len(every), time.perf_counter() - t0))
    touch(mine)
    return len(mine)


def mesh_torch(sizes) -> int:
    from torch.distributed.device_mesh import init_device_mesh

    mesh = init_device_mesh("cpu", tuple(sizes[n] for n in DIMS), mesh_dim_names=DIMS)
    touch(mesh.get_group(n) for n in DIMS)
    return len(DIMS)


def mesh_hcg() -> int:
    mesh = ht.device_mesh(list(DIMS), factory=ht.GroupFactory(shared=False))
    touch(mesh.get_group(n) for n in DIMS)
    return len(DIMS)


def has_device_mesh() -> bool:
    try:
        from torch.distributed.device_mesh import init_device_mesh  # noqa: F401
    except ImportError:
        return False
    from torch.distributed.device_mesh import DeviceMesh

    return hasattr(DeviceMesh, "from_group")


def report(task, sizes) -> None:
    """Rank 0 prints what every rank's own store served and the most
    descriptors a rank holds: after hcg's steps, before new_group's (whose
    store barriers would count too, and which may not end)."""
    rank = task.rank
    proven = requests = 0
    own = STATE.places.rank(rank, "this rank's") if STATE.places is not None else None
    if own is not None and own.rank == rank and own.secret is not None:
        from hcg.torch import store as jobstore

        proven, requests = jobstore.served(own.host, own.port, own.secret, rank)
    fds = len(os.listdir("/proc/self/fd"))
    every = [torch.zeros(4, dtype=torch.float64) for _ in range(task.world_size)]
    dist.all_gather(every, torch.tensor([proven, requests, fds, rank], dtype=torch.float64))
    if rank == 0:
        busiest = max(every, key=lambda v: (v[0].item(), v[1].item()))
        serving = sum(1 for v in every if v[1].item() > 0)
        print("stores: busiest rank %d proven %d requests %d; rank 0 proven %d requests "
              "%d; %d of %d ranks' stores served requests; all %d requests" % (
                  int(busiest[3]), int(busiest[0]), int(busiest[1]), int(every[0][0]),
                  int(every[0][1]), serving, task.world_size,
                  int(sum(v[1].item() for v in every))))
        print("files: most open in one rank %d; soft limit %d" % (
            int(max(v[2].item() for v in every)),
            resource.getrlimit(resource.RLIMIT_NOFILE)[0]))
        print("torch %s; %d tasks; mesh %s" % (torch.__version__, task.world_size,
                                               "x".join(str(sizes[n]) for n in DIMS)))
        sys.stdout.flush()


def torch_init():
    """BENCH_JOB_INIT=torch: torch's own rendezvous (a TCPStore at
    MASTER_ADDR:MASTER_PORT) in place of hcg.torch.init(), the control for
    the new_group step: the same job without hcg's stores."""
    import datetime

    import hcg.env

    task = hcg.env.from_environ()
    # Debian's torch 2.x is built without libuv, which env:// asks for
    # unless told otherwise (doc/torch.md).
    os.environ.setdefault("USE_LIBUV", "0")
    dist.init_process_group("gloo", init_method="env://", rank=task.rank,
                            world_size=task.world_size,
                            timeout=datetime.timedelta(seconds=900))
    return task


def main() -> int:
    t0 = time.perf_counter()
    by_torch = os.environ.get("BENCH_JOB_INIT") == "torch"
    task = torch_init() if by_torch else ht.init(backend="gloo", timeout=900)
    init_s = slowest(time.perf_counter() - t0)
    L, rank = task.layout, task.rank
    sizes = {d.name: d.size for d in L.grid(L.language).dims}

    def say(line: str) -> None:
        # Each step as soon as it is done: a job cut short by its time
        # limit still tells the steps that finished.
        if rank == 0:
            print(line, flush=True)

    # new_group last: on 2 CPUs its hundreds of world-wide calls may not
    # end within the job's limit, and the steps before it should.
    steps = [("hcg", by_hcg)]
    if has_device_mesh():
        steps += [("mesh_hcg", mesh_hcg), ("mesh_torch", lambda: mesh_torch(sizes))]
    steps += [("new_group", lambda: by_new_group(L, rank, say))]
    # BENCH_JOB_STEPS=a,b runs only those steps; BENCH_JOB_STACKS=S has the
    # first and the last rank print every thread's Python stack to stderr
    # once a step has run S seconds (where a step that does not end waits).
    only = "new_group" if by_torch else os.environ.get("BENCH_JOB_STEPS", "")
    if only:
        steps = [(n, f) for n, f in steps if n in only.split(",")]
    stacks = float(os.environ.get("BENCH_JOB_STACKS", "0") or 0)

    say("time init %.4f groups 1" % init_s)
    for name, step in steps:
        if name == "new_group":
            report(task, sizes)
        dist.barrier()
        t = time.perf_counter()
        if stacks > 0 and rank in (0, task.world_size - 1):
            faulthandler.dump_traceback_later(stacks, file=sys.stderr)
        groups = step()
        faulthandler.cancel_dump_traceback_later()
        say("time %s %.4f groups %d" % (name, slowest(time.perf_counter() - t), groups))
    dist.barrier()
    # Leave without tearing torch's groups down (doc/torch.md, "Exiting
    # promptly"): gloo groups freed at exit can abort on torch 2.6.
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
