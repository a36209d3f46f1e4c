"""Megatron-style process-group collections, made by their members alone.

    import hcg.torch
    hcg.torch.init()                       # default group from srun's env
    pgs = hcg.torch.new_collection()       # this rank's groups, named
    dist.all_reduce(t, group=pgs.dp_cp)
    model = GPTModel(..., pg_collection=pgs.to_megatron())

A rank creates only the groups that hold it, together with their other
members and nobody else (see :mod:`hcg.torch.groups`): no world-collective
call per group, nothing for grids the rank is not in, and no call order
shared with other ranks. Fields naming the same groups (``intra_dp_cp`` and
``dp_cp``, a view request that resolves to the base) share one key and so
one process group object.
"""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from .._source import Resolved, Source, resolve_source
from ..errors import HcgError, HcgTypeError, HcgValueError, Status
from ..layout import EMBEDDINGS, FIELDS, GridRef, Layout, Spec
from . import groups as _groups
from ._base import (STATE, Dist, ProcessGroup, Timeout, group_timeout,
                    require_initialized, timeout_of)

#: The weight-rematerialization groups of Megatron's collection, each over
#: one dim: ``gtp_remat`` of the base, ``expt_gtp_remat`` of the expert view.
#: None when the grid lacks the dim.
REMAT: Dict[str, Tuple[str, str]] = {"gtp_remat": ("base", "gtp_remat"),
                                     "expt_gtp_remat": ("expert", "expt_gtp_remat")}

#: Attributes of a :class:`ProcessGroups`: the collection fields of libhcg,
#: the weight-rematerialization groups, then the embedding groups.
ATTRIBUTES = FIELDS + tuple(REMAT) + EMBEDDINGS

#: Fields of Megatron-LM's ProcessGroupCollection (main, d98e8a6) that hcg
#: does not make, and what they are; ``to_megatron()`` sets them to None,
#: which Megatron reads as "not in use". Every other field of that class is
#: an attribute of :class:`ProcessGroups`.
NOT_MADE: Dict[str, str] = {
    "hcp": "hierarchical context-parallel groups "
           "(--hierarchical-context-parallel-sizes)",
    "dp_cp_ag": "a second dp_cp communicator for overlapped parameter "
                "all-gathers",
    "expt_dp_ag": "a second expt_dp communicator for overlapped parameter "
                  "all-gathers",
    "inter_dist_opt": "the groups across distributed-optimizer instances "
                      "(--num-distributed-optimizer-instances > 1)",
}

_OPTION_NAMES = ("backend", "timeout", "pg_options")


