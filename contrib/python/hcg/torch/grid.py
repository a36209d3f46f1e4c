"""``hcg.torch.HyperCommGrid``: Megatron-LM's class, backed by libhcg.

It keeps the contract of Megatron-LM's ``megatron.core.hyper_comm_grid``
(main as of d98e8a6), as Megatron's own code and tests use it:

* it is built before torch.distributed starts: the world size comes from
  ``WORLD_SIZE``, else from the initialized default group, else the
  constructor raises RuntimeError; with ``WORLD_SIZE`` set it does not even
  import torch;
* ``get_rank_enum`` (base and views) and ``register_view`` need no process
  group; ``create_pg`` needs the default group and says so when there is
  none;
* the same exception types (KeyError, ValueError, RuntimeError, TypeError)
  and the message texts Megatron's tests match, each also an
  :class:`hcg.HcgError` with a status;
* ``create_pg(dims, view=..., **kwargs)`` takes the keyword arguments of
  ``torch.distributed.new_subgroups_by_enumeration`` in the torch at hand
  (``timeout``, ``pg_options``, ``group_desc`` where torch has it) and
  applies them to the group;
* the same group keys in ``_pgs`` (dims in reversed dim order joined by
  ``-`` for the base, ``(view, dims)`` for a view), the same reuse of base
  groups for view requests whose dims are all shared, and ``destroy()``
  frees only this rank's groups, each once;
* numpy integers are accepted where Megatron accepts them.

Two differences, both the point of hcg: the grid is an hcg layout (checked
by the same core as the SPANK plugin), and ``create_pg`` creates only the
group holding this rank, with its members alone (:mod:`hcg.torch.groups`),
instead of one world-collective call per group; ranks outside the grid get
None and make no call.
"""

from __future__ import annotations

import hashlib
import inspect
import numbers
import os
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple, Union

from ..errors import (HcgError, HcgKeyError, HcgRuntimeError, HcgTypeError,
                      HcgValueError, Status)
from ..layout import Layout, Request
from . import groups as _groups
from ._base import (STATE, TorchUnavailableError, dist, group_timeout,
                    require_initialized)


class GridKeyError(HcgKeyError):
    """KeyError of HyperCommGrid: a group created twice or never created,
    an unregistered view."""


class GridValueError(HcgValueError):
    """ValueError of HyperCommGrid: bad shape, names, offset or view."""


class GridRuntimeError(HcgRuntimeError):
    """RuntimeError of HyperCommGrid: a grid larger than the world, a world
    size nobody gave."""


class GridTypeError(HcgTypeError):
    """TypeError of HyperCommGrid: a keyword argument create_pg does not
    take."""


Dims = Union[str, Sequence[str]]
#: A key of ``_pgs``: the dims joined by '-' (base), or (view, dims).
PgKey = Union[str, Tuple[str, Tuple[str, ...]]]

BASE = "base"
_DEFAULT_NAME = "grid"


class _RankView:
    """One factorization of the grid's ranks (``_views[name]``)."""

    def __init__(self, name: str, shape: List[int], dim_names: List[str],
                 shared_dims: List[str]) -> None:
        self.name = name
        self.shape = shape
        self.dim_names = dim_names
        self.shared_dims = shared_dims

    def __repr__(self) -> str:
        return "_RankView(%r, shape=%s, dim_names=%s, shared_dims=%s)" % (
            self.name, self.shape, self.dim_names, self.shared_dims)


class _Planned(NamedTuple):
    """A create_pg request resolved but not yet made."""

    grid: "HyperCommGrid"
    key: PgKey
    spec: Optional[_groups.GroupSpec]  # None: this rank is outside the grid


def _positive_ints(shape: Sequence[Any], what: str) -> List[int]:
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s <= 0:
            raise GridValueError(Status.EINVAL, "%s shape must be positive "
                                 "ints, got %s" % (what, _show(shape)))
        out.append(int(s))
    return out


def _show(values: Sequence[Any]) -> str:
    """A list as Python prints one, numpy integers as plain numbers."""
    return "[%s]" % ", ".join(
        str(int(v)) if isinstance(v, numbers.Integral) and not isinstance(v, bool)
        else repr(v) for v in values)


def _product(sizes: Sequence[int]) -> int:
    n = 1
    for s in sizes:
        n *= s
    return n


