"""One rank of a local torch job for test_torch.py (not a test module).

    python3 -m tests.torch_worker SCENARIO RANK WORLD PORT [ARG]

Starts torch.distributed (gloo, CPU) on a TCPStore at 127.0.0.1:PORT, runs
one scenario and prints one line "RESULT <json>"; exits 0 when the scenario
ran (its checks are in the JSON), 3 on an unexpected exception.
"""

from __future__ import annotations

import datetime
import os
import json
import sys
import traceback

import hcg

from tests import binding_worker


def check_collections(rank: int, world: int, layout: str,
                      share_equal: bool = True) -> dict:
    import torch
    import torch.distributed as dist
    import hcg.torch as ht

    L = hcg.Layout(layout, world)
    cols = ht.new_collections(L, timeout=60, share_equal=share_equal)
    bad, checked = [], 0
    for name, pgs in cols.items():
        inside = L.grid(name).contains(rank)
        for field in ht.ATTRIBUTES:
            pg, members = pgs[field], pgs.ranks[field]
            if members is None:
                if pg is not None:
                    bad.append("%s.%s: a group without members" % (name, field))
                continue
            if not inside:
                bad.append("%s.%s: a group outside the grid" % (name, field))
            want = (L.embedding_group(rank, field) if field in hcg.EMBEDDINGS
                    else L.group_of_rank(pgs.keys[field], rank).members)
            if members != want:
                bad.append("%s.%s: members %s, want %s" % (name, field, members, want))
            if dist.get_world_size(pg) != len(want):
                bad.append("%s.%s: size %d" % (name, field, dist.get_world_size(pg)))
            if dist.get_rank(pg) != want.index(rank):
                bad.append("%s.%s: group rank %d" % (name, field, dist.get_rank(pg)))
            if hasattr(dist, "get_process_group_ranks") and \
                    sorted(dist.get_process_group_ranks(pg)) != want:
                bad.append("%s.%s: get_process_group_ranks" % (name, field))
            t = torch.tensor([float(rank)], dtype=torch.float64)
            dist.all_reduce(t, group=pg)
            if t.item() != sum(want):
                bad.append("%s.%s: all_reduce %g, want %d" % (name, field, t.item(), sum(want)))
            checked += 1
    if cols.modules_of_rank() != L.grids_of_rank(rank):
        bad.append("modules_of_rank %s, want %s" % (cols.modules_of_rank(),
                                                    L.grids_of_rank(rank)))
    # The members of the groups this rank leads (is the first member of,
    # one-rank groups too), from the collections' own ranks.
    led = sorted({m for pgs in cols.values() for field in ht.ATTRIBUTES
                  if pgs.ranks[field] is not None and pgs.ranks[field][0] == rank
                  for m in pgs.ranks[field]})
    # Aliases share one object; one object per key, and with share_equal
    # one per set of ranks.
    objects, by_ranks = {}, {}
    for pgs in cols.values():
        for field in ht.ATTRIBUTES:
            if pgs[field] is not None:
                if objects.setdefault(pgs.keys[field], pgs[field]) is not pgs[field]:
                    bad.append("two objects for key %s" % pgs.keys[field])
                by_ranks.setdefault(tuple(pgs.ranks[field]), set()).add(id(pgs[field]))
    if share_equal and any(len(ids) > 1 for ids in by_ranks.values()):
        bad.append("equal ranks in distinct objects: %s"
                   % [r for r, ids in by_ranks.items() if len(ids) > 1])
    factory = next(iter(cols.values())).factory
    factory.destroy()
    return {"bad": bad, "checked": checked, "groups": len(objects),
            "objects": len({id(g) for g in objects.values()}),
            "rank_sets": len(by_ranks), "led": led}


def check_places_load(rank: int, world: int, layout: str) -> dict:
    """check_collections where each group meets at its first member's
    store (HCG_TEST_PLACES=1), then what this rank's own store served:
    connections proven and requests, and the members of the groups this
    rank leads."""
    from hcg.torch import store as jobstore
    from hcg.torch._base import STATE

    out = check_collections(rank, world, layout)
    out["read"] = STATE.places.read  # the publications it read
    place = STATE.places.rank(rank, "stats")
    stats = jobstore.stats(place.host, place.port, place.secret, rank)
    out["proven"], out["requests"] = stats["proven"], stats["requests"]
    out["forwarded"] = stats["forwarded"]
    return out


