"""Scenarios of tests/torch_worker.py for a default group bound to a device
(test_binding.py; not a test module).

A gloo world on the CPU cannot split an NCCL communicator, and nothing here
claims to: the scenarios bind the default group as ``device_id=`` would
(its ``bound_device_id``), tell hcg that torch would split its NCCL groups
(torch's own ``_get_split_source`` answers with the default group's gloo
backend, which gloo ignores), and record every call hcg then
makes of torch's ``split_group``. The recorder makes the group it was asked
for as a real gloo group of its members, so that every group's all_reduce
is checked too. What this proves: the path hcg takes for such a torch, the
order of the calls on every rank, what each call names, and the refusals,
before any group is made.
"""

from __future__ import annotations

import datetime
from typing import Any, Dict, List

import hcg


def _recording(d: Any, rank: int, calls: List[Dict[str, Any]]) -> Any:
    """A split_group that records its call and makes the group it names on
    its members alone, with gloo (hcg's own way for this torch)."""
    from hcg.torch import groups as _groups

    store = d.distributed_c10d._get_default_store()

    def split_group(parent_pg: Any = None, split_ranks: Any = None,
                    timeout: Any = None, pg_options: Any = None,
                    group_desc: Any = None, backend: Any = None) -> Any:
        members = list(split_ranks[0])
        calls.append({"desc": group_desc, "split_ranks": [list(g) for g in split_ranks],
                      "parent": parent_pg is None})
        spec = _groups.GroupSpec(str(group_desc), tuple(members), "gloo",
                                 timeout or datetime.timedelta(seconds=60))
        prefix = "binding-test/%d/%s/" % (len(calls), ",".join(map(str, members)))
        return _groups.way(d).make(d, spec, members.index(rank), store, prefix, "gloo")

    return split_group


class _Bound:
    """The default group bound to cuda:0 as far as hcg can tell, torch's
    split_group recorded; undone on exit."""

    def __init__(self, rank: int, split: bool = True) -> None:
        import torch
        import torch.distributed as d

        self.d, self.c10d = d, d.distributed_c10d
        self.pg = self.c10d._get_default_group()
        self.calls: List[Dict[str, Any]] = []
        self.saved = {n: getattr(self.c10d, n, None)
                      for n in ("_get_split_source", "split_group")}
        self.pg.bound_device_id = torch.device("cuda", 0)
        # torch would split from the default group's backend; gloo's stands
        # in for NCCL's (torch hands it to every backend it makes, and gloo
        # ignores it).
        backend = self.pg._get_backend(torch.device("cpu"))
        self.c10d._get_split_source = lambda pg: backend
        self.c10d.split_group = _recording(d, rank, self.calls) if split else None

    def __enter__(self) -> "_Bound":
        return self

    def __exit__(self, *exc: object) -> None:
        self.pg.bound_device_id = None
        for name, value in self.saved.items():
            setattr(self.c10d, name, value)


def _sums(pgs: Any, rank: int) -> List[str]:
    """Every group of a collection all-reduces its members' ranks."""
    import torch
    import torch.distributed as dist
    import hcg.torch as ht

    bad = []
    for field in ht.ATTRIBUTES:
        pg, members = pgs[field], pgs.ranks[field]
        if pg is None or members is None:
            continue
        t = torch.tensor([float(rank)], dtype=torch.float64)
        dist.all_reduce(t, group=pg)
        if t.item() != sum(members):
            bad.append("%s: all_reduce %g, want %d" % (field, t.item(), sum(members)))
        if dist.get_rank(pg) != members.index(rank):
            bad.append("%s: group rank %d" % (field, dist.get_rank(pg)))
    return bad