def world_size_for_grid() -> int:
    """The world a HyperCommGrid is built for: ``WORLD_SIZE``, else the
    initialized default group's size, else RuntimeError (Megatron's
    order)."""
    text = os.environ.get("WORLD_SIZE")
    if text is not None:
        value = text.strip()
        if not value.isdigit() or not 1 <= int(value) <= 2 ** 31 - 1:
            raise GridValueError(Status.EENV, "WORLD_SIZE=%r is not a "
                                 "positive number of ranks" % text[:32])
        return int(value)
    try:
        d = dist()
    except TorchUnavailableError as exc:
        raise GridRuntimeError(Status.EENV, "Cannot determine world size: "
                               "WORLD_SIZE is not set and torch.distributed "
                               "cannot be used (%s); set WORLD_SIZE to build "
                               "a HyperCommGrid without torch" % exc) from None
    if d.is_initialized():
        return int(d.get_world_size())
    raise GridRuntimeError(Status.EENV, "Cannot determine world size: "
                           "WORLD_SIZE is not set and torch.distributed is "
                           "not initialized; set WORLD_SIZE, or call "
                           "hcg.torch.init() (or torch.distributed."
                           "init_process_group) before creating the "
                           "HyperCommGrid")


def _subgroup_kwargs(d: Any) -> Tuple[str, ...]:
    """The keyword arguments new_subgroups_by_enumeration takes in this
    torch, besides the enumeration (backend included)."""
    fn = getattr(d, "new_subgroups_by_enumeration", None)
    if fn is None:
        return ("timeout", "backend", "pg_options")
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return ("timeout", "backend", "pg_options")
    return tuple(p for p in params if p != "ranks_per_subgroup_list")


#: The keyword arguments hcg applies to a member-made group.
_APPLIED = ("timeout", "backend", "pg_options", "group_desc")