class Recorder:
    """Every byte that passes between the job's processes and one store,
    both ways, appended to a file: a proxy on a port of its own, whose
    address the rank publishes instead of its store's (HCG_TEST_WIRE), so
    that members and other stores' links all go through it."""

    def __init__(self, port: int, path: str) -> None:
        import socket
        import threading

        self.target = port
        self.out = open(path, "ab")
        self.lock = threading.Lock()
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading

        while True:
            try:
                inside, _ = self.listener.accept()
                outside = socket.create_connection(("127.0.0.1", self.target))
            except OSError:
                continue
            for a, b in ((inside, outside), (outside, inside)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, src, dst) -> None:
        import socket

        try:
            while True:
                data = src.recv(1 << 16)
                if not data:
                    break
                with self.lock:
                    self.out.write(data)
                    self.out.flush()
                dst.sendall(data)
        except OSError:
            pass
        for sock in (src, dst):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def check_collections_per_key(rank: int, world: int, layout: str) -> dict:
    return check_collections(rank, world, layout, share_equal=False)


def check_grid(rank: int, world: int, _arg: str) -> dict:
    import torch
    import torch.distributed as dist
    import hcg.torch as ht

    out = {}
    grid = ht.HyperCommGrid([2, 2, 2], ["a", "b", "c"])
    out["enum_ab"] = grid.get_rank_enum(["a", "b"])
    pg = grid.create_pg(["b", "a"], timeout=60)
    out["key_ab"] = list(grid._pgs)
    out["same_get"] = grid.get_pg(["a", "b"]) is pg
    t = torch.tensor([1.0])
    dist.all_reduce(t, group=pg)
    out["ab_sum"] = t.item()
    grid.create_pg("a", timeout=60)
    for what, call in (("again", lambda: grid.create_pg("a")),
                       ("get_missing", lambda: grid.get_pg("c")),
                       ("bad_view", lambda: grid.create_pg("a", view="nope"))):
        try:
            call()
            out[what] = "no error"
        except KeyError as exc:
            out[what] = "KeyError: " + str(exc)
    out["raw_ab"] = grid._gen_rank_enum(["a", "b"])
    grid.register_view("alt", [4, 2], ["e", "c"], shared_dims=["c"])
    base_c = grid.create_pg("c")
    out["shared_reused"] = grid.get_pg("c", view="alt") is base_c
    out["alt_e"] = grid.get_rank_enum("e", view="alt")
    for what, call in (("shape", lambda: ht.HyperCommGrid([2, 0], ["x", "y"])),
                       ("shared_size", lambda: grid.register_view(
                           "v2", [2, 4], ["e", "c"], shared_dims=["c"]))):
        try:
            call()
            out[what] = "no error"
        except ValueError as exc:
            out[what] = "ValueError: " + str(exc)
    try:
        ht.HyperCommGrid([4, 4], ["x", "y"])
        out["oversized"] = "no error"
    except RuntimeError as exc:
        out["oversized"] = "RuntimeError: " + str(exc)
    # A grid on part of the world: others get None and make no call.
    part = ht.HyperCommGrid([2, 2], ["tp", "dp"], rank_offset=4)
    pg = part.create_pg("tp", timeout=60)
    out["part_member"] = pg is not None
    grid.destroy()
    part.destroy()
    return out


def check_errors(rank: int, world: int, _arg: str) -> dict:
    import hcg.torch as ht
    from hcg.env import TaskEnv

    out = {}
    for what, call in (
            ("world", lambda: ht.new_collection(hcg.Layout("tp=2,dp=*", world * 2))),
            ("rank", lambda: ht.new_collection(TaskEnv(hcg.Layout("tp=2,dp=*", world),
                                                       (rank + 1) % world))),
            ("type", lambda: ht.new_collection(42)),
            ("options", lambda: ht.GroupFactory("tp=2,dp=*", options_fn=lambda k: {"colour": 1})
             .collection()),
            ("timeout", lambda: ht.GroupFactory("tp=2,dp=*", timeout=-1)),
            ("init", lambda: ht.init())):
        try:
            call()
            out[what] = "no error"
        except hcg.HcgError as exc:
            out[what] = "%s: %s" % (exc.name, exc.message)
            out[what + "_is"] = sorted(
                t.__name__ for t in (ValueError, TypeError, KeyError,
                                     TimeoutError, RuntimeError)
                if isinstance(exc, t))
    return out