def check_bound_split(rank: int, world: int, layout: str) -> dict:
    """NCCL groups under a bound default group: one split per group, every
    rank naming only its own group, the same keys in the same order on
    every rank; gloo groups of the same layout: no split."""
    import hcg.torch as ht
    from hcg.torch import _binding

    L = hcg.Layout(layout, world)
    with _Bound(rank) as bound:
        splits_before = _binding.splits(bound.d)
        pgs = ht.new_collection(L, backend="nccl", timeout=60)
        bad = _sums(pgs, rank)
        own = {pgs.keys[f]: pgs.ranks[f] for f in ht.ATTRIBUTES
               if pgs.ranks[f] is not None}
        for call in bound.calls:
            if len(call["split_ranks"]) != 1 or \
                    call["split_ranks"][0] not in own.values():
                bad.append("split_group named %s, not one of this rank's groups"
                           % call["split_ranks"])
        nccl_calls = len(bound.calls)
        gloo = ht.new_collection(L, backend="gloo", timeout=60, shared=False,
                                 share_equal=False)
        bad += _sums(gloo, rank)
        gloo_calls = len(bound.calls) - nccl_calls
        pgs.factory.destroy()
        gloo.factory.destroy()
    return {"bad": bad, "splits": splits_before,
            "order": [c["desc"] for c in bound.calls[:nccl_calls]],
            "groups": [c["split_ranks"][0] for c in bound.calls[:nccl_calls]],
            "gloo_calls": gloo_calls}


def check_bound_refusals(rank: int, world: int, layout: str) -> dict:
    """Groups hcg cannot make under a bound default group are refused
    before any is made, with an error that names the way out: a key whose
    groups leave ranks out (a MIMO module's grid), and a torch without
    split_group."""
    import hcg.torch as ht

    out: Dict[str, Any] = {}
    L = hcg.Layout(layout, world)
    for name, split in (("partial", True), ("no_split", False)):
        with _Bound(rank, split=split) as bound:
            try:
                ht.new_collections(L, backend="nccl", timeout=60)
                out[name] = None
            except hcg.HcgError as exc:
                out[name] = {"code": exc.name, "message": exc.message,
                             "runtime": isinstance(exc, RuntimeError)}
            out[name + "_calls"] = len(bound.calls)
    return out


SCENARIOS = {"bound_split": check_bound_split,
             "bound_refusals": check_bound_refusals}


def check_gloo_limit(rank: int, world: int, _arg: str) -> dict:
    """A gloo group whose full mesh does not fit the file limit is refused
    before any connection, naming the ways out; one that fits is not."""
    import resource

    from hcg.torch import groups as _groups

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (300, hard))  # room: 44
    t = datetime.timedelta(seconds=30)
    out: Dict[str, Any] = {}
    try:
        big = _groups.GroupSpec("big", tuple(range(rank, rank + 100)), "gloo", t)
        try:
            _groups.build([big], rank)
            out["big"] = None
        except hcg.HcgError as exc:
            out["big"] = {"code": exc.name, "message": exc.message,
                          "value_error": isinstance(exc, ValueError)}
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return out


def check_init_refusals(rank: int, world: int, _arg: str) -> dict:
    """init() refuses, before it opens anything: a gloo default group whose
    full mesh cannot fit the file limit, and device_ids that are no CUDA
    device (or that this torch cannot take). One rank plays rank 0 of a
    layout of 2000."""
    import inspect
    import os
    import resource

    import torch.distributed as dist
    import hcg.torch as ht

    big = hcg.Layout("dp=*", 2000)
    os.environ.update(big.env(0))
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = os.environ.get("HCG_TEST_FREE_PORT", "1")
    out: Dict[str, Any] = {"takes_device_id": "device_id" in inspect.signature(
        dist.init_process_group).parameters}
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    cases = {"gloo_world": {"backend": "gloo"},
             "device_cpu": {"backend": "gloo", "device_id": "cpu"},
             "device_float": {"backend": "gloo", "device_id": 1.5},
             "device_negative": {"backend": "gloo", "device_id": -1}}
    try:
        for name, kwargs in cases.items():
            try:
                ht.init(timeout=20, **kwargs)
                out[name] = None
            except hcg.HcgError as exc:
                out[name] = {"code": exc.name, "message": exc.message,
                             "kinds": [k.__name__ for k in (ValueError, TypeError,
                                                            RuntimeError)
                                       if isinstance(exc, k)]}
            out[name + "_initialized"] = dist.is_initialized()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return out


SCENARIOS.update({"gloo_limit": check_gloo_limit,
                  "init_refusals": check_init_refusals})
#: Scenarios that start no default group before they run.
NO_INIT = {"init_refusals"}