class ProcessGroups:
    """One grid's process groups for this rank, named like Megatron's
    ProcessGroupCollection: ``tp``, ``cp``, ``dp``, ``pp``, ``dp_cp``,
    ``tp_cp``, ``mp``, ``tp_dp``, ``tp_dp_cp``, ``dp_cp_gtp_remat``, the
    expert fields (``ep``, ``expt_tp``, ``expt_dp``, ``tp_ep``,
    ``tp_ep_pp``, ...), ``intra_dp_cp``, ``intra_expt_dp``,
    ``intra_dist_opt``, ``gtp_remat`` and ``expt_gtp_remat``, and for the
    language module ``embd`` and ``pos_embd``.

    An attribute is None when the grid does not provide the field (its dims
    are all absent), when this rank is not in the grid, or (embedding groups)
    when the rank is in no group of that kind. ``keys[field]`` is the group
    key (None when not provided) and ``ranks[field]`` the members of this
    rank's group, ascending (the group rank is the index in it).
    """

    def __init__(self, grid: str, rank: int, factory: "GroupFactory") -> None:
        self.grid = grid
        self.rank = rank
        self.factory = factory
        self.keys: Dict[str, Optional[str]] = {}
        self.ranks: Dict[str, Optional[List[int]]] = {}
        #: dim -> whether this rank's group along it stays inside one node,
        #: as the plugin's placement check found (base and view dims of this
        #: grid, e.g. {"tp": True, "ep": False}); empty when unknown.
        self.node_local: Dict[str, bool] = {
            key.split(":", 1)[1]: v
            for key, v in getattr(factory, "node_local", {}).items()
            if key.split(":", 1)[0].split("/", 1)[0] == grid}
        #: The same for the step's NVLink domains (TaskEnv.domain_local).
        self.domain_local: Dict[str, bool] = {
            key.split(":", 1)[1]: v
            for key, v in getattr(factory, "domain_local", {}).items()
            if key.split(":", 1)[0].split("/", 1)[0] == grid}
        for name in ATTRIBUTES:
            setattr(self, name, None)
            self.keys[name] = None
            self.ranks[name] = None

    def _set(self, field: str, key: Optional[str], group: Optional[ProcessGroup],
             members: Optional[List[int]]) -> None:
        setattr(self, field, group)
        self.keys[field] = key
        self.ranks[field] = members

    def __getitem__(self, field: str) -> Optional[ProcessGroup]:
        if field not in ATTRIBUTES:
            raise KeyError(field)
        return getattr(self, field)

    def as_dict(self) -> Dict[str, Optional[ProcessGroup]]:
        """Field -> process group (or None), every attribute."""
        return {name: getattr(self, name) for name in ATTRIBUTES}

    def to_megatron(self, cls: Optional[type] = None) -> Any:
        """These groups as Megatron-LM's ``ProcessGroupCollection``.

        Every field of the class is set: the ones hcg makes from this
        rank's groups (None where the grid lacks the dims, or the rank is
        outside the grid), and the ones in :data:`NOT_MADE` to None, which
        Megatron reads as "not in use" (rather than falling back to its
        global parallel state). ``tp_dp``, which Megatron's MIMO topology
        sets beside the declared fields, is set too.

        Args:
            cls: the collection class; default
                ``megatron.core.process_groups_config.ProcessGroupCollection``.

        Returns:
            An instance of ``cls``.

        Raises:
            ImportError: ``cls`` is None and Megatron-LM is not importable.
        """
        if cls is None:
            from megatron.core.process_groups_config import (
                ProcessGroupCollection)
            cls = ProcessGroupCollection
        try:
            names = [f.name for f in dataclasses.fields(cls)]
        except TypeError:  # not a dataclass: give it what hcg knows
            names = list(ATTRIBUTES) + list(NOT_MADE)
        kwargs: Dict[str, Any] = {}
        unknown = []
        for name in names:
            if name in ATTRIBUTES:
                kwargs[name] = getattr(self, name)
            elif name in NOT_MADE:
                kwargs[name] = None
            else:
                unknown.append(name)
        if unknown:
            warnings.warn("hcg.torch: %s.%s has fields hcg does not know "
                          "(%s); they are left unset" % (
                              cls.__module__, cls.__name__, ", ".join(unknown)),
                          stacklevel=2)
        out: Any = cls(**kwargs)
        if "tp_dp" not in names:
            out.tp_dp = getattr(self, "tp_dp")  # set by _set, as every field
        return out

    def __repr__(self) -> str:
        have = [f for f in ATTRIBUTES if getattr(self, f) is not None]
        return "<hcg.torch.ProcessGroups %s rank %d: %s>" % (
            self.grid, self.rank, ", ".join(have) or "none")


class MultiModuleCollection(Dict[str, ProcessGroups]):
    """Module (grid) name -> :class:`ProcessGroups`, in layout order, for a
    MIMO layout; ``language`` names the language module. Shaped like
    Megatron's ``MultiModuleProcessGroupCollection``."""

    def __init__(self, items: Mapping[str, ProcessGroups], language: str) -> None:
        super().__init__(items)
        self.language = language

    @property
    def language_model(self) -> ProcessGroups:
        return self[self.language]

    def modules_of_rank(self) -> List[str]:
        """The modules whose grid holds this rank."""
        return [n for n, p in self.items()
                if p.factory.layout.grid(n).contains(p.rank)]

    def to_megatron(self, cls: Optional[type] = None,
                    collection_cls: Optional[type] = None) -> Any:
        """``cls(module_pgs={name: ProcessGroupCollection},
        language_model_module_name=...)``; by default Megatron's
        MultiModuleProcessGroupCollection."""
        if cls is None:
            from megatron.core.process_groups_config import (
                MultiModuleProcessGroupCollection)
            cls = MultiModuleProcessGroupCollection
        return cls(module_pgs={n: p.to_megatron(collection_cls)
                               for n, p in self.items()},
                   language_model_module_name=self.language)