class HyperCommGrid:
    """N-dimensional communication grid, Megatron-LM's ``HyperCommGrid``.

    Dims are listed fastest first (``tp`` first), as the ``order`` argument
    of Megatron's ``initialize_model_parallel``.

    Args:
        shape: size of each dim (ints or numpy integers).
        dim_names: name of each dim, as many as ``shape``.
        rank_offset: first global rank of the grid. Default 0.
        backend: backend of the groups ``create_pg`` makes. Default None:
            the default group's (or what ``hcg.torch.init()`` chose).
        name: (hcg) the grid's name in its layout and in its groups' store
            keys and error messages; default ``grid``.

    Raises:
        ValueError: ``len(shape) != len(dim_names)``, a size that is not a
            positive integer, a repeated dim name, a negative
            ``rank_offset``, a bad ``WORLD_SIZE``.
        RuntimeError: no world size (``WORLD_SIZE`` unset and
            torch.distributed not initialized); a grid that does not fit
            the world after its offset ("over sized").
    """

    # Typed here: mypy cannot infer them from __init__ alone.
    rank_offset: int
    size: int
    shape: List[int]
    dim_names: List[str]
    backend: Optional[str]
    world: int
    _name: str
    _tag: str

    def __init__(self, shape: Sequence[int], dim_names: Sequence[str],
                 rank_offset: int = 0, backend: Optional[str] = None, *,
                 name: Optional[str] = None) -> None:
        shape, dim_names = list(shape), list(dim_names)
        if len(shape) != len(dim_names):
            raise GridValueError(Status.EINVAL, "len(shape) %s != "
                                 "len(dim_names) %s" % (_show(shape), dim_names))
        world = world_size_for_grid()
        if isinstance(rank_offset, bool) or not isinstance(rank_offset, numbers.Integral):
            raise GridValueError(Status.EINVAL, "rank_offset must be an "
                                 "integer, got %r" % (rank_offset,))
        if rank_offset < 0:
            raise GridValueError(Status.EINVAL, "rank_offset must be "
                                 "non-negative, got %d" % rank_offset)
        sizes = _positive_ints(shape, "Grid")
        if len(set(dim_names)) != len(dim_names):
            raise GridValueError(Status.EINVAL, "Grid has duplicate "
                                 "dim_names: %s" % dim_names)
        self.rank_offset = int(rank_offset)
        self.size = _product(sizes)
        if self.size > world - self.rank_offset:
            raise GridRuntimeError(Status.ELAYOUT, "Grid shape %s is over "
                                   "sized with world size %d and rank offset "
                                   "%d: it would span ranks [%d, %d)"
                                   % (_show(sizes), world, self.rank_offset,
                                      self.rank_offset,
                                      self.rank_offset + self.size))
        self.shape = sizes
        self.dim_names = dim_names
        self.backend = backend
        self.world = world
        self._name = name or _DEFAULT_NAME
        self._views: Dict[str, _RankView] = {
            BASE: _RankView(BASE, sizes[:], dim_names[:], [])}
        self._pgs: Dict[PgKey, Any] = {}
        self._layout: Optional[Layout] = None
        self._tag = ""
        self._rebuild(self._views)

    # ---- the backing layout ---------------------------------------------------

    def _text(self, views: Dict[str, _RankView], share: bool = True) -> str:
        def dims(v: _RankView) -> str:
            return ",".join(d if share and d in v.shared_dims else "%s=%d" % (d, s)
                            for d, s in zip(v.dim_names, v.shape))
        items = ["%s@%d:%s" % (self._name, self.rank_offset, dims(views[BASE]))]
        items += ["%s/%s:%s" % (self._name, n, dims(v))
                  for n, v in views.items() if n != BASE]
        # Filler grids cover the ranks outside this grid: a layout covers
        # the whole world.
        lo, hi = "hcg_lo", "hcg_hi"
        while self._name in (lo, hi):
            lo, hi = lo + "_", hi + "_"
        if self.rank_offset > 0:
            items.append("%s@0:x=%d" % (lo, self.rank_offset))
        end = self.rank_offset + self.size
        if end < self.world:
            items.append("%s@%d:x=%d" % (hi, end, self.world - end))
        return "; ".join(items)

    def _load(self, text: str) -> Layout:
        try:
            return Layout(text, self.world, language=self._name)
        except HcgError as exc:
            raise GridValueError(exc.code, exc.message) from None

    def _rebuild(self, views: Dict[str, _RankView]) -> None:
        layout = self._load(self._text(views))
        if self._layout is not None:
            self._layout.close()
        else:
            # Names this grid's groups in the store: the same on every rank
            # that builds the same grid, different for another grid.
            base = layout.grid(self._name)
            self._tag = hashlib.sha1(("%d:%s" % (base.offset, ",".join(
                "%s=%d" % (d.name, d.size) for d in base.dims))).encode()
            ).hexdigest()[:8]
        self._layout, self._views = layout, dict(views)

    @property
    def layout(self) -> Layout:
        """The hcg layout behind the grid (its grid is named ``name``)."""
        assert self._layout is not None
        return self._layout

    @property
    def name(self) -> str:
        """The grid's name in its layout."""
        return self._name

    # ---- views ----------------------------------------------------------------

    def register_view(self, name: str, shape: Sequence[int],
                      dim_names: Sequence[str],
                      shared_dims: Optional[Sequence[str]] = None) -> None:
        """Registers another factorization of the grid's ranks.

        Args:
            name: the view's name (``base`` is the grid itself).
            shape: size of each of the view's dims (ints or numpy integers);
                they multiply to the grid's size.
            dim_names: the view's dims, fastest first.
            shared_dims: dims that are the base's own: each must be in both
                and enumerate exactly the same groups in both. Requests in
                the view that name only shared dims are the base's groups.

        Raises:
            ValueError: a name already registered, lengths that differ,
                repeated names, sizes that are not positive integers or do
                not multiply to the grid's size, repeated shared dims, a
                shared dim missing from the base or the view, or enumerating
                other groups than in the base. Checked in that order.
        """
        what = "View %r" % (name,)
        if name in self._views:
            raise GridValueError(Status.EEXIST, "%s is already registered"
                                 % what)
        shape, dim_names = list(shape), list(dim_names)
        if len(shape) != len(dim_names):
            raise GridValueError(Status.EINVAL, "len(shape) %s != "
                                 "len(dim_names) %s" % (_show(shape), dim_names))
        if len(set(dim_names)) != len(dim_names):
            raise GridValueError(Status.EINVAL, "%s has duplicate dim_names: "
                                 "%s" % (what, dim_names))
        sizes = _positive_ints(shape, what)
        if _product(sizes) != self.size:
            raise GridValueError(Status.ELAYOUT, "%s shape %s has size %d, "
                                 "but the grid size is %d"
                                 % (what, _show(sizes), _product(sizes), self.size))
        shared = list(shared_dims) if shared_dims is not None else []
        if len(set(shared)) != len(shared):
            raise GridValueError(Status.EINVAL, "%s has duplicate "
                                 "shared_dims: %s" % (what, shared))
        for d in shared:
            if d not in self.dim_names:
                raise GridValueError(Status.EINVAL, "Shared dim %r of view "
                                     "%r is not in the base view %s"
                                     % (d, name, self.dim_names))
            if d not in dim_names:
                raise GridValueError(Status.EINVAL, "Shared dim %r of view "
                                     "%r is not in the view's dim_names %s"
                                     % (d, name, dim_names))
        view = _RankView(name, sizes, dim_names, shared)
        views = dict(self._views)
        views[name] = view
        if shared:
            self._check_shared(name, views)
        self._rebuild(views)

    def _check_shared(self, name: str, views: Dict[str, _RankView]) -> None:
        """Each shared dim, then all of them together, must enumerate the
        same groups in the view as in the base. Asked of libhcg on a layout
        where the view's dims are its own."""
        shared = views[name].shared_dims
        with self._load(self._text(views, share=False)) as probe:
            def groups(view: str, dims: Sequence[str]) -> List[List[int]]:
                return probe.enumerate(probe.request_dims(dims, self._name, view))
            for d in shared:
                base, mine = groups(BASE, [d]), groups(name, [d])
                if base != mine:
                    raise GridValueError(Status.ELAYOUT, "Shared dim %r has "
                                         "different membership across views: "
                                         "base enumeration %s != view %r "
                                         "enumeration %s" % (d, base, name, mine))
            if len(shared) > 1:
                base, mine = groups(BASE, shared), groups(name, shared)
                if base != mine:
                    raise GridValueError(Status.ELAYOUT, "Shared dims %r have "
                                         "different membership across views: "
                                         "base enumeration %s != view %r "
                                         "enumeration %s" % (shared, base, name, mine))

    def _resolve_view(self, view: Optional[str]) -> _RankView:
        name = BASE if view is None else view
        if name not in self._views:
            raise GridKeyError(Status.ENOTFOUND, "View %r is not registered. "
                               "Registered views: %s" % (name, sorted(self._views)))
        return self._views[name]

    # ---- keys -----------------------------------------------------------------

    @staticmethod
    def _order_dims_for(dim_names: Sequence[str], dims: Dims) -> Tuple[List[str], str]:
        """``dims`` in reversed ``dim_names`` order and their key, as
        Megatron orders them (a single name is kept as given)."""
        if isinstance(dims, str):
            ordered = [dims]
        else:
            rev = list(reversed(list(dim_names)))
            ordered = sorted(dims, key=rev.index)
        return ordered, "-".join(ordered)

    @staticmethod
    def _names(view: _RankView, dims: Dims) -> List[str]:
        names = [dims] if isinstance(dims, str) else list(dims)
        for d in names:
            if d not in view.dim_names:
                raise GridValueError(Status.ENOTFOUND, "%r is not in view %r "
                                     "with dim_names %s" % (d, view.name, view.dim_names))
        return names

    def _resolve(self, dims: Dims, view: Optional[str]
                 ) -> Tuple[_RankView, PgKey, Request]:
        """The view, Megatron's key and the hcg request of ``dims``."""
        v = self._resolve_view(view)
        names = self._names(v, dims)
        ordered, key = self._order_dims_for(v.dim_names, dims if isinstance(dims, str)
                                            else names)
        req = self.layout.request_dims(names, self._name, v.name)
        if v.name == BASE or req.view == BASE:
            # A view request whose dims are all shared is the base's group.
            _, key = self._order_dims_for(self.dim_names, names)
            return v, key, req
        return v, (v.name, tuple(ordered)), req

    @staticmethod
    def _is_base_key(key: PgKey) -> bool:
        return isinstance(key, str)

    # ---- groups ---------------------------------------------------------------

    def _torch(self) -> Any:
        """torch.distributed, initialized, for this grid's world."""
        d = require_initialized("hcg.torch.HyperCommGrid.create_pg")
        world = d.get_world_size()
        if world != self.world:
            raise GridRuntimeError(Status.EMISMATCH, "this HyperCommGrid was "
                                   "built for a world of %d ranks but "
                                   "torch.distributed has %d: WORLD_SIZE and "
                                   "the default group disagree"
                                   % (self.world, world))
        return d

    def _check_new(self, v: _RankView, key: PgKey, dims: Dims) -> None:
        """KeyError when the group of ``key`` was created already."""
        if key not in self._pgs:
            return
        if self._is_base_key(key):
            raise GridKeyError(Status.EEXIST, "Process group %s has already "
                               "been created (key %r); its options cannot be "
                               "compared with the first call's, so it is not "
                               "returned again: use get_pg" % (_dims_text(dims), key))
        raise GridKeyError(Status.EEXIST, "Process group %s for view %r has "
                           "already been created; its options cannot be "
                           "compared with the first call's, so it is not "
                           "returned again: use get_pg" % (_dims_text(dims), v.name))

    def _plan(self, dims: Dims, view: Optional[str], kwargs: Dict[str, Any],
              d: Any, rank: int) -> _Planned:
        v, key, req = self._resolve(dims, view)
        self._check_new(v, key, dims)
        takes = _subgroup_kwargs(d)
        for k in kwargs:
            if k not in takes:
                raise GridTypeError(Status.EINVAL, "create_pg() got an "
                                    "unexpected keyword argument %r (this "
                                    "torch's new_subgroups_by_enumeration "
                                    "takes %s)" % (k, ", ".join(takes)))
            if k not in _APPLIED:
                raise GridTypeError(Status.ENOTSUP, "create_pg(%s=...): hcg "
                                    "cannot apply this argument of torch's "
                                    "new_subgroups_by_enumeration to a group "
                                    "made by its members" % k)
        if not self.layout.grid(self._name).contains(rank):
            return _Planned(self, key, None)
        members = self.layout.group_of_rank(req, rank).members
        # Without options of its own (group_desc, pg_options) the group is
        # one of the process's shared groups, named by its members: the
        # object new_collection() and device_mesh() hand out for these
        # ranks, backend and timeout. With them, the grid's own.
        shared = kwargs.get("pg_options") is None and \
            kwargs.get("group_desc") is None
        spec = _groups.GroupSpec(
            req.key, tuple(members),
            kwargs.get("backend") or self.backend or STATE.backend,
            group_timeout(kwargs.get("timeout")), kwargs.get("pg_options"),
            _groups.members_tag(members) if shared else
            "%s.%s" % (req.key, self._tag), kwargs.get("group_desc"),
            shared=shared,
            world=self.layout.grid(self._name).size == d.get_world_size())
        return _Planned(self, key, spec)

    def create_pg(self, dims: Dims, *, view: Optional[str] = None,
                  **kwargs: Any) -> Any:
        """Creates this rank's process group over ``dims``.

        Only the members of the group take part (no world-collective call);
        a rank outside the grid gets None and makes no call. Without
        ``group_desc`` and ``pg_options`` the group is one of the process's
        shared groups: the object ``hcg.torch.new_collection()`` and
        ``hcg.torch.device_mesh()`` hand out for the same ranks, backend and
        timeout (made once); with either, a group of this grid's own.

        Args:
            dims: a dim name or a list of them (any order) of the view.
            view: a registered view's name; default the base.
            **kwargs: the keyword arguments of torch's
                ``new_subgroups_by_enumeration`` in this torch:
                ``timeout`` (timedelta or seconds; default ``HCG_TIMEOUT``,
                else 300 s), ``pg_options`` (backend options, e.g.
                ``ProcessGroupNCCL.Options``), ``group_desc`` (torch 2.x) and
                ``backend`` (overrides the grid's).

        Returns:
            The process group holding this rank, or None outside the grid.

        Raises:
            KeyError: an unregistered view; a group (key) already created.
            ValueError: a dim the view does not have.
            TypeError: a keyword argument this torch's
                new_subgroups_by_enumeration does not take.
            NotInitializedError: torch.distributed is not initialized (a
                RuntimeError, as Megatron's tests expect, and a ValueError).
            RuntimeError: torch.distributed's world is not the grid's.
            hcg.HcgError: a member that never arrives (ETIMEOUT).
        """
        # The key first: a group created twice is a KeyError even before
        # torch starts, as in Megatron.
        v, key, _ = self._resolve(dims, view)
        self._check_new(v, key, dims)
        d = self._torch()
        planned = self._plan(dims, view, kwargs, d, d.get_rank())
        _make([planned], d.get_rank())
        return self._pgs[planned.key]

    def get_pg(self, dims: Dims, *, view: Optional[str] = None) -> Any:
        """The process group ``create_pg`` made over ``dims``.

        Args:
            dims: a dim name or a list of them (any order).
            view: a registered view's name; default the base.

        Returns:
            The group (None on a rank outside the grid).

        Raises:
            KeyError: the group was not created, or the view is not
                registered.
            ValueError: a dim the view does not have.
        """
        v, key, _ = self._resolve(dims, view)
        if key not in self._pgs:
            if self._is_base_key(key):
                raise GridKeyError(Status.ENOTFOUND, "Process group for %s "
                                   "hasn't been created. Call create_pg first."
                                   % (key,))
            raise GridKeyError(Status.ENOTFOUND, "Process group %s for view "
                               "%r hasn't been created. Call create_pg first."
                               % (_dims_text(dims), v.name))
        return self._pgs[key]

    def get_rank_enum(self, dims: Dims, *, view: Optional[str] = None) -> List[List[int]]:
        """Every group over ``dims``: the enumeration ``create_pg`` uses,
        without any process group.

        Args:
            dims: a dim name or a list of them (any order).
            view: a registered view's name; default the base.

        Returns:
            The groups, each ascending, sorted by their first rank.

        Raises:
            KeyError: an unregistered view.
            ValueError: a dim the view does not have.
        """
        _, _, req = self._resolve(dims, view)
        return self.layout.enumerate(req)

    def _gen_rank_enum(self, dims: Sequence[str]) -> List[List[int]]:
        """Megatron's unsorted enumeration of base ``dims`` as named: inside
        a group the last named dim varies fastest (its non-colocated bridge
        reads groups so)."""
        names = self._names(self._views[BASE], list(dims))
        req = self.layout.request_dims(names, self._name, BASE)
        out = []
        for members in self.layout.groups(req):
            coords = {m: self.layout.coords(m, self._name) for m in members}
            out.append(sorted(members, key=lambda m: [coords[m][d] for d in names]))
        return out

    def is_current_rank_in_grid(self) -> bool:
        """Whether this process's torch rank is in ``[rank_offset,
        rank_offset + size)``."""
        rank: int = dist().get_rank()
        return self.rank_offset <= rank < self.rank_offset + self.size

    def destroy(self) -> None:
        """Destroys the groups of this grid that hold this rank, each
        object once (a view's shared group is the base's), and forgets all
        of them. Views stay registered. A group this grid shares with
        other holders (the process's shared groups: ``new_collection()``,
        another grid) is destroyed for them too; one already destroyed
        there is skipped."""
        pgs = list(self._pgs.values())
        self._pgs.clear()
        if not any(_is_member(pg) for pg in pgs):
            return
        d = dist()
        seen = set()
        for pg in pgs:
            if _is_member(pg) and id(pg) not in seen:
                seen.add(id(pg))
                if _groups.alive(pg, d):
                    d.destroy_process_group(pg)

    def __repr__(self) -> str:
        return "<hcg.torch.HyperCommGrid %s>" % self.layout.text


