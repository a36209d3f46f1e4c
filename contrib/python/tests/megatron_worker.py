"""One rank of a local torch job for test_megatron.py (not a test module).

    python3 -m tests.megatron_worker SCENARIO RANK WORLD STORE_FILE [ARG]

The scenario starts torch.distributed itself (gloo, CPU, a FileStore on
STORE_FILE: it needs no TCPStore, so it runs on every torch), because some
scenarios first check what works before it starts. Prints one line
"RESULT <json>"; exits 0 when the scenario ran (its findings are in the
JSON), 3 on an unexpected exception.
"""

from __future__ import annotations

import datetime
import json
import os
import sys
import traceback
from typing import Any, Callable, Dict, List

import hcg

TIMEOUT = datetime.timedelta(seconds=90)


def start(rank: int, world: int, store: str) -> Any:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method="file://" + store, rank=rank,
                            world_size=world, timeout=TIMEOUT)
    return dist


def error(call: Callable[[], Any]) -> Dict[str, Any]:
    """What a call raised: its classes (by name) and message."""
    try:
        call()
    except Exception as exc:  # pylint: disable=broad-except
        return {"types": [c.__name__ for c in type(exc).__mro__],
                "message": str(exc),
                "code": getattr(exc, "name", None)}
    return {"types": [], "message": "no error", "code": None}


def members(dist: Any, pg: Any, rank: int) -> Any:
    """The members of a group as torch sees them: its size, this rank's
    place, and the sum of the members' ranks (an all-reduce over it)."""
    import torch

    if pg is None:
        return None
    t = torch.tensor([float(rank)], dtype=torch.float64)
    dist.all_reduce(t, group=pg)
    return {"size": dist.get_world_size(pg), "rank": dist.get_rank(pg),
            "sum": int(t.item())}


# ---------------------------------------------------------------------------

def grid_contract(rank: int, world: int, store: str, _arg: str) -> dict:
    """HyperCommGrid before and after torch.distributed starts."""
    import numpy as np
    import hcg.torch as ht

    os.environ["WORLD_SIZE"] = str(world)
    out: Dict[str, Any] = {}
    grid = ht.HyperCommGrid([2, 2, 2], ["tp", "dp", "pp"])
    grid.register_view("expert", [2, 2, 2], ["expt_tp", "ep", "pp"],
                       shared_dims=["pp"])
    out["enum_before"] = grid.get_rank_enum(["expt_tp", "ep"], view="expert")
    out["before_init"] = error(lambda: grid.create_pg("tp"))
    dist = start(rank, world, store)

    tp = grid.create_pg("tp", timeout=datetime.timedelta(seconds=60))
    out["tp"] = members(dist, tp, rank)
    out["tp_get_same"] = grid.get_pg("tp") is tp
    out["again"] = error(lambda: grid.create_pg("tp"))
    te = grid.create_pg(["ep", "expt_tp"], view="expert", timeout=60)
    out["te"] = members(dist, te, rank)
    out["te_key"] = [list(k) if isinstance(k, tuple) else k for k in grid._pgs
                     if isinstance(k, tuple)]
    out["te_again"] = error(lambda: grid.create_pg(["expt_tp", "ep"], view="expert"))
    # A shared dim: the view's request is the base group, one object.
    pp = grid.create_pg("pp", view="expert")
    out["pp"] = members(dist, pp, rank)
    out["pp_same"] = grid.get_pg("pp") is pp and grid.get_pg("pp", view="expert") is pp
    out["pp_base_again"] = error(lambda: grid.create_pg("pp"))
    out["keys"] = sorted(str(k) for k in grid._pgs)
    # Keyword arguments: torch's new_subgroups_by_enumeration's, nothing else.
    out["unknown_kw"] = error(lambda: grid.create_pg("dp", colour=1))
    import inspect
    takes = inspect.signature(dist.new_subgroups_by_enumeration).parameters
    out["takes_desc"] = "group_desc" in takes
    if "group_desc" in takes:
        dp = grid.create_pg("dp", group_desc="HCG_TEST_DP", pg_options=None)
        out["dp_desc"] = getattr(dp, "group_desc", None)
    else:
        out["desc_refused"] = error(lambda: grid.create_pg("dp", group_desc="X"))
        dp = grid.create_pg("dp", pg_options=None)
    out["dp"] = members(dist, dp, rank)

    # numpy integers where Megatron takes them; a grid on ranks 4-7.
    part = ht.HyperCommGrid([np.int64(2), np.int64(2)], ["tp", "dp"],
                            rank_offset=np.int64(4))
    out["part_enum"] = part.get_rank_enum("dp")
    ppg = part.create_pg("dp", timeout=60)
    out["part"] = members(dist, ppg, rank)
    out["in_part"] = part.is_current_rank_in_grid()

    # A grid built for another world than torch's.
    os.environ["WORLD_SIZE"] = str(world * 2)
    other = ht.HyperCommGrid([2], ["tp"])
    os.environ["WORLD_SIZE"] = str(world)
    out["other_world"] = error(lambda: other.create_pg("tp"))

    # destroy: this rank's groups, each object once (pp is shared).
    dist.barrier()
    kept = [pg for pg in (tp, te, pp, dp) if pg is not None]
    grid.destroy()
    part.destroy()
    out["pgs_after"] = len(grid._pgs) + len(part._pgs)
    c10d = dist.distributed_c10d
    world_state = getattr(c10d, "_world", None)
    registry = (world_state.pg_map if hasattr(world_state, "pg_map")
                else c10d._pg_map)
    out["destroyed"] = all(pg not in registry for pg in kept)
    out["views_kept"] = sorted(grid._views)
    dist.barrier()
    return out