def _resolve(source: Source, d: Dist) -> Tuple[Resolved, int]:
    """The layout a factory was given (see hcg._source.resolve_source) and
    torch's rank, checked against the default process group: a task's
    rank must be torch's, the layout's world torch's."""
    world, rank = d.get_world_size(), d.get_rank()
    found = resolve_source(source, world=world)
    try:
        if found.task is not None and found.task.rank != rank:
            raise HcgValueError(Status.EMISMATCH, "HCG_RANK=%d but "
                                "torch.distributed.get_rank()=%d: the torch ranks "
                                "must be the Slurm task ranks (RANK=$SLURM_PROCID)"
                                % (found.task.rank, rank))
        if found.layout.world_size != world:
            raise HcgValueError(Status.EMISMATCH, "the layout is for %d ranks but the "
                                "torch world has %d" % (found.layout.world_size, world))
    except HcgValueError:
        if found.owned:
            found.layout.close()  # read here for nothing
        raise
    return found, rank


def _remat_request(layout: Layout, g: Any, view: str, dim: str) -> Any:
    """The request of a grid's one-dim remat group, None without the dim."""
    for v in g.views:
        if v.name == view and dim in v.dim_names:
            return layout.request_dims([dim], g.name, view)
    return None


#: A store name for a group of these ranks (see groups.members_tag).
_members_tag = _groups.members_tag


