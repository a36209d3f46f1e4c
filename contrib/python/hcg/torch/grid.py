"""``hcg.torch.HyperCommGrid``: Megatron-LM's class, backed by libhcg.

Same constructor, ``create_pg``/``get_pg``/``get_rank_enum`` (``view=``
keyword-only), ``register_view(name, shape, dim_names, shared_dims=)``, the
same keys, the same exceptions (KeyError, ValueError, RuntimeError) and the
same reuse of base groups for views whose dims are all shared. Two
differences, both the point of hcg: the grid is an hcg layout (checked by
the same core as the SPANK plugin), and ``create_pg`` creates only the
group holding this rank, with its members alone (:mod:`hcg.torch.groups`);
ranks outside the grid get None and make no call.
"""

from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from ..errors import HcgError, Status
from ..layout import Layout
from . import groups as _groups
from ._base import STATE, dist, group_timeout

_GRID = "grid"  # name of the grid inside the backing layout


class GridKeyError(HcgError, KeyError):
    """KeyError of HyperCommGrid (e.g. a group created twice)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return HcgError.__str__(self)


class GridValueError(HcgError, ValueError):
    """ValueError of HyperCommGrid (bad shape, names or view)."""


class GridRuntimeError(HcgError, RuntimeError):
    """RuntimeError of HyperCommGrid (grid larger than the world)."""


Dims = Union[str, Sequence[str]]


def _names(dims: Dims) -> List[str]:
    return [dims] if isinstance(dims, str) else list(dims)


def _check_shape(shape: Sequence[Any], dim_names: Sequence[str], what: str) -> List[int]:
    if len(shape) != len(dim_names):
        raise GridValueError(Status.EINVAL, "%s: len(shape)=%d but "
                             "len(dim_names)=%d" % (what, len(shape), len(dim_names)))
    if len(set(dim_names)) != len(dim_names):
        raise GridValueError(Status.EINVAL, "%s: dim_names %s repeat a name"
                             % (what, list(dim_names)))
    out = []
    for s in shape:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral) or s < 1:
            raise GridValueError(Status.EINVAL, "%s: shape %s must hold "
                                 "positive integers" % (what, list(shape)))
        out.append(int(s))
    return out


class HyperCommGrid:
    """N-dimensional communication grid, dims fastest first (``tp``
    first), as in Megatron-LM."""

    def __init__(self, shape: Sequence[int], dim_names: Sequence[str],
                 rank_offset: int = 0, backend: Optional[str] = None) -> None:
        self._dist = dist()
        if not self._dist.is_initialized():
            raise GridRuntimeError(Status.EINVAL, "torch.distributed is not "
                                   "initialized: call hcg.torch.init() first")
        self.shape = _check_shape(shape, dim_names, "HyperCommGrid")
        self.dim_names = list(dim_names)
        self.rank_offset = int(rank_offset)
        self.backend = backend
        self.size = 1
        for s in self.shape:
            self.size *= s
        world = self._dist.get_world_size()
        if self.rank_offset < 0 or self.rank_offset + self.size > world:
            raise GridRuntimeError(Status.EMISMATCH, "grid of %d ranks at "
                                   "offset %d does not fit the world of %d "
                                   "ranks" % (self.size, self.rank_offset, world))
        self.world = world
        self.rank = self._dist.get_rank()
        self._views: Dict[str, str] = {}  # name -> layout item text
        self._layout: Optional[Layout] = None
        self._pgs: Dict[str, Any] = {}
        self._by_hcg_key: Dict[str, Any] = {}
        self._requested: set = set()  # (view, key) asked of create_pg
        self._rebuild()

    # ---- the backing layout ---------------------------------------------------

    def _text(self, views: Dict[str, str]) -> str:
        dims = ",".join("%s=%d" % p for p in zip(self.dim_names, self.shape))
        items = ["%s@%d:%s" % (_GRID, self.rank_offset, dims)]
        items += ["%s/%s:%s" % (_GRID, n, t) for n, t in views.items()]
        # Filler grids cover the ranks outside this grid: a layout covers
        # the whole world.
        if self.rank_offset > 0:
            items.append("before@0:x=%d" % self.rank_offset)
        end = self.rank_offset + self.size
        if end < self.world:
            items.append("after@%d:x=%d" % (end, self.world - end))
        return "; ".join(items)

    def _rebuild(self, views: Optional[Dict[str, str]] = None) -> None:
        views = self._views if views is None else views
        try:
            layout = Layout(self._text(views), self.world, language=_GRID)
        except HcgError as exc:
            raise GridValueError(exc.code, exc.message) from None
        if self._layout is not None:
            self._layout.close()
        self._layout, self._views = layout, dict(views)

    @property
    def layout(self) -> Layout:
        """The hcg layout behind the grid."""
        assert self._layout is not None
        return self._layout

    def register_view(self, name: str, shape: Sequence[int],
                      dim_names: Sequence[str],
                      shared_dims: Optional[Sequence[str]] = None) -> None:
        """Registers another factorization of the same ranks. Dims in
        ``shared_dims`` must have the base's size, and their groups are the
        base's groups."""
        what = "register_view(%r)" % name
        if not isinstance(name, str) or name == "base" or name in self._views:
            raise GridValueError(Status.EINVAL, "%s: the name is taken or "
                                 "invalid" % what)
        sizes = _check_shape(shape, dim_names, what)
        shared = list(shared_dims or [])
        if len(set(shared)) != len(shared):
            raise GridValueError(Status.EINVAL, "%s: shared_dims %s repeat a "
                                 "name" % (what, shared))
        parts = []
        for d, s in zip(dim_names, sizes):
            if d in shared:
                if d not in self.dim_names:
                    raise GridValueError(Status.EINVAL, "%s: shared dim '%s' "
                                         "is not a dim of the base (%s)"
                                         % (what, d, ", ".join(self.dim_names)))
                base = self.shape[self.dim_names.index(d)]
                if s != base:
                    raise GridValueError(Status.EINVAL, "%s: shared dim '%s' "
                                         "has size %d in the view but %d in "
                                         "the base" % (what, d, s, base))
                parts.append(d)
            else:
                parts.append("%s=%d" % (d, s))
        missing = [d for d in shared if d not in dim_names]
        if missing:
            raise GridValueError(Status.EINVAL, "%s: shared_dims %s are not "
                                 "in dim_names %s" % (what, missing, list(dim_names)))
        views = dict(self._views)
        views[name] = ",".join(parts)
        self._rebuild(views)

    # ---- groups ---------------------------------------------------------------

    def _spec(self, dims: Dims, view: Optional[str]) -> str:
        names = _names(dims)
        where = _GRID if view in (None, "base") else "%s/%s" % (_GRID, view)
        if view not in (None, "base") and view not in self._views:
            raise GridKeyError(Status.ENOTFOUND, "view '%s' is not registered "
                               "(views: base%s)" % (view, "".join(
                                   ", " + v for v in self._views)))
        return "%s:%s" % (where, ",".join(names))

    def _key(self, dims: Dims, view: Optional[str]) -> Tuple[str, Any]:
        """Megatron's key of a request (dims in reversed dim order joined by
        '-', prefixed 'VIEW:' for a named view) and the hcg request."""
        try:
            req = self.layout.request(self._spec(dims, view))
        except HcgError as exc:
            raise GridKeyError(exc.code, exc.message) from None
        order = list(reversed(self.layout.grid(_GRID).view(req.view).dim_names))
        key = "-".join(d for d in order if d in req.dims)
        if req.view != "base":
            key = "%s:%s" % (req.view, key)
        return key, req

    def create_pg(self, dims: Dims, *, view: Optional[str] = None,
                  **kwargs: Any) -> Any:
        """Creates this rank's group over ``dims`` (None outside the grid).
        kwargs: ``timeout``, ``pg_options``, ``group_desc``, ``backend``.
        KeyError when that group was already created."""
        key, req = self._key(dims, view)
        route = (view or "base", key)
        if route in self._requested:
            raise GridKeyError(Status.EEXIST, "Process group %s has already "
                               "been created (key '%s')" % (_names(dims), key))
        self._requested.add(route)
        if key in self._pgs:  # a view's all-shared request: the base group
            return self._pgs[key]
        unknown = set(kwargs) - {"timeout", "pg_options", "group_desc", "backend"}
        if unknown:
            raise TypeError("create_pg() got unexpected keyword arguments %s"
                            % sorted(unknown))
        pg = self._by_hcg_key.get(req.key)  # all-shared view: the base group
        if pg is None and self.layout.grid(_GRID).contains(self.rank):
            members = self.layout.group_of_rank(req, self.rank).members
            spec = _groups.GroupSpec(
                req.key, tuple(members),
                kwargs.get("backend") or self.backend or STATE.backend,
                group_timeout(kwargs.get("timeout")),
                kwargs.get("pg_options"))
            pg = _groups.build([spec], self.rank)[req.key]
            self._by_hcg_key[req.key] = pg
        self._pgs[key] = pg
        return pg

    def get_pg(self, dims: Dims, *, view: Optional[str] = None) -> Any:
        """The group created over ``dims``; KeyError when it was not."""
        key, _ = self._key(dims, view)
        if key not in self._pgs:
            raise GridKeyError(Status.ENOTFOUND, "Process group for %s hasn't "
                               "been created (key '%s'): call create_pg first"
                               % (_names(dims), key))
        return self._pgs[key]

    def get_rank_enum(self, dims: Dims, *, view: Optional[str] = None) -> List[List[int]]:
        """Every group over ``dims``, as Megatron lists them: groups by
        first member, members ordered with the first of ``dim_names``
        varying slowest."""
        _, req = self._key(dims, view)
        vname = req.view
        names = [d for d in self.layout.grid(_GRID).view(vname).dim_names
                 if d in req.dims]
        out = []
        for members in self.layout.groups(req):
            coords = {m: self.layout.coords(m, _GRID, vname) for m in members}
            out.append(sorted(members, key=lambda m: [coords[m][d] for d in names]))
        return out

    def destroy(self) -> None:
        """Destroys the groups this rank created, each once."""
        seen = set()
        for pg in self._pgs.values():
            if pg is not None and id(pg) not in seen:
                seen.add(id(pg))
                self._dist.destroy_process_group(pg)
        self._pgs.clear()
        self._by_hcg_key.clear()
        self._requested.clear()
