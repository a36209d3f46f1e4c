"""PyTorch process groups for an hcg layout, the way Megatron-LM makes them.

Importing this module does not import torch; the first call that needs it
does, and raises :class:`TorchUnavailableError` (an ImportError) with a
clear message when PyTorch or torch.distributed is missing.

    import torch.distributed as dist
    import hcg.torch

    dist.init_process_group("nccl")              # the world group: required
    pgs = hcg.torch.new_collection()             # layout and rank from HCG_*
    dist.all_reduce(t, group=pgs.dp_cp)
    model = GPTModel(..., pg_collection=pgs.to_megatron())

How the groups are made. For every group key of a grid's collection, every
rank calls ``torch.distributed.new_subgroups_by_enumeration`` with the full
canonical enumeration from libhcg (exactly what Megatron's
``HyperCommGrid.create_pg`` passes), and keeps the subgroup holding it.
Fields that name the same groups (``intra_dp_cp`` and ``dp_cp``, ``dp_cp``
of a grid without cp and ``dp``, a view request that resolves to the base)
share one key and so one process group object: no duplicate communicators.

World communicator. This path NEEDS an initialized default process group:
``new_group`` is collective over the whole world, so every rank of the job
must make the same calls in the same order, members of a group or not, and
torch forms each group through the world's store. libhcg's own C path
(``hcg_comm_create`` in hcg.h) is different: it forms every NCCL
communicator of a set with one PMIx fence and ``ncclCommInitRankConfig``,
with no world communicator and no global initialization at all. Use it from
C/C++ when world-sized setup is what you want to avoid; use this module when
the training code lives in torch.distributed anyway.
"""

from __future__ import annotations

import inspect
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional,
                    Tuple, Union)

from .env import TaskEnv, from_environ
from .errors import HcgError, Status
from .layout import EMBEDDINGS, FIELDS, GridRef, Layout, Spec

__all__ = ["TorchUnavailableError", "ProcessGroups", "GroupFactory",
           "new_collection", "new_collections"]

#: Attributes of a :class:`ProcessGroups`: the collection fields, then the
#: embedding groups.
ATTRIBUTES = FIELDS + EMBEDDINGS


class TorchUnavailableError(ImportError):
    """PyTorch (with torch.distributed) cannot be used in this process."""


def _dist() -> Any:
    """torch.distributed, imported now (and only now)."""
    try:
        # The top-level torch, not this file (imports are absolute).
        import torch.distributed as dist  # type: ignore[import]
    except ImportError as exc:
        raise TorchUnavailableError(
            "hcg.torch needs PyTorch with torch.distributed, and importing it "
            "failed (%s). Install PyTorch, or use hcg.Layout directly: "
            "everything else in hcg works without torch." % exc) from exc
    if not dist.is_available():
        raise TorchUnavailableError(
            "this PyTorch build has no torch.distributed (is_available() is "
            "False): hcg.torch cannot create process groups")
    return dist