def check_bridge(rank: int, world: int, layout: str) -> dict:
    """A colocated fan-in bridge as a torch module: forward gathers the
    src shards of the rank's gather group, backward hands each its slice;
    the autograd step is one class whatever the call."""
    import torch
    import hcg.torch as ht

    L = hcg.Layout(layout, world)
    br = ht.ColocatedBridge("vision", "llm", source=L)

    def rows(r: int) -> "torch.Tensor":
        return (10.0 * r + torch.arange(2.0)).view(2, 1)

    out = {"module": isinstance(br, torch.nn.Module), "repr": repr(br)}
    members = L.bridge("vision").group_of_rank(rank)
    x = rows(rank).requires_grad_()
    y = torch.nn.Sequential(br)(x)
    out["forward"] = torch.equal(y.detach(), torch.cat([rows(m) for m in members]))
    y.backward(torch.arange(4.0).view(4, 1))
    at = 2 * members.index(rank)
    out["backward"] = x.grad.view(-1).tolist() == [float(at), float(at + 1)]
    again = br(rows(rank).requires_grad_())
    out["one_function"] = type(again.grad_fn) is type(y.grad_fn)
    return out


def check_missing(rank: int, world: int, arg: str) -> dict:
    """Rank int(arg) never makes its groups; the others must time out
    naming the group and the missing rank."""
    import hcg.torch as ht

    if rank == int(arg):
        import time
        time.sleep(8)
        return {"skipped": True}
    try:
        ht.new_collection(hcg.Layout("tp=2,dp=*", world), timeout=3)
        return {"error": None}
    except hcg.HcgError as exc:
        return {"error": "%s: %s" % (exc.name, exc.message)}


def check_missing_host_leaves(rank: int, world: int, arg: str) -> dict:
    """check_missing on the job store, where rank 0 leaves (its process,
    and so its store, ends) the moment its call fails, while the others
    are slow to read the outcome they were woken for (each read of a
    step's outcome waits 1 s first, as on a busy node). Every member that
    met rank 0 must still name the missing rank: rank 0 waits for them
    to have read it (groups._Build._outlast)."""
    import time
    import hcg.torch as ht
    from hcg.torch import _store_client

    if rank == int(arg):
        time.sleep(8)
        return {"skipped": True}
    if rank != 0:
        base = _store_client.JobStore

        def slow_get(self, key):
            name = key.decode() if isinstance(key, bytes) else key
            if name.endswith("hcg_go"):
                time.sleep(1)
            return base.get(self, key)

        _store_client.JobStore = type("SlowJobStore", (base,), {"get": slow_get})
    start = time.monotonic()
    try:
        ht.new_collection(hcg.Layout("tp=2,dp=*", world), timeout=3)
        out = {"error": None}
    except hcg.HcgError as exc:
        out = {"error": "%s: %s" % (exc.name, exc.message)}
    out["seconds"] = time.monotonic() - start
    if rank == 0:
        print("RESULT " + json.dumps(out), flush=True)
        os._exit(0)  # at once: its store goes with it
    return out


def check_uneven(rank: int, world: int, _arg: str) -> dict:
    """Ranks that made different numbers of groups before meet in one:
    rank 0 first makes a group of its own, then 0 and 1 make [0, 1] and 2
    and 3 make [2, 3], which they all-reduce over (torch 2.6 and 2.14 name
    a members-only group after how many groups the process made, so their
    public call deadlocks here)."""
    import torch
    import torch.distributed as dist
    import hcg.torch as ht
    from hcg.torch import groups

    out = {"way": groups.way().name}
    if rank == 0:
        alone = ht.GroupFactory(hcg.Layout("tp=1,dp=*", world), timeout=30).group("tp")
        out["alone"] = dist.get_world_size(alone)
    pair = ht.GroupFactory(hcg.Layout("tp=2,dp=*", world), timeout=30).group("tp")
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=pair)
    out["pair_sum"] = t.item()
    out["pair_rank"] = dist.get_rank(pair)
    return out


