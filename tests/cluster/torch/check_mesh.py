"""A task of tests/cluster/mesh.bats: hcg.torch.device_mesh on real torch.

    srun --hcg-layout=... python3 check_mesh.py grid|titan

grid: a 4-D grid with an expert view: every mesh dim's ranks, size, local
rank and group against hcg's enumeration, no group made by the mesh, a
DTensor all-gather and sum over every mesh dim, bad input refused with
nothing made; rank 0 also lets a process outside the job look into the
store. titan: torchtitan's meshes, then FSDP2 plus a tensor-parallel MLP
for 3 steps against the same model in this process alone (where torch's
FSDP2 runs on the CPU).

Prints "ok RANK ..." or "bad RANK: what" (exit 1); "skip-fsdp REASON" when
FSDP2 cannot run on the CPU with this torch.
"""

import os
import subprocess
import sys

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht
from hcg.torch._base import STATE

bad = []


def expect(cond, what):
    if not cond:
        bad.append(what)


def n_groups():
    """How many process groups torch knows (its registry; -1 if hidden)."""
    world = getattr(dist.distributed_c10d, "_world", None)
    pg_map = getattr(world, "pg_map", None)
    return -1 if pg_map is None else len(pg_map)


def check_mesh(L, rank, mesh, grid, view, dims, flat=()):
    """Each mesh dim (NAME, LAYOUT DIMS) against the layout."""
    import itertools

    coords = L.coords(rank, grid, view)
    arr = mesh.mesh
    expect(list(mesh.mesh_dim_names) == [n for n, _ in dims],
           "%s names %s" % (view, mesh.mesh_dim_names))
    for i, (name, names) in enumerate(dims + list(flat)):
        req = L.request_dims(list(names), grid, view)
        members = L.group_of_rank(req, rank).members
        sub = mesh[name]
        expect(sorted(sub.mesh.flatten().tolist()) == members and
               sub.mesh.flatten().tolist() == members,
               "%s[%s] ranks %s != %s" % (view, name, sub.mesh.tolist(), members))
        expect(sub.size() == len(members), "%s[%s] size" % (view, name))
        expect(sub.get_local_rank() == members.index(rank),
               "%s[%s] local rank" % (view, name))
        pg = sub.get_group()
        expect(dist.get_world_size(pg) == len(members) and
               dist.get_rank(pg) == members.index(rank),
               "%s[%s] group" % (view, name))
        if i < len(dims):
            expect(mesh.size(i) == len(members), "%s size(%d)" % (view, i))
            expect(mesh.get_local_rank(name) == members.index(rank),
                   "%s local rank %s" % (view, name))
    # Every entry of the N-D array: its coordinates along the mesh dims are
    # its index, along the others this rank's.
    by = {d.name: d for d in L.grid(grid).view(view).dims}
    for index in itertools.product(*[range(s) for s in arr.shape]):
        r = int(arr[index])
        c = L.coords(r, grid, view)
        for k, (_, names) in enumerate(dims):
            flat_c = 0
            for n in names:
                flat_c = flat_c * by[n].size + c[n]
            if flat_c != index[k]:
                expect(False, "%s mesh%s = %d" % (view, index, r))
        covered = {n for _, names in dims for n in names}
        if any(c[n] != coords[n] for n in by if n not in covered):
            expect(False, "%s mesh%s = %d is off this rank's slice" % (view, index, r))


