"""Megatron-LM on hcg.torch: its collections and its MIMO topology.

* :func:`create_topology` is Megatron's MIMO topology
  (``examples/mimo/training/topology.py``): from one :class:`ModuleGridSpec`
  per module it builds each module's :class:`~hcg.torch.HyperCommGrid` with
  its expert view, the 20 groups of each module, the language module's
  embedding groups, one ``ProcessGroupCollection`` per module and the
  rank's ``MultiModuleProcessGroupCollection``, with Megatron's validation
  and messages. The groups are made by their members alone, all of a rank's
  groups in one batch.
* ``ProcessGroupCollection`` and ``MultiModuleProcessGroupCollection`` are
  Megatron's classes where Megatron is not importable
  (hcg/torch/_megatron_classes.py), :func:`megatron_classes` the ones in use.
* Megatron's arguments need no torch and live in :mod:`hcg.megatron`;
  :func:`megatron_args`, :func:`check_megatron_args`, :class:`MegatronArgs`
  and :class:`MegatronError` are also found here, as before.

Megatron-LM main as of d98e8a6 is the reference; see doc/torch.md.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from ..errors import HcgRuntimeError, Status
from ..megatron import (EXPERT, LANGUAGE, MegatronArgs, MegatronError,
                        ModuleSizes, check_megatron_args, megatron_args)
from . import groups as _groups
from ._base import STATE, Timeout, dist, group_timeout, require_initialized
from ._megatron_classes import (PROCESS_GROUP_COLLECTION_FIELDS,
                                MultiModuleProcessGroupCollection,
                                ProcessGroupCollection, megatron_classes)
from .grid import HyperCommGrid, _make, _Planned

__all__ = ["EXPERT", "LANGUAGE", "HeteroTopology", "MegatronArgs",
           "MegatronError", "ModuleGridSpec", "ModuleSizes",
           "MultiModuleProcessGroupCollection", "PROCESS_GROUP_COLLECTION_FIELDS",
           "ProcessGroupCollection", "TOPOLOGY_FIELDS", "TOPOLOGY_GROUPS",
           "check_megatron_args", "create_topology", "megatron_args",
           "megatron_classes"]


# ---------------------------------------------------------------------------
# The MIMO topology

@dataclasses.dataclass
class ModuleGridSpec:
    """One module's grid, as Megatron's ModuleGridSpec: ``num_ranks`` ranks
    from ``rank_offset``, split tp, gtp_remat, cp, dp, pp with ``dp`` what
    is left, and an expert view expt_tp, ep, expt_gtp_remat, expt_dp, pp
    with ``expt_dp`` what is left (experts default to tp 1).

    Raises:
        ValueError: ``num_ranks`` not divisible by tp*gtp_remat*cp*pp or by
            expt_tp*ep*expt_gtp_remat*pp (Megatron's messages).
    """

    name: str
    num_ranks: int
    tp: int = 1
    cp: int = 1
    pp: int = 1
    ep: int = 1
    gtp_remat: int = 1
    rank_offset: int = 0
    expt_tp: int = 1
    expt_gtp_remat: int = 1
    dp: int = dataclasses.field(init=False)
    expt_dp: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.dp, self.expt_dp = _derived(self)

    @property
    def size(self) -> int:
        """The ranks of the module's grid."""
        return self.num_ranks


def _derived(spec: Any) -> Tuple[int, int]:
    """(dp, expt_dp) of a spec, with Megatron's messages."""
    dense = spec.tp * spec.gtp_remat * spec.cp * spec.pp
    if spec.num_ranks % dense:
        raise MegatronError(Status.ELAYOUT, "num_ranks (%d) must be divisible "
                            "by tp*gtp_remat*cp*pp (%d)" % (spec.num_ranks, dense))
    expert = spec.expt_tp * spec.ep * spec.expt_gtp_remat * spec.pp
    if spec.num_ranks % expert:
        raise MegatronError(Status.ELAYOUT, "num_ranks (%d) must be divisible "
                            "by expt_tp*ep*expt_gtp_remat*pp (%d)"
                            % (spec.num_ranks, expert))
    return spec.num_ranks // dense, spec.num_ranks // expert


_SPEC_FIELDS = ("name", "num_ranks", "tp", "cp", "pp", "ep", "gtp_remat",
                "rank_offset", "expt_tp", "expt_gtp_remat")


def _spec(s: Any) -> ModuleGridSpec:
    """A ModuleGridSpec from Megatron's, ours, or a mapping of its fields."""
    if isinstance(s, ModuleGridSpec):
        return s
    if isinstance(s, Mapping):
        return ModuleGridSpec(**{k: s[k] for k in _SPEC_FIELDS if k in s})
    return ModuleGridSpec(**{k: getattr(s, k) for k in _SPEC_FIELDS
                             if hasattr(s, k)})


#: The module's groups: Megatron's option name of the group (what
#: high_priority_stream_groups lists), its dims and view, in the order
#: Megatron's topology creates them.
TOPOLOGY_GROUPS: Tuple[Tuple[str, Tuple[str, ...], Optional[str]], ...] = (
    ("tp", ("tp",), None),
    ("gtp_remat", ("gtp_remat",), None),
    ("cp", ("cp",), None),
    ("pp", ("pp",), None),
    ("dp", ("dp",), None),
    ("dp_cp", ("dp", "cp"), None),
    ("gtp_remat_dp_cp", ("gtp_remat", "dp", "cp"), None),
    ("tp_cp", ("tp", "cp"), None),
    ("mp", ("tp", "gtp_remat", "pp"), None),
    ("tp_dp", ("tp", "gtp_remat", "dp"), None),
    ("tp_dp_cp", ("tp", "gtp_remat", "dp", "cp"), None),
    ("intra_dist_opt_instance", ("tp", "gtp_remat", "cp", "dp", "pp"), None),
    ("ep", ("ep",), EXPERT),
    ("ep_tp", ("expt_tp",), EXPERT),
    ("expt_gtp_remat", ("expt_gtp_remat",), EXPERT),
    ("ep_dp", ("expt_dp",), EXPERT),
    ("tp_ep_mp", ("expt_tp", "ep"), EXPERT),
    ("tp_ep_pp", ("expt_tp", "ep", "pp"), EXPERT),
    ("tp_ep_gtp_remat_pp", ("expt_tp", "ep", "expt_gtp_remat", "pp"), EXPERT),
    ("ep_gtp_remat_dp", ("expt_gtp_remat", "expt_dp"), EXPERT),
)

#: Collection field -> its group (by option name above), as Megatron's
#: pg_collection_from_grid fills them; embd and pos_embd come apart.
TOPOLOGY_FIELDS: Dict[str, str] = {
    "tp": "tp", "cp": "cp", "pp": "pp", "dp": "dp", "dp_cp": "dp_cp",
    "dp_cp_gtp_remat": "gtp_remat_dp_cp", "intra_dp_cp": "dp_cp",
    "gtp_remat": "gtp_remat", "tp_cp": "tp_cp", "tp_dp": "tp_dp",
    "tp_dp_cp": "tp_dp_cp", "mp": "mp",
    "intra_dist_opt": "intra_dist_opt_instance", "ep": "ep",
    "expt_tp": "ep_tp", "expt_gtp_remat": "expt_gtp_remat",
    "expt_dp": "ep_dp", "expt_dp_gtp_remat": "ep_gtp_remat_dp",
    "intra_expt_dp": "ep_dp", "tp_ep": "tp_ep_mp", "tp_ep_pp": "tp_ep_pp",
    "tp_ep_pp_with_egtp_remat": "tp_ep_gtp_remat_pp",
}


@dataclasses.dataclass
class HeteroTopology:
    """What :func:`create_topology` built (Megatron's HeteroTopology).

    Attributes:
        grids: module name -> its :class:`~hcg.torch.HyperCommGrid`, every
            group of the module created on it.
        module_pgs: module name -> ProcessGroupCollection (groups are None
            on ranks outside the module).
        schedule_pg_collection: the MultiModuleProcessGroupCollection of
            the modules holding this rank.
        embedding: the language module's (embd, pos_embd) groups of this
            rank (None where it is in none).
    """

    grids: Dict[str, HyperCommGrid]
    module_pgs: Dict[str, Any]
    schedule_pg_collection: Any
    embedding: Tuple[Any, Any] = (None, None)

    def destroy(self) -> None:
        """Destroys every group of the topology that holds this rank, each
        once (a group shared with another holder, already destroyed there,
        is skipped)."""
        seen = set()
        pending = [pg for pg in self.embedding if pg is not None]
        if pending:
            d = dist()
            for pg in pending:
                if id(pg) not in seen:
                    seen.add(id(pg))
                    if _groups.alive(pg, d):
                        d.destroy_process_group(pg)
        self.embedding = (None, None)
        for grid in self.grids.values():
            grid.destroy()


OptionsFn = Callable[[str], Any]


def _options_fn(high_priority_stream_groups: Optional[Sequence[str]],
                pg_options_fn: Optional[OptionsFn]) -> OptionsFn:
    """The pg_options of a group by its option name: ``pg_options_fn``'s
    when it gives any, else NCCL options with a high-priority stream for
    the names listed, else None."""
    listed = set(high_priority_stream_groups or ())

    def options(name: str) -> Any:
        if pg_options_fn is not None:
            found = pg_options_fn(name)
            if found is not None:
                return found
        if name not in listed:
            return None
        nccl = getattr(dist(), "ProcessGroupNCCL", None)
        if nccl is None:
            raise HcgRuntimeError(Status.ENOTSUP, "high_priority_stream_groups names "
                                  "'%s', which needs NCCL's options, and this torch "
                                  "has no ProcessGroupNCCL" % name)
        opts = nccl.Options()
        opts.is_high_priority_stream = True
        return opts

    return options


def _spans_check(specs: Sequence[ModuleGridSpec], world: int) -> None:
    spans = {s.name: (s.rank_offset, s.rank_offset + s.num_ranks) for s in specs}
    values = list(spans.values())
    same = all(v == values[0] for v in values)
    disjoint = all(a[1] <= b[0] or b[1] <= a[0]
                   for i, a in enumerate(values) for b in values[i + 1:])
    if not (same or disjoint):
        raise MegatronError(Status.ELAYOUT, "Module grids must either fully "
                            "share ranks or be pairwise disjoint, got %s" % spans)
    covered: Set[int] = set()
    for lo, hi in values:
        covered.update(range(lo, hi))
    if covered != set(range(world)):
        raise MegatronError(Status.ELAYOUT, "Module grids must partition the "
                            "world [0, %d) with no gaps, got %s" % (world, spans))


def create_topology(specs: Sequence[Any],
                    high_priority_stream_groups: Optional[Sequence[str]] = None,
                    *, backend: Optional[str] = None, timeout: Optional[Timeout] = None,
                    pg_options_fn: Optional[OptionsFn] = None,
                    language: str = LANGUAGE,
                    collection_cls: Optional[type] = None,
                    multi_cls: Optional[type] = None) -> HeteroTopology:
    """Megatron's MIMO topology from its module specs, on groups made by
    their members alone.

    Args:
        specs: one per module: Megatron's ``ModuleGridSpec``, this module's
            :class:`ModuleGridSpec`, or a mapping of the same fields.
            Exactly one is named ``language``.
        high_priority_stream_groups: option names of groups (as Megatron's
            ``--high-priority-stream-groups``: ``tp``, ``dp_cp``, ``ep``,
            ``embd``, ... see :data:`TOPOLOGY_GROUPS`) that get NCCL
            options with a high-priority stream.
        backend: (hcg) the groups' backend; default the default group's.
        timeout: (hcg) how long a group waits for its members (timedelta or
            seconds; default ``HCG_TIMEOUT``, else 300 s).
        pg_options_fn: (hcg) option name -> pg_options for that group (None:
            the default), e.g. other NCCL options per group.
        language: (hcg) the language module's name.
        collection_cls, multi_cls: the classes built; default Megatron's
            ProcessGroupCollection and MultiModuleProcessGroupCollection,
            else this module's stand-ins.

    Returns:
        A :class:`HeteroTopology`.

    Raises:
        ValueError: no specs, not exactly one language module, sizes that do
            not divide, module spans that partly overlap or leave gaps
            (Megatron's messages; also :class:`MegatronError`); checked
            before any group is made.
        NotInitializedError: torch.distributed is not initialized (a
            RuntimeError, as Megatron raises there, and a ValueError).
        hcg.HcgError: a group whose members do not all arrive (ETIMEOUT);
            the groups made so far are destroyed.
    """
    if not specs:
        raise MegatronError(Status.EINVAL, "create_topology requires at least "
                            "one ModuleGridSpec")
    mods = [_spec(s) for s in specs]
    langs = [m for m in mods if m.name == language]
    if len(langs) != 1:
        raise MegatronError(Status.EINVAL, "create_topology requires exactly "
                            "one spec named %r (the language module), got %d"
                            % (language, len(langs)))
    names = [m.name for m in mods]
    if len(set(names)) != len(names):
        raise MegatronError(Status.EINVAL, "create_topology: module names "
                            "repeat: %s" % names)
    d = require_initialized("hcg.torch.megatron.create_topology")
    world, rank = d.get_world_size(), d.get_rank()
    options = _options_fn(high_priority_stream_groups, pg_options_fn)
    if collection_cls is None or multi_cls is None:
        found = megatron_classes()
        collection_cls = collection_cls or found[0]
        multi_cls = multi_cls or found[1]

    # The grids first (no group yet): their errors are Megatron's.
    grids: Dict[str, HyperCommGrid] = {}
    for m in mods:
        grid = HyperCommGrid([m.tp, m.gtp_remat, m.cp, m.dp, m.pp],
                             ["tp", "gtp_remat", "cp", "dp", "pp"],
                             rank_offset=m.rank_offset, backend=backend,
                             name=m.name)
        grid.register_view(EXPERT, [m.expt_tp, m.ep, m.expt_gtp_remat,
                                    m.expt_dp, m.pp],
                           ["expt_tp", "ep", "expt_gtp_remat", "expt_dp", "pp"],
                           shared_dims=["pp"])
        grid._torch()  # its world is torch's
        grids[m.name] = grid
    _spans_check(mods, world)
    topo = HeteroTopology(grids, {}, None)
    try:
        plans: List[_Planned] = []
        plan_of: Dict[Tuple[str, str], _Planned] = {}
        for m in mods:
            grid = grids[m.name]
            for opt, dims, view in TOPOLOGY_GROUPS:
                kwargs: Dict[str, Any] = {"timeout": timeout}
                found = options(opt)
                if found is not None:
                    kwargs["pg_options"] = found
                p = grid._plan(list(dims), view, kwargs, d, rank)
                plans.append(p)
                plan_of[(m.name, opt)] = p
        embd = _embedding_specs(grids[language], rank, backend, timeout, options)
        made = _make(plans, rank, extra=[s for s in embd if s is not None])
        topo.embedding = tuple(None if s is None else made[s.key]  # type: ignore[assignment]
                               for s in embd)
        for m in mods:
            grid = grids[m.name]
            pgc = collection_cls()
            for field, opt in TOPOLOGY_FIELDS.items():
                key = plan_of[(m.name, opt)].key
                setattr(pgc, field, grid._pgs[key])
            pgc.embd, pgc.pos_embd = (topo.embedding if m.name == language
                                      else (None, None))
            topo.module_pgs[m.name] = pgc
        mine = {m.name: topo.module_pgs[m.name] for m in mods
                if m.rank_offset <= rank < m.rank_offset + m.num_ranks}
        topo.schedule_pg_collection = multi_cls(
            module_pgs=mine,
            language_model_module_name=language if language in mine else None)
        return topo
    except BaseException:
        topo.destroy()
        raise


def _embedding_specs(grid: HyperCommGrid, rank: int, backend: Optional[str],
                     timeout: Optional[Timeout], options: OptionsFn
                     ) -> List[Optional[_groups.GroupSpec]]:
    """This rank's embd and pos_embd groups of the language module (None
    where it is in none): the first and last rank of its pp group, and the
    first (Megatron's default embedding ranks)."""
    out: List[Optional[_groups.GroupSpec]] = []
    for kind in ("embd", "pos_embd"):
        opts = options(kind)  # asked on every rank, as Megatron does
        members = (grid.layout.embedding_group(rank, kind)
                   if grid.layout.grid(grid.name).contains(rank) else None)
        if members is None:
            out.append(None)
            continue
        key = "%s#%s" % (grid.name, kind)
        out.append(_groups.GroupSpec(
            key, tuple(members), backend or grid.backend or STATE.backend,
            group_timeout(timeout), opts,
            "%s.%s" % (key, grid._tag) if opts is not None
            else _groups.members_tag(members), shared=opts is None))
    return out