def check_peer_fails(rank: int, world: int, _arg: str) -> dict:
    """Rank 1 gives up on its first group after 1 s (rank 0 comes 4 s
    late); the others, with 120 s, must learn it at once, naming rank 1."""
    import time
    import hcg.torch as ht

    if rank == 0:
        time.sleep(4)
    return _how_it_failed(lambda: ht.new_collection(hcg.Layout("tp=2,dp=*", world),
                                                    timeout=1 if rank == 1 else 120))


def check_node_local(rank: int, world: int, _arg: str) -> dict:
    """ProcessGroups.node_local and .domain_local: the TaskEnv's verdicts
    for the grid's dims, nothing for a bare layout."""
    import hcg.torch as ht
    from hcg.env import TaskEnv

    task = TaskEnv(hcg.Layout("tp=%d" % world, world), rank,
                   {"world:tp": rank == 0}, {"world:tp": True})
    from_task = ht.GroupFactory(task).collection()
    bare = ht.GroupFactory(hcg.Layout("tp=%d" % world, world)).collection()
    return {"task": from_task.node_local, "layout": bare.node_local,
            "task_domain": from_task.domain_local,
            "layout_domain": bare.domain_local}


def check_mesh_outside(rank: int, world: int, layout: str) -> dict:
    """hcg.torch.device_mesh with two grids side by side: a rank refused
    the grid without it (MeshError, no group made), its own grid's mesh,
    and bad input refused before any group is made."""
    import torch.distributed as dist
    import hcg.torch as ht

    L = hcg.Layout(layout, world)
    fac = ht.GroupFactory(L, timeout=60)
    mine = [g.name for g in L.grids if g.contains(rank)][0]
    other = [g.name for g in L.grids if not g.contains(rank)][0]
    out = {"errors": {}}
    for what, call in (
            ("outside", lambda: ht.device_mesh(["tp"], grid=other, factory=fac)),
            ("no dim", lambda: ht.device_mesh(["tp", "xx"], grid=mine, factory=fac)),
            ("twice", lambda: ht.device_mesh(["tp", "tp"], grid=mine, factory=fac)),
            ("flatten", lambda: ht.device_mesh(["dp", "tp"], grid=mine, factory=fac,
                                               flatten={"x": ["tp", "dp"]})),
            ("view", lambda: ht.device_mesh(["tp"], grid=mine, view="nope",
                                            factory=fac)),
            ("dims", lambda: ht.device_mesh("tp", grid=mine, factory=fac)),
            ("factory", lambda: ht.device_mesh(["tp"], grid=mine, factory=3))):
        try:
            call()
            out["errors"][what] = "no error"
        except ValueError as exc:
            out["errors"][what] = "%s %s: %s" % (
                type(exc).__name__, getattr(exc, "name", "?"), exc)
    out["made"] = fac.keys()
    mesh = ht.device_mesh(["dp", "tp"], grid=mine, factory=fac)
    out["mesh"] = mesh.mesh.tolist()
    out["tp"] = dist.get_process_group_ranks(mesh["tp"].get_group())
    out["want_tp"] = L.group_of_rank(L.request_dims(["tp"], mine), rank).members
    return out