class ProcessGroups:
    """One grid's process groups, named like Megatron's
    ProcessGroupCollection: ``tp``, ``cp``, ``dp``, ``pp``, ``dp_cp``,
    ``tp_cp``, ``mp``, ``tp_dp``, ``tp_dp_cp``, ``dp_cp_gtp_remat``, the
    expert fields (``ep``, ``expt_tp``, ``expt_dp``, ``tp_ep``,
    ``tp_ep_pp``, ...), ``intra_dp_cp``, ``intra_expt_dp``,
    ``intra_dist_opt``, and for the language module ``embd`` and
    ``pos_embd``.

    An attribute is None when the grid does not provide the field (its dims
    are all absent) or when this rank is not in that group's grid.
    ``keys[field]`` is the group key (None when not provided) and
    ``ranks[field]`` the members of this rank's group.
    """

    def __init__(self, grid: str, rank: int, factory: "GroupFactory") -> None:
        self.grid = grid
        self.rank = rank
        self.factory = factory
        self.keys: Dict[str, Optional[str]] = {}
        self.ranks: Dict[str, Optional[List[int]]] = {}
        for name in ATTRIBUTES:
            setattr(self, name, None)

    def _set(self, field: str, key: Optional[str], group: Any,
             members: Optional[List[int]]) -> None:
        setattr(self, field, group)
        self.keys[field] = key
        self.ranks[field] = members

    def __getitem__(self, field: str) -> Any:
        if field not in ATTRIBUTES:
            raise KeyError(field)
        return getattr(self, field)

    def as_dict(self) -> Dict[str, Any]:
        """Field -> process group (or None), every attribute."""
        return {name: getattr(self, name) for name in ATTRIBUTES}

    def to_megatron(self, cls: Optional[type] = None) -> Any:
        """A ``megatron.core.process_groups_config.ProcessGroupCollection``
        (or ``cls``) holding these groups. Only the fields the class knows
        are passed; not-provided ones are passed as None, which Megatron
        reads as 'explicitly not needed'."""
        if cls is None:
            from megatron.core.process_groups_config import (  # type: ignore[import]
                ProcessGroupCollection)
            cls = ProcessGroupCollection
        import dataclasses

        try:
            known = {f.name for f in dataclasses.fields(cls)}
        except TypeError:  # not a dataclass: trust it to take them all
            known = set(ATTRIBUTES)
        return cls(**{k: v for k, v in self.as_dict().items() if k in known})

    def __repr__(self) -> str:
        have = [f for f in ATTRIBUTES if getattr(self, f) is not None]
        return "<hcg.torch.ProcessGroups %s rank %d: %s>" % (
            self.grid, self.rank, ", ".join(have) or "none")


def _source(source: Union[Layout, TaskEnv, str, None],
            dist: Any) -> Tuple[Layout, int, bool]:
    """(layout, rank, owned) from what the caller gave, checked against the
    default process group."""
    if not dist.is_initialized():
        raise HcgError(Status.EINVAL, "torch.distributed is not initialized: "
                       "call init_process_group() first (hcg.torch needs the "
                       "world group; libhcg's C API does not)")
    world, rank = dist.get_world_size(), dist.get_rank()
    owned = False
    if source is None:
        source, owned = from_environ(), True
    if isinstance(source, str):
        source, owned = Layout(source, world), True
    if isinstance(source, TaskEnv):
        if source.rank != rank:
            raise HcgError(Status.EMISMATCH, "HCG_RANK=%d but "
                           "torch.distributed.get_rank()=%d: the torch ranks "
                           "must be the Slurm task ranks (RANK=$SLURM_PROCID)"
                           % (source.rank, rank))
        layout = source.layout
    else:
        layout = source
    if layout.world_size != world:
        raise HcgError(Status.EMISMATCH, "the layout is for %d ranks but the "
                       "torch world has %d" % (layout.world_size, world))
    return layout, rank, owned