class GroupFactory:
    """Creates this rank's torch process groups for a layout, once per
    group key.

    ``source``: an :class:`hcg.Layout`, a :class:`hcg.env.TaskEnv`, layout
    text, or None (the layout init() recorded, else the HCG_* environment).
    The torch world size must equal the layout's, and torch ranks must be
    hcg ranks.

    ``backend``, ``timeout`` and ``pg_options`` apply to every group;
    ``options_fn(key)`` may return a dict overriding them for one group key
    (e.g. NCCL options with a high-priority stream for 'llm:cp').

    Calls are not collective: a rank creates the groups holding it, with
    their members only, in any order. Two ranks sharing groups must of
    course both create them (each waits up to the timeout for the others;
    a timeout names the group and the ranks that never arrived).

    ``share_equal=True`` (the default): keys whose group holds the same
    ranks share one process group when ``options_fn`` leaves both at the
    factory's settings. With size-1 dims (cp=1, a view whose expt_dp equals
    dp) many keys of a collection name the same ranks: 20 keys are 7 groups
    in bench_torch's layout, so fewer connections to make and, with NCCL,
    fewer communicators to hold. Operations on such keys are then ordered
    on one communicator, and ``destroy_process_group`` on one destroys it
    for all of them (as for alias fields). ``share_equal=False``: one
    process group per key, as Megatron-LM makes them.

    ``shared=False`` (a factory you make yourself): a fresh set of groups,
    this factory's own. ``shared=True`` (what :func:`new_collection`,
    :func:`new_collections`, :func:`hcg.torch.device_mesh`,
    :func:`hcg.torch.torchtitan_meshes`, ``HyperCommGrid.create_pg`` and
    the bridges use): the process's shared groups, so that every plain
    call hands out the same group object for the same ranks, backend and
    timeout, and nothing is made twice. A group whose ``options_fn`` entry
    sets anything is this factory's own either way. A group destroyed
    (``destroy_process_group``, :meth:`destroy`, the whole world's) is
    never handed out again: the next call makes it anew.

    Args:
        source: see above.
        backend: of every group; default hcg.torch.init()'s.
        timeout: of every group (a timedelta or seconds); default
            hcg.torch.init()'s, else HCG_TIMEOUT, else 300 s.
        pg_options: torch's options of every group.
        options_fn: key -> options for that group, or None.
        share_equal: see above.
        shared: see above.

    Raises:
        NotInitializedError: torch.distributed is not initialized.
        hcg.HcgTypeError: a source of another type.
        hcg.HcgValueError: a layout for another world size, a TaskEnv
            whose rank is not torch's (EMISMATCH), a bad timeout.
        hcg.HcgRuntimeError: no layout in the environment (EENV).
    """

    def __init__(self, source: Source = None, *,
                 backend: Optional[str] = None, timeout: Optional[Timeout] = None,
                 pg_options: Any = None,
                 options_fn: Optional[Callable[[str], Optional[Mapping[str, Any]]]] = None,
                 share_equal: bool = True, shared: bool = False) -> None:
        for name, flag in (("share_equal", share_equal), ("shared", shared)):
            if not isinstance(flag, bool):
                raise HcgTypeError(Status.EINVAL, "GroupFactory(%s=...) takes "
                                   "True or False, got %r" % (name, flag))
        self._dist = require_initialized("hcg.torch.GroupFactory")
        found, self.rank = _resolve(source, self._dist)
        self.layout, self._owned = found.layout, found.owned
        # The plugin's placement verdicts, when the groups are a task's
        # (also one read from the environment here); none for a bare layout.
        task = found.task
        self.node_local: Dict[str, bool] = (
            dict(task.node_local) if task is not None else {})
        self.domain_local: Dict[str, bool] = (
            dict(task.domain_local) if task is not None else {})
        self._backend = backend or STATE.backend
        self._timeout = group_timeout(timeout)
        self._pg_options = pg_options
        self._options_fn = options_fn
        self._share_equal = share_equal
        #: whether this factory's groups are the process's shared ones
        self.shared = shared
        # key -> (process group, members)
        self._groups: Dict[str, Tuple[ProcessGroup, List[int]]] = {}
        # what a process group is shared by -> the group (see _identity)
        self._objects: Dict[Tuple[str, Any], Any] = {}

    # ---- creation -------------------------------------------------------------

    def _spec(self, key: str, members: List[int]) -> _groups.GroupSpec:
        """The group's creation arguments. With the factory's own settings
        and share_equal, the group is named by its members, so every key
        of the same ranks meets in one group; else by its key."""
        kw: Dict[str, Any] = {"backend": self._backend,
                              "timeout": self._timeout,
                              "pg_options": self._pg_options}
        extra: Mapping[str, Any] = {}
        if self._options_fn is not None:
            extra = self._options_fn(key) or {}
            unknown = sorted(set(extra) - set(_OPTION_NAMES))
            if unknown:
                raise HcgValueError(Status.EINVAL, "options_fn('%s') returned %s; "
                                    "allowed: %s" % (key, ", ".join(unknown),
                                                ", ".join(_OPTION_NAMES)))
            kw.update(extra)
            if "timeout" in extra:
                kw["timeout"] = timeout_of(extra["timeout"])
        tag = None
        if self._share_equal and not extra:
            tag = _members_tag(members)
        return _groups.GroupSpec(key, tuple(members), kw["backend"],
                                 kw["timeout"], kw["pg_options"], tag,
                                 shared=self.shared and not extra,
                                 world=self._covers_world(key))

    def _covers_world(self, key: str) -> bool:
        """Whether every rank of the job is in a group of ``key`` and asks
        for it in the same call: a key over a grid that spans the job, or
        a rank's group of itself alone (every rank has one); not an
        embedding group."""
        if key.endswith("#alone"):
            return True
        if "#" in key:
            return False
        try:
            grid = self.layout.grid(self.layout.request(key).grid)
        except HcgError:
            return False
        return bool(grid.size == self._dist.get_world_size())

    def _forget_dead(self) -> None:
        """Forgets the groups destroyed since they were made (by
        :meth:`destroy` of another holder, ``destroy_process_group``), so
        that the next call makes them anew instead of handing them out."""
        dead = {id(g) for g, _ in self._groups.values()
                if not _groups.alive(g, self._dist)}
        if dead:
            for key in [k for k, (g, _) in self._groups.items() if id(g) in dead]:
                del self._groups[key]
            for ident in [i for i, g in self._objects.items() if id(g) in dead]:
                del self._objects[ident]

    def _ensure(self, wanted: Iterable[Tuple[str, List[int]]]) -> None:
        self._forget_dead()
        todo: Dict[str, List[int]] = {}
        for key, members in wanted:
            if key not in self._groups and key not in todo:
                todo[key] = members
        if not todo:
            return
        # One creation per tag (or key), several keys may wait on it.
        specs: Dict[Tuple[str, Any], _groups.GroupSpec] = {}
        owner: Dict[str, Tuple[str, Any]] = {}
        for key, members in todo.items():
            spec = self._spec(key, members)
            ident = ("tag", spec.tag) if spec.tag else ("key", key)
            owner[key] = ident
            if ident not in self._objects and ident not in specs:
                specs[ident] = spec
        made = _groups.build(list(specs.values()), self.rank)
        for ident, spec in specs.items():
            self._objects[ident] = made[spec.key]
        for key, members in todo.items():
            self._groups[key] = (self._objects[owner[key]], members)

    def _member(self, spec: Spec) -> Optional[Tuple[str, List[int]]]:
        req = self.layout.request(spec)
        if not self.layout.grid(req.grid).contains(self.rank):
            return None
        return req.key, self.layout.group_of_rank(req, self.rank).members

    def group(self, spec: Spec) -> Optional[ProcessGroup]:
        """This rank's process group for a spec.

        Args:
            spec: ``"GRID[/VIEW]:DIMS"`` or a :class:`hcg.Request`.

        Returns:
            The process group, or None when the rank is outside that grid.

        Raises:
            HcgTimeoutError: a member never arrived (the group and the absent
                ranks are named).
            hcg.PeerError: another member failed first.
            hcg.HcgError: a bad spec (see :meth:`hcg.Layout.request`), a group
                torch cannot connect.
        """
        found = self._member(spec)
        if found is None:
            return None
        self._ensure([found])
        return self._groups[found[0]][0]

    def groups_of(self, specs: Sequence[Spec]) -> List[Optional[ProcessGroup]]:
        """Several specs at once (their groups connect concurrently).

        Args:
            specs: specs as :meth:`group` takes them.

        Returns:
            One process group per spec, None for those whose grid does not hold
            this rank.

        Raises:
            As :meth:`group`; the groups this call made are destroyed.
        """
        found = [self._member(s) for s in specs]
        self._ensure(f for f in found if f is not None)
        return [None if f is None else self._groups[f[0]][0] for f in found]

    def _embedding_member(self, kind: str) -> Optional[Tuple[str, List[int]]]:
        members = self.layout.embedding_group(self.rank, kind)
        if members is None:
            return None
        return "%s#%s" % (self.layout.language, kind), members

    def embedding(self, kind: str = "embd") -> Optional[ProcessGroup]:
        """This rank's embedding group of a kind, keyed 'GRID#embd' as in libhcg.

        Args:
            kind: 'embd' or 'pos_embd'.

        Returns:
            The process group, or None when the rank is in none.

        Raises:
            As :meth:`group`; HcgValueError for an unknown kind.
        """
        found = self._embedding_member(kind)
        if found is None:
            return None
        self._ensure([found])
        return self._groups[found[0]][0]

    def _plan(self, grid: GridRef, embedding: Optional[bool]
              ) -> Tuple[str, Dict[str, Tuple[Optional[str], Optional[List[int]]]]]:
        g = self.layout.grid(grid)
        inside = g.contains(self.rank)
        plan: Dict[str, Tuple[Optional[str], Optional[List[int]]]] = {}
        for field in FIELDS + tuple(REMAT):
            req = (self.layout.field_request(g.index, field) if field in FIELDS
                   else _remat_request(self.layout, g, *REMAT[field]))
            if req is None:
                plan[field] = (None, None)
            elif not inside:
                plan[field] = (req.key, None)
            else:
                plan[field] = (req.key,
                               self.layout.group_of_rank(req, self.rank).members)
        if embedding is None:
            embedding = g.language
        if embedding:
            if not g.language:
                raise HcgValueError(Status.EINVAL, "grid '%s' is not the language "
                                    "module: it has no embedding groups" % g.name)
            for kind in EMBEDDINGS:
                found = self._embedding_member(kind) if inside else None
                plan[kind] = (("%s#%s" % (g.name, kind), found[1]) if found
                              else ("%s#%s" % (g.name, kind), None))
        return g.name, plan

    def _assemble(self, name: str, plan: Mapping[str, Tuple[Optional[str], Optional[List[int]]]]
                  ) -> ProcessGroups:
        out = ProcessGroups(name, self.rank, self)
        for field, (key, members) in plan.items():
            group = (self._groups[key][0] if members is not None and key is not None
                     else None)  # a key whenever there are members
            out._set(field, key, group, members)
        return out

    def collection(self, grid: GridRef = None, *,
                   embedding: Optional[bool] = None) -> ProcessGroups:
        """The process-group collection of one grid. A rank outside the grid gets
        None everywhere, and creates nothing.

        Args:
            grid: the grid; None: the only grid, else the language module.
            embedding: whether to add the embedding groups; default: for the
                language module only.

        Returns:
            The :class:`ProcessGroups`.

        Raises:
            As :meth:`group`.
        """
        if grid is None and len(self.layout.grids) > 1:
            grid = self.layout.language
        name, plan = self._plan(grid, embedding)
        self._ensure((k, m) for k, m in plan.values() if m is not None and k)
        return self._assemble(name, plan)

    def collections(self, grids: Optional[Iterable[GridRef]] = None
                    ) -> MultiModuleCollection:
        """Every grid's collection (MIMO), all of this rank's groups created in
        one batch.

        Args:
            grids: the grids; default all of them.

        Returns:
            grid name -> :class:`ProcessGroups`, in layout order.

        Raises:
            As :meth:`group`.
        """
        names = list(self.layout.grids if grids is None else grids)
        plans = [self._plan(n, None) for n in names]
        self._ensure((k, m) for _, p in plans for k, m in p.values()
                     if m is not None and k)
        return MultiModuleCollection({n: self._assemble(n, p) for n, p in plans},
                                     self.layout.language)

    # ---- bookkeeping ----------------------------------------------------------

    def keys(self) -> List[str]:
        """Keys of the groups created so far, in creation order."""
        return list(self._groups)

    def members(self, key: str) -> List[int]:
        """Members of a created group, ascending.

        Args:
            key: a key of :meth:`keys`.

        Returns:
            The members.

        Raises:
            KeyError: no group of that key was created.
        """
        return list(self._groups[key][1])

    def alone(self) -> ProcessGroup:
        """This rank's group of one (it connects nothing): what backs a
        mesh dimension of size 1 that no layout dim gives
        (:func:`hcg.torch.device_mesh`'s ``(NAME, ())``). With
        ``share_equal`` it is the same object as every group of this rank
        alone (a size-1 dim's).

        Returns:
            The process group.

        Raises:
            As :meth:`group`.
        """
        key = "rank%d#alone" % self.rank
        self._ensure([(key, [self.rank])])
        return self._groups[key][0]

    def destroy(self) -> None:
        """Destroys the process groups this factory handed out, each once,
        and forgets them (a later call creates them again). With
        ``shared=True`` they are the process's shared groups: every other
        holder (a mesh, another collection) loses them too, and the next
        plain call makes them anew."""
        seen = set()
        for group, _ in self._groups.values():
            if id(group) not in seen:
                seen.add(id(group))
                if _groups.alive(group, self._dist):  # not by another holder
                    self._dist.destroy_process_group(group)
        self._groups.clear()
        self._objects.clear()

    def close(self) -> None:
        """Frees the layout if this factory read it itself (the groups stay)."""
        if self._owned:
            self.layout.close()