def check_torch_groups(rank: int, world: int, _arg: str) -> dict:
    """torch's own groups after init (made by torch through the store, which
    the caller no longer references: torch holds it from C++ only)."""
    import gc

    import torch
    import torch.distributed as dist

    gc.collect()
    out = {}
    t = torch.ones(1)
    dist.all_reduce(t, group=dist.new_group(list(range(world))))
    out["world_sum"] = t.item()
    pairs = [dist.new_group([2 * i, 2 * i + 1]) for i in range(world // 2)]
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=pairs[rank // 2])
    out["pair_sum"] = t.item()
    try:
        from torch.distributed.device_mesh import init_device_mesh
    except ImportError:
        return out
    mesh = init_device_mesh("cpu", (world // 2, 2), mesh_dim_names=("dp", "tp"))
    t = torch.ones(1)
    dist.all_reduce(t, group=mesh.get_group("dp"))
    out["mesh_dp_sum"] = t.item()
    return out


def _made() -> int:
    """How many groups hcg.torch made in this process so far (every
    creation counts once per store name: groups._created)."""
    from hcg.torch import groups

    with groups._created_lock:
        return sum(groups._created.values())


def _as_task(layout: str, rank: int, world: int):
    """Records the layout as hcg.torch.init() would (the plain calls take
    no source then)."""
    from hcg.env import TaskEnv
    from hcg.torch._base import STATE

    STATE.task = TaskEnv(hcg.Layout(layout, world), rank)
    return STATE.task


def _has_from_group() -> bool:
    try:
        from torch.distributed.device_mesh import DeviceMesh
    except ImportError:
        return False
    return callable(getattr(DeviceMesh, "from_group", None))


def check_shared(rank: int, world: int, layout: str) -> dict:
    """The plain calls, one after another, share one set of groups: each
    call after the first makes none and hands out the same objects; a
    factory of one's own is a fresh set; destroyed groups are made anew."""
    import torch
    import torch.distributed as dist
    import hcg.torch as ht
    from hcg.torch import groups

    task = _as_task(layout, rank, world)
    out: dict = {"made": {}, "same": {}}
    start = _made()
    pgs = ht.new_collection()
    out["made"]["new_collection"] = _made() - start
    out["distinct"] = len({tuple(r) for r in pgs.ranks.values() if r})
    fields = [f for f in ht.ATTRIBUTES if pgs[f] is not None]

    def same(other) -> bool:
        return all(other[f] is pgs[f] for f in fields)

    before = _made()
    out["same"]["new_collection"] = same(ht.new_collection())
    out["same"]["new_collections"] = same(next(iter(ht.new_collections().values())))
    out["made"]["again"] = _made() - before
    # Megatron's class over the same ranks: its create_pg hands out the
    # same groups (no options of its own).
    grid = task.layout.grid(pgs.grid)
    dims = [d for d in grid.view("base").dims]
    hcg_grid = ht.HyperCommGrid([d.size for d in dims], [d.name for d in dims],
                                name=pgs.grid)
    before = _made()
    out["same"]["create_pg tp"] = hcg_grid.create_pg("tp") is pgs.tp
    out["same"]["create_pg dp-cp"] = hcg_grid.create_pg(["cp", "dp"]) is pgs.dp_cp
    out["made"]["create_pg"] = _made() - before
    if _has_from_group():
        before = _made()
        mesh = ht.device_mesh(["dp", "cp", "tp"])
        out["same"]["device_mesh"] = all(
            mesh[n].get_group() is pgs[n] for n in ("dp", "cp", "tp"))
        out["made"]["device_mesh"] = _made() - before
    out["shared_groups"] = groups.shared_groups()
    # A factory of one's own: a fresh set.
    before = _made()
    own = ht.GroupFactory().collection()
    out["made"]["own factory"] = _made() - before
    out["own_distinct"] = all(own[f] is not pgs[f] for f in fields)
    # Destroyed: never handed out again; the next plain call makes them.
    pgs.factory.destroy()
    before = _made()
    again = ht.new_collection()
    out["made"]["after destroy"] = _made() - before
    out["renewed"] = all(again[f] is not pgs[f] for f in fields)
    t = torch.tensor([float(rank)])
    dist.all_reduce(t, group=again.tp)
    out["tp_sum"] = t.item()
    out["want_tp_sum"] = float(sum(again.ranks["tp"]))
    if _has_from_group():
        mesh = ht.device_mesh(["dp", "cp", "tp"])
        out["same"]["device_mesh after destroy"] = mesh["tp"].get_group() is again.tp
    own.factory.destroy()
    again.factory.destroy()
    return out


#: torchtitan's ParallelDims.build_mesh (parallel_dims.py of August 2026,
#: d6555c4c) as read by hand: each global mesh's dim names and, for each,
#: how its degree follows from the degrees (dr, ds, cp, tp, pp, ep).
def _titan_expected(deg: dict, backend: str) -> dict:
    dr, ds, cp, tp, pp, ep = (deg[k] for k in ("dp_replicate", "dp_shard",
                                               "cp", "tp", "pp", "ep"))
    batch, efsdp = dr * ds, ds * cp * tp // ep
    out = {"dataloading": (("pp", pp), ("batch", batch), ("cp", cp), ("tp", tp)),
           "loss": (("loss_mesh", batch * cp),),
           "sparse": (("pp", pp), ("dp_replicate", dr), ("efsdp", efsdp), ("ep", ep))}
    if backend == "spmd_types":
        out["dense"] = (("pp", pp), ("dp_replicate", dr), ("dp_shard", ds),
                        ("cp", cp), ("tp", tp))
        out["spmd_dense_for_fwdbwd"] = (("dp", batch), ("cp", cp), ("tp", tp))
        if ep > 1:
            out["spmd_sparse_for_fwdbwd"] = (("dp_replicate", dr), ("efsdp", efsdp),
                                             ("ep", ep))
    else:
        out["dense"] = (("pp", pp), ("dp_replicate", dr), ("fsdp", ds * cp), ("tp", tp))
    out["world"] = (("world", dr * ds * cp * tp * pp),)
    return out


#: The full meshes each of the sub-meshes above is cut from, and the dims
#: it keeps (the others at this rank's coordinates).
_TITAN_PARENTS = {"loss": ("dataloading", ("batch", "cp")),
                  "spmd_dense_for_fwdbwd": (None, ("dp", "cp", "tp")),
                  "spmd_sparse_for_fwdbwd": ("sparse", ("dp_replicate", "efsdp", "ep"))}


def _titan_tensor(key: str, expected: dict, deg: dict, rank: int, world: int):
    """The ranks torchtitan's mesh of ``key`` holds on this rank: the world
    unflattened (row-major) into its parent's shape, sliced at this rank."""
    import torch

    if key in _TITAN_PARENTS:
        parent, keep = _TITAN_PARENTS[key]
        if parent is None:  # (pp, dp, cp, tp), then its (dp, cp, tp)
            dims = (("pp", deg["pp"]),) + expected[key]
        else:
            dims = expected[parent]
    else:
        dims, keep = expected[key], tuple(n for n, _ in expected[key])
    full = torch.arange(world).reshape([s for _, s in dims])
    where = (full == rank).nonzero()[0].tolist()
    index = tuple(slice(None) if n in keep else where[i]
                  for i, (n, _) in enumerate(dims))
    cut = full[index]
    return cut.reshape(-1) if key == "loss" else cut


def check_titan(rank: int, world: int, degrees: str) -> dict:
    """torchtitan_meshes / torchtitan_axes for one set of degrees, both
    spmd backends: every key torchtitan's build_mesh makes, the same dim
    names, sizes and mesh tensors; the groups hcg made, counted."""
    import torch.distributed as dist
    import hcg.torch as ht

    deg = {"dp_replicate": 1, "dp_shard": -1, "cp": 1, "tp": 1, "pp": 1, "ep": 1}
    deg.update(json.loads(degrees))
    layout = ht.torchtitan_layout(world_size=world, **deg)
    fixed = deg["dp_replicate"] * deg["cp"] * deg["tp"] * deg["pp"]
    if deg["dp_shard"] == -1:
        deg["dp_shard"] = world // fixed
    _as_task(layout, rank, world)
    out: dict = {"bad": [], "made": {}, "keys": {}, "axes": {}}
    for backend in ("spmd_types", "partial_dtensor"):
        before = _made()
        meshes = ht.torchtitan_meshes(spmd_backend=backend)
        axes = ht.torchtitan_axes(meshes)
        out["made"][backend] = _made() - before
        want = _titan_expected(deg, backend)
        out["keys"][backend] = sorted(meshes)
        out["axes"][backend] = {k: m.size() for k, m in sorted(axes.items())}
        if sorted(meshes) != sorted(want):
            out["bad"].append("%s: keys %s, want %s" % (backend, sorted(meshes),
                                                        sorted(want)))
            continue
        for key, dims in want.items():
            mesh = meshes[key]
            names = tuple(n for n, _ in dims)
            if tuple(mesh.mesh_dim_names) != names:
                out["bad"].append("%s %s: dims %s, want %s"
                                  % (backend, key, mesh.mesh_dim_names, names))
                continue
            tensor = _titan_tensor(key, want, deg, rank, world)
            if mesh.mesh.tolist() != tensor.tolist():
                out["bad"].append("%s %s: mesh %s, want %s" % (
                    backend, key, mesh.mesh.tolist(), tensor.tolist()))
            for n, size in dims:
                group = mesh.get_group(n)
                if dist.get_world_size(group) != size:
                    out["bad"].append("%s %s[%s]: group of %d, want %d" % (
                        backend, key, n, dist.get_world_size(group), size))
        # torchtitan's get_optional_mesh reads these: the same groups.
        for name, mesh in axes.items():
            if mesh.ndim != 1 or tuple(mesh.mesh_dim_names)[0] not in (
                    name, "loss_mesh"):
                out["bad"].append("%s axis %s: dims %s" % (backend, name,
                                                           mesh.mesh_dim_names))
        if axes["tp"].get_group() is not meshes["dense"]["tp"].get_group():
            out["bad"].append("%s: axes['tp'] and dense['tp'] differ" % backend)
    # The plain collection after the meshes: nothing made.
    before = _made()
    pgs = ht.new_collection()
    out["made"]["new_collection after"] = _made() - before
    if pgs.tp is not meshes["dense"]["tp"].get_group():
        out["bad"].append("new_collection().tp is not the mesh's tp group")
    return out


def _fail_with(what: str, exc: BaseException):
    def fail(*_args, **_kwargs):
        raise exc
    fail.__name__ = what
    return fail


def check_step_fails(rank: int, world: int, where: str) -> dict:
    """Rank 1 fails, with an exception hcg does not expect, inside the step
    before a group's collective (where='client': getting its store client,
    so that it must reach the store another way to tell; 'meet': at the
    meeting itself). The others, with 60 s, must learn it at once."""
    import hcg.torch as ht
    from hcg.torch import _meet, groups

    if rank == 1:
        if where == "client":
            groups._take_client = _fail_with(
                "_take_client", ZeroDivisionError("division by zero"))
        else:
            _meet.meet = _fail_with("meet", RuntimeError("injected before the meeting"))
    return _how_it_failed(
        lambda: ht.new_collection(hcg.Layout("tp=%d" % world, world), timeout=60))


def _how_it_failed(step) -> dict:
    """Runs ``step``: what hcg raised (a peer's failure names the peer)
    and after how many seconds, or no error."""
    import time

    start = time.monotonic()
    try:
        step()
        return {"error": None}
    except hcg.PeerError as exc:
        return {"error": "%s: %s" % (exc.name, exc.message), "peer": exc.rank,
                "seconds": time.monotonic() - start}
    except hcg.HcgError as exc:
        return {"error": "%s: %s" % (exc.name, exc.message), "peer": None,
                "kind": type(exc).__name__, "seconds": time.monotonic() - start}


#: The store of a scenario that starts no default group (main opens it).
STORE: list = []


def check_init_meet_fails(rank: int, world: int, _arg: str) -> dict:
    """init()'s meeting of the default group: rank 1 fails with a
    ZeroDivisionError inside the step, before the meeting; the others
    (60 s) must raise PeerError naming it at once."""
    import time
    import torch.distributed as dist
    from hcg.env import TaskEnv
    from hcg.torch import _meet, _places, rendezvous

    task = TaskEnv(hcg.Layout("tp=%d" % world, world), rank)
    if rank == 1:
        _meet.meet = _fail_with("meet", ZeroDivisionError("division by zero"))
    t = datetime.timedelta(seconds=60)
    return _how_it_failed(
        lambda: rendezvous._default_group(dist, task, "gloo", t, None, STORE[0],
                                          _places.Place("127.0.0.1", 0, None, -1), None,
                                          time.monotonic() + 60))


#: Scenarios that start no default group themselves.
NO_INIT = {"init_meet_fails"} | binding_worker.NO_INIT


SCENARIOS = {"shared": check_shared, "titan": check_titan,
             "step_fails": check_step_fails, "init_meet_fails": check_init_meet_fails,
             "collections": check_collections, "mesh_outside": check_mesh_outside,
             "collections_per_key": check_collections_per_key, "grid": check_grid,
             "places_load": check_places_load,
             "errors": check_errors, "missing": check_missing,
             "missing_host_leaves": check_missing_host_leaves,
             "bridge": check_bridge,
             "node_local": check_node_local, "uneven": check_uneven,
             "peer_fails": check_peer_fails, "torch_groups": check_torch_groups}
SCENARIOS.update(binding_worker.SCENARIOS)


def main() -> int:
    scenario, rank, world, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    arg = sys.argv[5] if len(sys.argv) > 5 else ""
    store = None
    try:
        import torch.distributed as dist
        import hcg.torch as ht

        from hcg.torch._base import STATE

        from hcg.torch import _places

        timeout = datetime.timedelta(seconds=60)
        secret = os.environ.get("HCG_TEST_JOB_STORE")
        places: object = _places.OneStore(_places.Place("127.0.0.1", port, None, -1))
        if secret:
            # The job's store (hcg.torch.store), as init() opens rank 0's,
            # with the secret the test gave.
            from hcg.torch import store as jobstore

            key = bytes.fromhex(secret)
            if rank == 0:
                STATE.store_server = jobstore.Server("127.0.0.1", key, port)
            store = jobstore.client("127.0.0.1", port, key, timeout)
            places = _places.OneStore(_places.Place("127.0.0.1", port, key, -1))
            if os.environ.get("HCG_TEST_PLACES") == "1":
                # As under PMIx: every rank opens a store of its own, and
                # groups meet at their first member's. What each rank
                # publishes goes through rank 0's store here, not PMIx.
                own = os.urandom(_places.SECRET_BYTES)
                if rank != 0:
                    STATE.store_server = jobstore.Server("127.0.0.1", own)
                else:
                    own = key
                listen = STATE.store_server.port
                wire = os.environ.get("HCG_TEST_WIRE")
                if wire:
                    recorder = Recorder(listen, os.path.join(wire, "%d.wire" % rank))
                    listen = recorder.port
                    # For the test to look for in what was recorded (it
                    # comes back on standard output, not on the wire).
                    SECRETS.append(own.hex())
                store.set("hcg_test_place/%d" % rank,
                          _places.encode(own, "127.0.0.1", listen))
                bootstrap = store
                places = _places.Places(
                    lambda r: bootstrap.get("hcg_test_place/%d" % r))
        else:
            # hcg's TCPStore opens whether or not this torch has libuv.
            store = ht.tcp_store("127.0.0.1", port, world, rank == 0, timeout)
        if scenario in NO_INIT:
            STORE.append(store)
            result = SCENARIOS[scenario](rank, world, arg)
            print("RESULT " + json.dumps(result), flush=True)
            _outlive_peers(store, world)
            return 0
        dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                                timeout=timeout)
        STATE.places = places
        if secret:
            store = None  # as after hcg.torch.init(): torch alone holds it
        result = SCENARIOS[scenario](rank, world, arg)
    except Exception:
        print("RESULT " + json.dumps({"exception": traceback.format_exc()}), flush=True)
        _outlive_peers(_job_store(store), world)
        return 3
    if SECRETS:
        result["secret"] = SECRETS[0]
    print("RESULT " + json.dumps(result), flush=True)
    _outlive_peers(_job_store(store), world)
    return 0


#: This rank's store's secret, where the test records the wire.
SECRETS: list = []


def _job_store(store):
    """The store the ranks count their ends on: the worker's own, else
    torch's default one (None when neither exists)."""
    if store is not None:
        return store
    try:
        import torch.distributed as dist

        return dist.distributed_c10d._get_default_store()
    except Exception:  # pylint: disable=broad-except
        return None


def _outlive_peers(store, world: int) -> None:
    """Every rank stays until every rank is done (30 s at most), as a job
    ends with a barrier: rank 0 hosts the store, which a rank still naming
    the members that never arrived reads; and gloo's connection of a group
    is no barrier, so a member that ended at once closed the sockets of a
    group its peers were still connecting ("Connection closed by peer" on
    ranks 6 and 7 of test_torchtitan_keys_pp's last group, on a loaded
    machine, while ranks 2 and 3 had already left)."""
    import time

    if store is None:
        return
    try:
        store.add("worker_done", 1)
        deadline = time.monotonic() + 30
        while store.add("worker_done", 0) < world and time.monotonic() < deadline:
            time.sleep(0.05)
    except Exception:  # pylint: disable=broad-except
        pass  # a peer's store is gone: nothing left to outlive


if __name__ == "__main__":
    sys.exit(main())