def check_dtensor(L, rank, mesh, view, names):
    """An all-gather (Shard -> full) and a sum (Partial -> Replicate) over
    each named 1-D submesh."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    for name in names:
        sub = mesh[name]
        members = sub.mesh.flatten().tolist()
        t = torch.tensor([float(rank)], dtype=torch.float64)
        full = DTensor.from_local(t, sub, [Shard(0)]).full_tensor()
        expect(full.tolist() == [float(m) for m in members],
               "%s[%s] all-gather %s" % (view, name, full.tolist()))
        s = DTensor.from_local(t, sub, [Partial()]).redistribute(
            sub, [Replicate()]).to_local()
        expect(s.item() == float(sum(members)), "%s[%s] sum" % (view, name))


def refused(what, fn, kind=ValueError):
    before = n_groups()
    try:
        fn()
    except kind as exc:
        expect(isinstance(exc, hcg.HcgError), "%s: %r is no HcgError" % (what, exc))
    except Exception as exc:  # pylint: disable=broad-except
        expect(False, "%s: %s: %s" % (what, type(exc).__name__, exc))
    else:
        expect(False, "%s: accepted" % what)
    expect(n_groups() == before, "%s made groups" % what)


def outsider(host, port):
    """A process that is no task of the job (a clean environment, only the
    store's address) tries the store three ways: torch's own TCPStore
    client naming the keys hcg and torch write; a raw connection answering
    the greeting with random bytes; hcg's own client with a secret of its
    own. Returns what each got."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    code = r'''
import datetime, os, socket, sys
host, port = sys.argv[1], int(sys.argv[2])
t = datetime.timedelta(seconds=5)
keys = ["hcg/init/0/hcg_go", "hcg/init/0/hcg_arrived", "hcg/init/0/hcg_in/0",
        "hcg/init/0/hcg_decided", "default_pg/0//cpu//0", "0", "1"]

def tcpstore():
    # In a process of its own: a torch client may die of what it reads
    # (1.13's takes the greeting for a length: std::bad_alloc).
    import subprocess
    ask = ("import datetime, sys\n"
           "import torch.distributed as d\n"
           "keys = %r\n"
           "for kw in ({}, {'use_libuv': False}):\n"
           "    try:\n"
           "        s = d.TCPStore(sys.argv[1], int(sys.argv[2]), None, False,\n"
           "                       datetime.timedelta(seconds=5), **kw)\n"
           "        found = [k for k in keys if s.check([k])]\n"
           "        print('read:%%d:%%s' %% (s.num_keys(), ','.join(found)))\n"
           "        break\n"
           "    except Exception:\n"
           "        pass\n" % keys)
    out = subprocess.run([sys.executable, "-c", ask, host, str(port)],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         timeout=60, check=False).stdout.decode().strip()
    return out or "refused"

def raw():
    with socket.create_connection((host, port), timeout=15) as c:
        greeting = c.recv(64)
        c.sendall(os.urandom(68))
        try:
            more = c.recv(64)
        except OSError:
            more = b""
        return "closed" if greeting and not more else "answered"

def forged():
    from hcg.torch import store
    try:
        store.client(host, port, os.urandom(16), t)
        return "accepted"
    except Exception as exc:
        return "refused" if "refused this task" in str(exc) else "error:" + str(exc)

print("tcpstore=%s raw=%s forged=%s" % (tcpstore(), raw(), forged()))
'''
    out = subprocess.run([sys.executable, "-c", code, host, str(port)],
                         env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=90, check=False)
    return out.stdout.decode().strip().splitlines()[-1:] or ["no output"]


def secret_hidden(secret):
    """That this task's environment and command line do not hold the
    job's secret (hex, as it went through PMIx); rank 0 leaves it in
    MESH_SECRET_FILE for the test to search the logs with."""
    text = secret.hex()
    for k, v in os.environ.items():
        expect(text not in v, "secret in $" + k)
    with open("/proc/self/cmdline", "rb") as f:
        expect(text.encode() not in f.read(), "secret in cmdline")
    where = os.environ.get("MESH_SECRET_FILE")
    if where and STATE.task is not None and STATE.task.rank == 0:
        with open(where, "w") as f:
            f.write(text + "\n")


def grid_mode(task):
    L, rank = task.layout, task.rank
    pgs = ht.new_collection()
    before = n_groups()
    mesh = ht.device_mesh(["pp", "dp", "cp", "tp"],
                          flatten={"dp_cp": ["dp", "cp"]}, factory=pgs)
    emesh = ht.device_mesh(["pp", "expt_dp", "ep", "expt_tp"], view="expert",
                           factory=pgs)
    expect(n_groups() == before, "the meshes made %d groups" % (n_groups() - before))
    check_mesh(L, rank, mesh, "llm", "base",
               [(n, (n,)) for n in ("pp", "dp", "cp", "tp")],
               [("dp_cp", ("dp", "cp"))])
    check_mesh(L, rank, emesh, "llm", "expert",
               [(n, (n,)) for n in ("pp", "expt_dp", "ep", "expt_tp")])
    for name, field in (("tp", "tp"), ("cp", "cp"), ("dp", "dp"), ("pp", "pp"),
                        ("dp_cp", "dp_cp")):
        expect(mesh[name].get_group() is pgs[field],
               "mesh[%s] is not pgs.%s" % (name, field))
    for name, field in (("ep", "ep"), ("expt_dp", "expt_dp"),
                        ("expt_tp", "expt_tp")):
        expect(emesh[name].get_group() is pgs[field],
               "expert mesh[%s] is not pgs.%s" % (name, field))
    if hasattr(mesh, "_flatten"):
        again = mesh["dp", "cp"]._flatten("dp_cp")
        expect(again.get_group() is pgs.dp_cp, "_flatten made dp_cp again")
    # A combined dim, made of two layout dims.
    cmesh = ht.device_mesh(["pp", ("dp_cp", ("dp", "cp")), "tp"], factory=pgs)
    check_mesh(L, rank, cmesh, "llm", "base",
               [("pp", ("pp",)), ("dp_cp", ("dp", "cp")), ("tp", ("tp",))])
    expect(cmesh["dp_cp"].get_group() is pgs.dp_cp, "combined dp_cp")
    expect(n_groups() == before, "the meshes made groups")
    # torch's own init_device_mesh of the same shape (its groups made by
    # torch's new_group, through the job's store): the same N-D array, the
    # same members in every dim.
    from torch.distributed.device_mesh import init_device_mesh

    names = ("pp", "dp", "cp", "tp")
    theirs = init_device_mesh("cpu", tuple(mesh.size(i) for i in range(4)),
                              mesh_dim_names=names)
    expect(theirs.mesh.tolist() == mesh.mesh.tolist(),
           "init_device_mesh's array %s != %s" % (theirs.mesh.tolist(), mesh.mesh.tolist()))
    for name in names:
        t = torch.ones(1)
        dist.all_reduce(t, group=theirs.get_group(name))
        expect(int(t.item()) == mesh.size(names.index(name)),
               "init_device_mesh's %s group summed %s" % (name, t.item()))
    check_dtensor(L, rank, mesh, "base", ["pp", "dp", "cp", "tp", "dp_cp"])
    check_dtensor(L, rank, emesh, "expert", ["pp", "expt_dp", "ep", "expt_tp"])
    # Bad input: refused before anything is made.
    refused("a dim the grid lacks", lambda: ht.device_mesh(["pp", "xx"]))
    refused("a dim of another view", lambda: ht.device_mesh(["pp", "ep"]))
    refused("a dim twice", lambda: ht.device_mesh(["tp", "tp"]))
    refused("a combined dim fastest first",
            lambda: ht.device_mesh([("cp_tp", ("tp", "cp"))]))
    refused("a flattened dim out of order",
            lambda: ht.device_mesh(["pp", "dp", "cp", "tp"],
                                   flatten={"x": ["cp", "dp"]}))
    refused("an unknown view", lambda: ht.device_mesh(["tp"], view="nope"))
    refused("an unknown grid", lambda: ht.device_mesh(["tp"], grid="nope"))
    refused("a device type with an index",
            lambda: ht.device_mesh(["tp"], device_type="cuda:0"))
    expect(not ht.mesh.default_factory().keys(),
           "the refused calls made groups in the default factory")
    extra = ""
    place = STATE.places.rank(0, "the default group")  # rank 0's store
    secret = place.secret
    if secret is None:
        extra = " secret=none"
    else:
        secret_hidden(secret)
        if rank == 0:
            looked = outsider(place.host, place.port)[0]
            extra = " secret=yes outsider: " + looked
            expect(looked == "tcpstore=refused raw=closed forged=refused",
                   "outsider got " + looked)
    return "meshes=3 dims=%d%s" % (len(mesh.mesh_dim_names) + 4, extra)


def fsdp_support():
    """None when FSDP2 can train on the CPU with this torch, else why not
    (detected from the features it uses, never the version)."""
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        return "this torch has no torch.distributed.fsdp.fully_shard"
    if not hasattr(torch.cpu.Stream, "record_event"):
        return ("this torch's FSDP2 needs Stream.record_event, which its CPU "
                "stream lacks")
    return None


def mlp():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(8, 16, dtype=torch.float64),
                               torch.nn.ReLU(),
                               torch.nn.Linear(16, 8, dtype=torch.float64))


def train(model, x, y, steps, reduce_loss=None):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(reduce_loss(loss.detach()) if reduce_loss else loss.item())
    return losses


def titan_mode(task):
    L, rank = task.layout, task.rank
    want = ht.torchtitan_layout(dp_replicate=2, dp_shard=2, tp=2, ep=2,
                                world_size=task.world_size)
    expect(want == os.environ["MESH_TEST_LAYOUT"], "torchtitan_layout: " + want)
    before = n_groups()
    # torchtitan's default backend (spmd_types), then partial_dtensor (whose
    # dense mesh folds dp_shard and cp into fsdp).
    meshes = ht.torchtitan_meshes()
    pd = ht.torchtitan_meshes(spmd_backend="partial_dtensor")
    made = n_groups() - before
    base = [(n, (n,)) for n in ("pp", "dp_replicate", "dp_shard", "cp", "tp")]
    expect(sorted(meshes) == ["dataloading", "dense", "loss", "sparse",
                              "spmd_dense_for_fwdbwd", "spmd_sparse_for_fwdbwd",
                              "world"], "meshes %s" % sorted(meshes))
    expect(sorted(pd) == ["dataloading", "dense", "loss", "sparse", "world"],
           "partial_dtensor meshes %s" % sorted(pd))
    check_mesh(L, rank, meshes["dataloading"], "llm", "base",
               [("pp", ("pp",)), ("batch", ("dp_replicate", "dp_shard")),
                ("cp", ("cp",)), ("tp", ("tp",))])
    check_mesh(L, rank, meshes["loss"], "llm", "base",
               [("loss_mesh", ("dp_replicate", "dp_shard", "cp"))])
    check_mesh(L, rank, meshes["dense"], "llm", "base", base)
    check_mesh(L, rank, meshes["spmd_dense_for_fwdbwd"], "llm", "base",
               [("dp", ("dp_replicate", "dp_shard")), ("cp", ("cp",)), ("tp", ("tp",))])
    dense = pd["dense"]
    check_mesh(L, rank, dense, "llm", "base",
               [("pp", ("pp",)), ("dp_replicate", ("dp_replicate",)),
                ("fsdp", ("dp_shard", "cp")), ("tp", ("tp",))])
    check_mesh(L, rank, meshes["sparse"], "llm", "expert",
               [(n, (n,)) for n in ("pp", "dp_replicate", "efsdp", "ep")])
    check_mesh(L, rank, meshes["spmd_sparse_for_fwdbwd"], "llm", "expert",
               [(n, (n,)) for n in ("dp_replicate", "efsdp", "ep")])
    world = meshes["world"]
    expect(world.mesh.tolist() == list(range(task.world_size)) and
           dist.get_process_group_ranks(world.get_group()) == list(range(task.world_size)),
           "the world mesh")
    axes = ht.torchtitan_axes(meshes)
    expect(sorted(axes) == ["batch", "cp", "dp", "dp_replicate", "dp_shard", "efsdp",
                            "ep", "loss", "pp", "tp"], "axes %s" % sorted(axes))
    expect(sorted(ht.torchtitan_axes(pd)) == ["batch", "cp", "dp_replicate", "efsdp",
                                              "ep", "fsdp", "loss", "pp", "tp"],
           "partial_dtensor axes")
    expect(axes["tp"].get_group() is dense["tp"].get_group(), "tp shared")
    expect(axes["dp"].get_group() is axes["batch"].get_group(), "dp is batch")
    check_dtensor(L, rank, dense, "dense", ["dp_replicate", "fsdp", "tp"])
    check_dtensor(L, rank, meshes["sparse"], "sparse", ["efsdp", "ep"])
    # FSDP2 (HSDP over dp_replicate x fsdp) plus tensor parallel over tp.
    why = fsdp_support()
    if why is not None:
        print("skip-fsdp %s" % why)
        return "groups=%d" % made
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.tensor.parallel import (ColwiseParallel,
                                                   RowwiseParallel,
                                                   parallelize_module)

    torch.manual_seed(99)
    x = torch.randn(8, 8, dtype=torch.float64)
    y = torch.randn(8, 8, dtype=torch.float64)
    alone = train(mlp(), x, y, 3)
    model = parallelize_module(mlp(), dense["tp"], {"0": ColwiseParallel(),
                                                    "2": RowwiseParallel()})
    fully_shard(model, mesh=dense["dp_replicate", "fsdp"])
    b = axes["batch"]
    i, n = b.get_local_rank(), b.size()
    part = slice(i * 8 // n, (i + 1) * 8 // n)

    def mean_loss(loss):
        dist.all_reduce(loss, group=b.get_group())
        return loss.item() / n
    got = train(model, x[part], y[part], 3, mean_loss)
    expect(all(abs(a - g) <= 1e-6 for a, g in zip(alone, got)),
           "FSDP2+TP losses %s, one process %s" % (got, alone))
    return "groups=%d fsdp-losses=%s" % (made, ",".join("%.9f" % v for v in got))


def main():
    mode = sys.argv[1]
    task = ht.init(backend="gloo", timeout=60)
    note = {"grid": grid_mode, "titan": titan_mode}[mode](task)
    t = torch.tensor([float(len(bad))])
    dist.all_reduce(t)
    if bad or t.item():
        print("bad %d: %s (job total %d)" % (task.rank, "; ".join(bad), t.item()))
        return 1
    print("ok %d %s" % (task.rank, note))
    dist.barrier()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except hcg.HcgError as exc:
        print("bad hcg-error %s" % exc)
        sys.exit(1)