def _dims_text(dims: Dims) -> str:
    return repr(dims) if isinstance(dims, str) else str(list(dims))


def _is_member(pg: Any) -> bool:
    """Whether ``pg`` is a group of this rank (not None, not torch's
    non-member sentinel)."""
    if pg is None:
        return False
    try:
        import torch.distributed as d
    except ImportError:
        return True
    non_member = getattr(getattr(d, "GroupMember", None), "NON_GROUP_MEMBER", None)
    return pg is not non_member


def _make(plans: Sequence[_Planned], rank: int,
          extra: Sequence[_groups.GroupSpec] = ()) -> Dict[str, Any]:
    """Makes the planned groups of this rank, and ``extra`` groups, in one
    batch (they connect concurrently, in an order every rank shares),
    records each planned group in its grid, and returns every group made
    by its GroupSpec key."""
    specs = [p.spec for p in plans if p.spec is not None] + list(extra)
    keys = [s.key for s in specs]
    if len(set(keys)) != len(keys):
        raise HcgValueError(Status.EINVAL, "one batch names a group twice: %s"
                            % sorted(k for k in set(keys) if keys.count(k) > 1))
    made = _groups.build(specs, rank) if specs else {}
    for p in plans:
        p.grid._pgs[p.key] = None if p.spec is None else made[p.spec.key]
    return made