class GroupFactory:
    """Creates torch process groups from a layout, once per group key.

    ``source`` is a :class:`hcg.Layout`, a :class:`hcg.env.TaskEnv`, layout
    text, or None to read the HCG_* environment. The torch world size must
    equal the layout's, and torch ranks must be hcg ranks.

    ``backend``, ``timeout`` and ``pg_options`` go to every
    new_subgroups_by_enumeration call; ``options_fn(key)`` may return a dict
    of keyword arguments overriding them for one group key (e.g. NCCL
    options with a high-priority stream for 'llm:cp'). Where torch supports
    it, ``group_desc`` is the group key, so torch's logs and flight recorder
    name groups as Megatron does.

    Every call is collective over the world group: all ranks must make the
    same calls in the same order (they do when they share the layout).
    """

    def __init__(self, source: Union[Layout, TaskEnv, str, None] = None, *,
                 backend: Optional[str] = None, timeout: Any = None,
                 pg_options: Any = None,
                 options_fn: Optional[Callable[[str], Mapping[str, Any]]] = None
                 ) -> None:
        self._dist = _dist()
        self.layout, self.rank, self._owned = _source(source, self._dist)
        self._kwargs: Dict[str, Any] = {}
        for name, value in (("backend", backend), ("timeout", timeout),
                            ("pg_options", pg_options)):
            if value is not None:
                self._kwargs[name] = value
        self._options_fn = options_fn
        self._desc = _accepts(self._dist.new_subgroups_by_enumeration,
                              "group_desc")
        # key -> (this rank's group or None, its members or None)
        self._groups: Dict[str, Tuple[Any, Optional[List[int]]]] = {}

    def _create(self, key: str,
                enumeration: List[List[int]]) -> Tuple[Any, Optional[List[int]]]:
        if key in self._groups:
            return self._groups[key]
        kwargs = dict(self._kwargs)
        if self._options_fn is not None:
            kwargs.update(self._options_fn(key) or {})
        if self._desc:
            kwargs.setdefault("group_desc", key)
        group, _ = self._dist.new_subgroups_by_enumeration(enumeration, **kwargs)
        members = next((m for m in enumeration if self.rank in m), None)
        self._groups[key] = (group, members)
        return self._groups[key]

    def group(self, spec: Spec) -> Any:
        """This rank's process group for a spec "GRID[/VIEW]:DIMS" (None
        when the rank is outside that grid). Collective."""
        req = self.layout.request(spec)
        return self._create(req.key, self.layout.enumerate(req))[0]

    def embedding(self, kind: str = "embd") -> Any:
        """This rank's embedding group of a kind ('embd' or 'pos_embd'),
        keyed 'GRID#embd' as in libhcg. Collective."""
        key = "%s#%s" % (self.layout.language, kind)
        return self._create(key, self.layout.embedding_groups(kind))[0]

    def collection(self, grid: GridRef = None, *,
                   embedding: Optional[bool] = None) -> ProcessGroups:
        """The process-group collection of one grid (None: the only grid,
        else the language module). Embedding groups are added for the
        language module unless ``embedding`` is False. Collective: ranks
        outside the grid call it too, and get None everywhere."""
        if grid is None and len(self.layout.grids) > 1:
            grid = self.layout.language
        g = self.layout.grid(grid)
        out = ProcessGroups(g.name, self.rank, self)
        for field in FIELDS:
            req = self.layout.field_request(g.index, field)
            if req is None:
                out._set(field, None, None, None)
                continue
            group, members = self._create(req.key, self.layout.enumerate(req))
            out._set(field, req.key, group, members)
        if embedding is None:
            embedding = g.language
        if embedding:
            if not g.language:
                raise HcgError(Status.EINVAL, "grid '%s' is not the language "
                               "module: it has no embedding groups" % g.name)
            for kind in EMBEDDINGS:
                key = "%s#%s" % (g.name, kind)
                group, members = self._create(
                    key, self.layout.embedding_groups(kind))
                out._set(kind, key, group, members)
        return out

    def keys(self) -> List[str]:
        """Keys of the groups created so far, in creation order."""
        return list(self._groups)

    def destroy(self) -> None:
        """Destroys the process groups this rank belongs to, each once, and
        forgets them all (a later call creates them again, collectively)."""
        seen = set()
        for group, _ in self._groups.values():
            if group is not None and id(group) not in seen:
                seen.add(id(group))
                self._dist.destroy_process_group(group)
        self._groups.clear()

    def close(self) -> None:
        """Frees the layout if this factory read it itself (the groups stay)."""
        if self._owned:
            self.layout.close()


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):  # no introspectable signature
        return False


def new_collection(source: Union[Layout, TaskEnv, str, None] = None,
                   grid: GridRef = None, **kwargs: Any) -> ProcessGroups:
    """One grid's :class:`ProcessGroups` (see :class:`GroupFactory` for the
    arguments). The factory stays reachable as ``.factory`` (to destroy the
    groups later). Collective over the world group."""
    return GroupFactory(source, **kwargs).collection(grid)


def new_collections(source: Union[Layout, TaskEnv, str, None] = None,
                    grids: Optional[Iterable[GridRef]] = None,
                    **kwargs: Any) -> Dict[str, ProcessGroups]:
    """Every grid's :class:`ProcessGroups` (MIMO), in layout order, made by
    one factory: grid name -> collection. Ranks get None in the grids they
    are not in. Collective over the world group."""
    factory = GroupFactory(source, **kwargs)
    names: List[GridRef] = list(factory.layout.grids if grids is None else grids)
    return {factory.layout.grid(n).name: factory.collection(n) for n in names}