def grid_again(rank: int, world: int, store: str, _arg: str) -> dict:
    """A group made again after destroy() meets only its new life."""
    import hcg.torch as ht

    os.environ["WORLD_SIZE"] = str(world)
    dist = start(rank, world, store)
    grid = ht.HyperCommGrid([2, world // 2], ["tp", "dp"])
    out = {"first": members(dist, grid.create_pg("tp", timeout=60), rank)}
    grid.destroy()
    out["again"] = members(dist, grid.create_pg("tp", timeout=60), rank)
    grid.destroy()
    dist.barrier()
    return out


def member_missing(rank: int, world: int, store: str, arg: str) -> dict:
    """Rank int(arg) never makes its group: create_pg's timeout applies."""
    import hcg.torch as ht

    start(rank, world, store)
    grid = ht.HyperCommGrid([world], ["tp"])
    if rank == int(arg):
        import time
        time.sleep(6)
        return {"skipped": True}
    return {"error": error(lambda: grid.create_pg("tp", timeout=2))}


def to_megatron(rank: int, world: int, store: str, arg: str) -> dict:
    """ProcessGroups.to_megatron() into a class made from the field
    description the tests keep (arg: its path)."""
    import dataclasses
    import hcg.torch as ht

    dist = start(rank, world, store)
    with open(arg) as f:
        names = [line.split()[0] for line in f
                 if line.strip() and not line.startswith("#")]

    class Base:
        def __init__(self, **kwargs: Any) -> None:
            for k, v in kwargs.items():
                if k not in names:
                    raise ValueError("Unknown attribute: %s" % k)
                setattr(self, k, v)

    cls = dataclasses.make_dataclass(
        "ProcessGroupCollection",
        [(n, Any, dataclasses.field(init=False)) for n in names],
        bases=(Base,), init=False, repr=False, eq=False)
    layout = ("llm:tp=2,gtp_remat=2,cp=1,dp=*,pp=1; "
              "llm/expert:expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=*,pp")
    pgs = ht.new_collection(hcg.Layout(layout, world), timeout=60)
    made = pgs.to_megatron(cls)
    out: Dict[str, Any] = {}
    for name in names:
        if name not in vars(made):
            out[name] = "unset"
        else:
            out[name] = members(dist, getattr(made, name), rank)
    out["tp_dp"] = members(dist, getattr(made, "tp_dp", None), rank)
    out["alias"] = made.intra_dp_cp is made.dp_cp and made.intra_expt_dp is made.expt_dp
    pgs.factory.destroy()
    dist.barrier()
    return out


def topology(rank: int, world: int, store: str, arg: str) -> dict:
    """hcg.torch.megatron.create_topology for the specs in arg (JSON)."""
    import hcg.torch.megatron as hm

    case = json.loads(arg)
    os.environ["WORLD_SIZE"] = str(world)
    dist = start(rank, world, store)
    seen: List[str] = []
    marker = object()

    def options(name: str) -> Any:
        seen.append(name)
        return marker if name in case.get("marked", []) else None

    specs = [hm.ModuleGridSpec(**s) for s in case["specs"]]
    topo = hm.create_topology(specs, pg_options_fn=options, timeout=60)
    out: Dict[str, Any] = {"modules": {}, "options_asked": sorted(set(seen))}
    for name, pgc in topo.module_pgs.items():
        fields = {}
        for f in hm.PROCESS_GROUP_COLLECTION_FIELDS + ("tp_dp",):
            if f in vars(pgc):
                fields[f] = members(dist, getattr(pgc, f), rank)
            else:
                fields[f] = "unset"
        fields["intra_dp_cp is dp_cp"] = pgc.intra_dp_cp is pgc.dp_cp
        fields["intra_expt_dp is expt_dp"] = pgc.intra_expt_dp is pgc.expt_dp
        out["modules"][name] = fields
    sched = topo.schedule_pg_collection
    out["schedule"] = {"modules": sorted(sched.module_pgs),
                       "language": sched.language_model_module_name,
                       "same": all(sched[n] is topo.module_pgs[n]
                                   for n in sched.module_pgs)}
    out["grids"] = {n: {"offset": g.rank_offset, "size": g.size,
                        "pp_enum": g.get_rank_enum("pp"),
                        "tp_made": str(g.get_pg("tp") is topo.module_pgs[n].tp)}
                    for n, g in topo.grids.items()}
    dist.barrier()
    topo.destroy()
    out["after_destroy"] = sum(len(g._pgs) for g in topo.grids.values())
    dist.barrier()
    return out


def topology_errors(rank: int, world: int, store: str, _arg: str) -> dict:
    """What create_topology refuses, before it makes any group."""
    import hcg.torch.megatron as hm

    os.environ["WORLD_SIZE"] = str(world)
    S = hm.ModuleGridSpec
    out: Dict[str, Any] = {
        "not_divisible": error(lambda: S("language", 6, tp=4)),
        "expert_not_divisible": error(lambda: S("language", 4, ep=3)),
        "before_init": error(lambda: hm.create_topology([S("language", world)])),
    }
    dist = start(rank, world, store)
    half = world // 2
    cases = {
        "empty": [],
        "no_language": [S("enc", half), S("llm", half, rank_offset=half)],
        "two_languages": [S("language", half), S("language", half, rank_offset=half)],
        "overlap": [S("enc", half), S("language", half, rank_offset=half - 1)],
        "gap": [S("enc", half - 1), S("language", half, rank_offset=half)],
        "oversized": [S("enc", half), S("language", half, rank_offset=half + 1)],
        "hps": [S("language", world)],
    }
    for name, specs in cases.items():
        hps = ["tp"] if name == "hps" else None
        out[name] = error(lambda specs=specs, hps=hps: hm.create_topology(
            specs, hps, timeout=30))
    out["has_nccl"] = hasattr(dist, "ProcessGroupNCCL")
    dist.barrier()
    return out


SCENARIOS = {"grid_contract": grid_contract, "grid_again": grid_again,
             "member_missing": member_missing,
             "to_megatron": to_megatron, "topology": topology,
             "topology_errors": topology_errors}


def main() -> int:
    scenario, rank, world, store = (sys.argv[1], int(sys.argv[2]),
                                     int(sys.argv[3]), sys.argv[4])
    arg = sys.argv[5] if len(sys.argv) > 5 else ""
    try:
        result = SCENARIOS[scenario](rank, world, store, arg)
    except Exception:  # pylint: disable=broad-except
        print("RESULT " + json.dumps({"exception": traceback.format_exc()}), flush=True)
        return 3
    print("RESULT " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