def new_collection(source: Source = None, grid: GridRef = None,
                   **kwargs: Any) -> ProcessGroups:
    """One grid's :class:`ProcessGroups`. The factory stays reachable as
    ``.factory``.

    Its groups are the process's shared groups (``shared=True``): called
    again, or after :func:`hcg.torch.device_mesh`,
    :func:`hcg.torch.torchtitan_meshes`, ``HyperCommGrid.create_pg`` or a
    bridge, it hands out the same group objects for the same ranks,
    backend and timeout (``mesh["tp"].get_group() is pgs.tp``) and makes
    nothing twice. ``shared=False`` asks for a fresh set.

    Args:
        source: as :class:`GroupFactory`'s.
        grid: as :meth:`GroupFactory.collection`'s.
        **kwargs: :class:`GroupFactory`'s keyword arguments (``shared``
            defaults to True here).

    Returns:
        The collection.

    Raises:
        As :class:`GroupFactory` and :meth:`GroupFactory.collection`.
    """
    kwargs.setdefault("shared", True)
    return GroupFactory(source, **kwargs).collection(grid)


def new_collections(source: Source = None,
                    grids: Optional[Iterable[GridRef]] = None,
                    **kwargs: Any) -> MultiModuleCollection:
    """Every grid's :class:`ProcessGroups` (MIMO), made by one factory in one
    batch. A rank gets None in the grids it is not in. Its groups are the
    process's shared groups, as :func:`new_collection`'s.

    Args:
        source: as :class:`GroupFactory`'s.
        grids: the grids; default all of them.
        **kwargs: :class:`GroupFactory`'s keyword arguments (``shared``
            defaults to True here).

    Returns:
        grid name -> collection.

    Raises:
        As :class:`GroupFactory` and :meth:`GroupFactory.collections`.
    """
    kwargs.setdefault("shared", True)
    return GroupFactory(source, **kwargs).collections(grids)


#: An alias of :func:`new_collections` under the name Megatron's MIMO code
#: uses for its result (doc/torch.md documents both): the same function.
new_multimodule_collection = new_collections
