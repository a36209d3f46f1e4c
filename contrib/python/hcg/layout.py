"""Layouts: parse once, then ask for grids, coordinates and groups.

Every answer comes from libhcg, so it is the one the SPANK plugin, the `hcg`
command and the C API give, bit for bit (Megatron-LM's HyperCommGrid
enumerations and group keys).
"""

from __future__ import annotations

import ctypes
import operator
import os
from typing import (Any, Dict, Iterator, List, NamedTuple, Optional, Sequence,
                    Tuple, Union, overload)

from . import _lib
from .errors import (HcgError, HcgKeyError, HcgTypeError, HcgValueError,
                     Status, error, fail, from_c)


#: Field names of a grid's process-group collection, in hcg.h order
#: (enum hcg_field). Megatron's ProcessGroupCollection uses the same names.
#: Written out, not asked of libhcg: ``import hcg`` must not need the
#: library (a process outside the job uses hcg.torch.store's client
#: alone); test_layout holds them to hcg_field_name and `hcg help fields`.
FIELDS: Tuple[str, ...] = (
    "tp", "cp", "pp", "dp", "dp_cp", "tp_cp", "mp", "tp_dp", "tp_dp_cp",
    "dp_cp_gtp_remat", "ep", "expt_tp", "expt_dp", "tp_ep", "tp_ep_pp",
    "expt_dp_gtp_remat", "tp_ep_pp_with_egtp_remat", "intra_dp_cp",
    "intra_expt_dp", "intra_dist_opt",
)

#: Kinds of embedding groups (enum hcg_embedding).
EMBEDDINGS: Tuple[str, ...] = ("embd", "pos_embd")

_INT_MIN = -(2 ** 31)
_INT_MAX = 2 ** 31 - 1


# --------------------------------------------------------------------------
# Plain descriptions. They are copies made when the layout is parsed, so they
# stay valid (and cheap to pass around) after the layout is closed.

class Dim(NamedTuple):
    """A dim of a grid or view."""

    name: str
    size: int
    stride: int  #: distance in ranks between neighbours along the dim
    shared: bool  #: a view dim shared with the base (always False in base)


class View(NamedTuple):
    """A factorization of a grid's ranks; index 0 is the base, named 'base'."""

    # Shadows tuple.index() on purpose: the position is what callers want.
    index: int  # type: ignore[assignment]
    name: str
    dims: Tuple[Dim, ...]

    @property
    def dim_names(self) -> Tuple[str, ...]:
        return tuple(d.name for d in self.dims)

    def dim(self, name: str) -> Dim:
        for d in self.dims:
            if d.name == name:
                return d
        raise HcgKeyError(Status.ENOTFOUND, "view '%s' has no dim '%s' (dims: %s)"
                          % (self.name, name, ", ".join(self.dim_names)))


class Grid(NamedTuple):
    """A grid (module): its span of ranks and its views."""

    # Shadows tuple.index(), as in View.
    index: int  # type: ignore[assignment]
    name: str
    offset: int
    size: int
    views: Tuple[View, ...]
    language: bool  #: the language module (the one with embedding groups)

    @property
    def dims(self) -> Tuple[Dim, ...]:
        """The base dims, fastest first."""
        return self.views[0].dims

    @property
    def dim_names(self) -> Tuple[str, ...]:
        return self.views[0].dim_names

    def view(self, name: str = "base") -> View:
        for v in self.views:
            if v.name == name:
                return v
        raise HcgKeyError(Status.ENOTFOUND, "grid '%s' has no view '%s' (views: %s)"
                          % (self.name, name,
                          ", ".join(v.name for v in self.views)))

    def contains(self, rank: int) -> bool:
        return self.offset <= rank < self.offset + self.size

    @property
    def ranks(self) -> range:
        return range(self.offset, self.offset + self.size)


class Request(NamedTuple):
    """A resolved group request: dims of one grid's view.

    A request in a view whose dims are all shared with the base is resolved
    to the base request, so ``view`` may be 'base' although a view was named.
    Equal keys name the same groups.
    """

    grid: str
    view: str
    dims: Tuple[str, ...]  #: in the view's dim order (fastest first)
    key: str  #: Megatron's group key, e.g. 'llm:cp-tp'
    group_size: int
    num_groups: int
    grid_index: int
    view_index: int
    mask: int  #: bit d set: dim d of the view is in the request


class Group(NamedTuple):
    """One group and the position in it of the rank that was asked for.

    Unpacks as ``members, index, key``.
    """

    members: List[int]
    #: position of the asked rank in members (shadows tuple.index, as in View)
    index: int  # type: ignore[assignment]
    key: str


class Groups(NamedTuple):
    """A whole enumeration: every group of a request, canonical order."""

    key: str
    groups: List[List[int]]


class Stage(NamedTuple):
    """Pipeline role of a rank in a module (MIMO)."""

    first: bool
    last: bool


# A grid by name, index or description; None: the only grid of the layout.
GridRef = Union[str, int, Grid, None]
# A view by name, index or description; None: the base.
ViewRef = Union[str, int, View, None]
Spec = Union[str, Request]


def _cint(value: int, what: str) -> int:
    """An int that fits a C int: ctypes would silently truncate others."""
    if isinstance(value, bool):
        raise HcgTypeError(Status.EINVAL, "%s must be an int, not bool" % what)
    try:
        value = operator.index(value)
    except TypeError:
        raise HcgTypeError(Status.EINVAL, "%s must be an int, not %s"
                           % (what, type(value).__name__)) from None
    if not _INT_MIN <= value <= _INT_MAX:
        raise HcgValueError(Status.ERANGE, "%s %d does not fit a C int" % (what, value))
    return value


def _embedding_kind(kind: Union[str, int]) -> int:
    if isinstance(kind, str):
        if kind not in EMBEDDINGS:
            raise HcgValueError(Status.EINVAL, "embedding kind is 'embd' or "
                                "'pos_embd', got %r" % kind)
        return EMBEDDINGS.index(kind)
    kind = operator.index(kind)
    if kind not in (0, 1):
        raise HcgValueError(Status.EINVAL, "embedding kind is 0 or 1, got %d" % kind)
    return kind


class Layout:
    """A parsed, validated layout for a world of ``world_size`` ranks.

    ``Layout(text, world_size)`` parses layout text, or reads it from a file
    when ``text`` is ``"@PATH"``, exactly as ``hcg check -n WORLD`` does.
    ``world_size`` 0 derives the world from the layout (which then may not
    use ``*`` in a grid). ``language`` names the language module when the
    default rule (a grid named llm or language, else the only grid) is not
    wanted. A bad layout raises :class:`HcgValueError` (a ValueError and an
    :class:`HcgError`) with the column and a caret.

    The layout owns C memory: use it as a context manager, or call
    :meth:`close`; it is also freed when garbage-collected. Methods of a
    closed layout raise HcgValueError(EINVAL), as Python's closed files do. A layout is immutable, so any
    number of threads may query it, as long as none closes it meanwhile.
    """

    def __init__(self, text: Union[str, bytes], world_size: int = 0,
                 language: Optional[str] = None, *, max_bytes: int = 0) -> None:
        self._ptr: Optional[int] = None
        lib = _lib.lib()
        self._lib = lib  # kept so that __del__ works during interpreter exit
        cfg = _lib.LayoutConfig()
        cfg.world_size = _cint(world_size, "world_size")
        lang = language.encode("utf-8") if language is not None else None
        cfg.language = lang
        if max_bytes < 0:
            raise HcgValueError(Status.EINVAL, "max_bytes must be >= 0")
        cfg.max_bytes = max_bytes
        raw = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        out = ctypes.c_void_p()
        err = _lib.Error()
        if raw.startswith(b"@"):
            if b"\0" in raw:
                raise HcgValueError(Status.EINVAL, "file name holds a NUL byte")
            rc = lib.hcg_layout_load(raw, ctypes.byref(cfg), ctypes.byref(out),
                                     ctypes.byref(err))
        else:
            # With an explicit length the library reports a NUL inside the
            # text (and its column) instead of silently stopping at it.
            rc = lib.hcg_layout_parse(raw, len(raw), ctypes.byref(cfg),
                                      ctypes.byref(out), ctypes.byref(err))
        if rc != 0:
            raise from_c(err)
        self._ptr = out.value
        self._describe()

    @classmethod
    def _adopt(cls, ptr: int) -> "Layout":
        """The Layout owning ``ptr``, a layout libhcg made (as
        hcg_megatron_layout does), not parsed again."""
        self = cls.__new__(cls)
        self._lib = _lib.lib()
        self._ptr = ptr
        try:
            self._describe()
        except BaseException:
            self.close()
            raise
        return self

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"], world_size: int = 0,
                  language: Optional[str] = None, **kw: Any) -> "Layout":
        """Reads the layout from a file (like ``Layout("@" + path)``).

        Args:
            path: the layout file.
            world_size, language, max_bytes: as the constructor's.

        Returns:
            The layout.

        Raises:
            HcgValueError: a bad layout (with its line, column and caret).
            HcgKeyError: no such file (ENOTFOUND).
            HcgRuntimeError: the file cannot be read (EIO).
        """
        return cls("@" + os.fspath(path), world_size, language, **kw)

    # ---- lifetime ---------------------------------------------------------

    def close(self) -> None:
        """Frees the C layout now. Safe to call twice."""
        ptr, self._ptr = self._ptr, None
        if ptr:
            self._lib.hcg_layout_free(ptr)

    @property
    def closed(self) -> bool:
        return not self._ptr

    def __enter__(self) -> "Layout":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # never raise from a finalizer
            pass

    def _p(self) -> int:
        if not self._ptr:
            raise HcgValueError(Status.EINVAL, "the layout is closed")
        return self._ptr

    def __repr__(self) -> str:
        if self.closed:
            return "<closed hcg.Layout>"
        return "hcg.Layout(%r, world_size=%d)" % (self.text, self.world_size)

    # ---- the whole layout -------------------------------------------------

    def _describe(self) -> None:
        """Copies everything static out of the C layout, once."""
        lib, p = self._lib, self._ptr
        self._text = _lib.text(lib.hcg_layout_text(p))
        self._world: int = lib.hcg_layout_world_size(p)
        self._mode = _lib.text(lib.hcg_mode_name(lib.hcg_layout_mode(p)))
        lang = lib.hcg_layout_language(p)
        grids = []
        for g in range(lib.hcg_layout_num_grids(p)):
            views = []
            for v in range(lib.hcg_grid_num_views(p, g)):
                dims = tuple(
                    Dim(_lib.text(lib.hcg_dim_name(p, g, v, d)),
                        lib.hcg_dim_size(p, g, v, d),
                        lib.hcg_dim_stride(p, g, v, d),
                        bool(lib.hcg_dim_shared(p, g, v, d)))
                    for d in range(lib.hcg_view_num_dims(p, g, v)))
                views.append(View(v, _lib.text(lib.hcg_view_name(p, g, v)), dims))
            grids.append(Grid(g, _lib.text(lib.hcg_grid_name(p, g)),
                              lib.hcg_grid_offset(p, g), lib.hcg_grid_size(p, g),
                              tuple(views), g == lang))
        self._grids = tuple(grids)

    @property
    def text(self) -> str:
        """The canonical text: offsets explicit, '*' resolved, ';' between
        items. Parsing it with the same world size gives the same layout."""
        return self._text

    @property
    def world_size(self) -> int:
        return self._world

    @property
    def mode(self) -> str:
        """'single', 'colocated' or 'non-colocated'."""
        return self._mode

    @property
    def grids(self) -> Tuple[Grid, ...]:
        return self._grids

    @property
    def language(self) -> str:
        """Name of the language module's grid."""
        return next(g.name for g in self._grids if g.language)

    def grid(self, grid: GridRef = None) -> Grid:
        """A grid by name or index.

        Args:
            grid: a name, an index or a :class:`Grid`; None means the only grid.

        Returns:
            Its :class:`Grid`.

        Raises:
            HcgKeyError: no such grid.
            HcgValueError: None in a layout of several grids.
        """
        return self._grids[self._grid_index(grid)]

    def grids_of_rank(self, rank: int) -> List[str]:
        """Names of the grids holding rank, in layout order (HCG_GRIDS).

        Args:
            rank: a rank of the world.

        Returns:
            The grid names, [] when no grid holds it.
        """
        return [g.name for g in self._grids if g.contains(rank)]

    def _grid_index(self, grid: GridRef) -> int:
        if grid is None:
            if len(self._grids) != 1:
                raise HcgValueError(Status.EINVAL, "the layout has %d grids (%s): "
                                    "name one" % (len(self._grids), ", ".join(
                                   g.name for g in self._grids)))
            return 0
        if isinstance(grid, Grid):
            grid = grid.name
        if isinstance(grid, str):
            for g in self._grids:
                if g.name == grid:
                    return g.index
            raise HcgKeyError(Status.ENOTFOUND, "no grid '%s' in the layout "
                              "(grids: %s)" % (grid, ", ".join(
                               g.name for g in self._grids)))
        index = operator.index(grid)
        if not 0 <= index < len(self._grids):
            raise HcgKeyError(Status.ENOTFOUND, "no grid %d in a layout of %d "
                              "grids" % (index, len(self._grids)))
        return index

    def _outside(self, rc: int, rank: int, g: int, what: str) -> HcgError:
        """The error of a per-rank call; names the grid's span when the
        rank is outside it."""
        grid = self._grids[g]
        if rc == Status.ENOTMEMBER:
            return error(rc, "%s: rank %d is not in grid '%s' (ranks %d-%d)"
                         % (what, rank, grid.name, grid.offset,
                               grid.offset + grid.size - 1))
        return fail(rc, what)

    def _view_index(self, g: int, view: ViewRef) -> int:
        if view is None:
            return 0
        if isinstance(view, View):
            view = view.name
        if isinstance(view, str):
            return self._grids[g].view(view).index
        index = operator.index(view)
        if not 0 <= index < len(self._grids[g].views):
            raise HcgKeyError(Status.ENOTFOUND, "grid '%s' has no view %d"
                              % (self._grids[g].name, index))
        return index

    # ---- coordinates and roles ---------------------------------------------

    def coords(self, rank: int, grid: GridRef = None,
               view: ViewRef = None) -> Dict[str, int]:
        """Coordinates of rank in a grid's view, fastest dim first:
        ``{'tp': 1, 'dp': 0, 'pp': 1}``.

        Args:
            rank: a rank of the world.
            grid: the grid (see :meth:`grid`).
            view: a view by name or index; None: the base.

        Returns:
            dim name -> coordinate.

        Raises:
            HcgValueError: the rank is outside the grid (ENOTMEMBER), or does
                not fit a C int (ERANGE).
            HcgTypeError: a rank that is no int.
            HcgKeyError: no such grid or view.
        """
        g = self._grid_index(grid)
        v = self._view_index(g, view)
        dims = self._grids[g].views[v].dims
        buf = (ctypes.c_int * max(1, len(dims)))()
        rank = _cint(rank, "rank")
        rc = self._lib.hcg_rank_coords(self._p(), g, v, rank, buf, len(buf))
        if rc:
            raise self._outside(rc, rank, g, "coordinates")
        return {d.name: buf[i] for i, d in enumerate(dims)}

    def all_coords(self, rank: int) -> Dict[str, Dict[str, Dict[str, int]]]:
        """``{grid: {view: {dim: coord}}}`` for every grid holding rank, as in
        the ``coords`` of ``hcg explain --format json``.

        Args:
            rank: a rank of the world.

        Returns:
            The coordinates, {} when no grid holds the rank.
        """
        return {g.name: {v.name: self.coords(rank, g.index, v.index)
                         for v in g.views}
                for g in self._grids if g.contains(rank)}

    def stage(self, rank: int, grid: GridRef = None) -> Stage:
        """Whether rank holds the first and the last pipeline stage of a module
        (colocated layouts treat pp as 1: both are True).

        Args:
            rank: a rank of the grid.
            grid: the grid (see :meth:`grid`).

        Returns:
            ``Stage(first, last)``.

        Raises:
            HcgValueError: the rank is outside the grid (ENOTMEMBER).
        """
        g = self._grid_index(grid)
        first, last = ctypes.c_int(), ctypes.c_int()
        rank = _cint(rank, "rank")
        rc = self._lib.hcg_rank_stage(self._p(), g, rank, ctypes.byref(first),
                                      ctypes.byref(last))
        if rc:
            raise self._outside(rc, rank, g, "stage")
        return Stage(bool(first.value), bool(last.value))

    def env(self, rank: int) -> Dict[str, str]:
        """The HCG_* variables the SPANK plugin exports to task ``rank``, in the
        plugin's order (like ``hcg env --rank R``).

        Args:
            rank: a rank of the world.

        Returns:
            variable name -> value.

        Raises:
            HcgValueError: the rank is outside the world (ENOTMEMBER).
        """
        out: Dict[str, str] = {}

        # The callback must not raise: an exception cannot cross the C frame.
        def put(_arg: Any, name: bytes, value: bytes) -> int:
            out[name.decode()] = value.decode()
            return 0

        callback = _lib.ENV_FN(put)  # referenced until the call returns
        rank = _cint(rank, "rank")
        rc = self._lib.hcg_rank_env(self._p(), rank, callback, None)
        if rc == Status.ENOTMEMBER:
            raise error(rc, "environment: rank %d is outside the world "
                        "[0, %d)" % (rank, self._world))
        if rc:
            raise fail(rc, "environment of rank %d" % rank)
        return out

    # ---- requests and groups ------------------------------------------------

    def request(self, spec: Spec) -> Request:
        """Resolves a group spec, as ``hcg enum`` does.

        Args:
            spec: ``"GRID[/VIEW]:DIM[,DIM...]"`` (no dims: singletons; a
                one-grid layout also takes the dims alone), or a
                :class:`Request`, returned as it is.

        Returns:
            The :class:`Request`.

        Raises:
            HcgKeyError: a grid, view or dim that is not there (ENOTFOUND).
            HcgValueError: a spec that does not parse.
            HcgTypeError: a spec that is neither a str nor a Request.
        """
        if isinstance(spec, Request):
            return spec
        if not isinstance(spec, str):
            raise HcgTypeError(Status.EINVAL, "a group spec is a str like "
                               "'llm:dp,cp' or a Request, not %s"
                               % type(spec).__name__)
        c = _lib.Request()
        err = _lib.Error()
        rc = self._lib.hcg_request_parse(self._p(), spec.encode("utf-8"),
                                         ctypes.byref(c), ctypes.byref(err))
        if rc:
            raise from_c(err, "bad group spec %r" % spec)
        return self._wrap_request(c)

    def request_dims(self, dims: Sequence[str], grid: GridRef = None,
                     view: ViewRef = None) -> Request:
        """A request from dim names of a grid's view; their order does not
        matter.

        Args:
            dims: dim names of the view.
            grid: the grid (see :meth:`grid`).
            view: a view by name or index; None: the base.

        Returns:
            The :class:`Request`.

        Raises:
            HcgKeyError: a grid, view or dim that is not there.
        """
        g = self._grid_index(grid)
        v = self._view_index(g, view)
        names = [d.encode("utf-8") for d in dims]
        arr = (ctypes.c_char_p * max(1, len(names)))(*names)
        c = _lib.Request()
        err = _lib.Error()
        rc = self._lib.hcg_request_make(self._p(), g, v, arr, len(names),
                                        ctypes.byref(c), ctypes.byref(err))
        if rc:
            raise from_c(err)
        return self._wrap_request(c)

    def _wrap_request(self, c: Any) -> Request:
        p = self._p()
        key = ctypes.create_string_buffer(_lib.KEY_MAX)
        rc = self._lib.hcg_request_key(p, ctypes.byref(c), key, len(key))
        if rc:
            raise fail(rc, "group key")
        grid = self._grids[c.grid]
        view = grid.views[c.view]
        dims = tuple(d.name for i, d in enumerate(view.dims) if c.dims >> i & 1)
        return Request(grid.name, view.name, dims, key.value.decode(),
                       self._lib.hcg_request_group_size(p, ctypes.byref(c)),
                       self._lib.hcg_request_num_groups(p, ctypes.byref(c)),
                       c.grid, c.view, c.dims)

    def _c_request(self, spec: Spec) -> Tuple[Request, Any]:
        req = self.request(spec)
        # A Request made by another layout could index grids that are not
        # here: check it names the same grid/view/dims in this layout.
        g = self._grids[req.grid_index] if req.grid_index < len(self._grids) else None
        if (g is None or g.name != req.grid or req.view_index >= len(g.views)
                or g.views[req.view_index].name != req.view):
            raise HcgValueError(Status.EINVAL, "request %s does not belong to "
                                "this layout" % req.key)
        return req, _lib.Request(req.grid_index, req.view_index, req.mask)

    def _members(self, group: Any) -> List[int]:
        buf = (ctypes.c_int * group.size)()
        rc = self._lib.hcg_group_members(self._p(), ctypes.byref(group), buf,
                                         group.size)
        if rc:
            raise fail(rc, "group members")
        return list(buf)

    def groups(self, spec: Spec) -> Iterator[List[int]]:
        """Yields the groups of a request one by one, in canonical order (each
        ascending, sorted by first member). O(group size) memory.

        Args:
            spec: a group spec or :class:`Request` (see :meth:`request`).

        Returns:
            An iterator of member lists.

        Raises:
            As :meth:`request`; HcgValueError for a request of another layout.
        """
        req, c = self._c_request(spec)
        g = _lib.Group()
        for ordinal in range(req.num_groups):
            rc = self._lib.hcg_group_at(self._p(), ctypes.byref(c), ordinal,
                                        ctypes.byref(g))
            if rc:
                raise fail(rc, "group %d of %s" % (ordinal, req.key))
            yield self._members(g)

    def enumerate(self, spec: Spec) -> List[List[int]]:
        """Every group of a request, canonical order: the list ``hcg enum``
        prints and Megatron's HyperCommGrid passes to
        new_subgroups_by_enumeration.

        Args:
            spec: a group spec or :class:`Request` (see :meth:`request`).

        Returns:
            The member lists.

        Raises:
            As :meth:`groups`.
        """
        return list(self.groups(spec))

    def group_of_rank(self, spec: Spec, rank: int) -> Group:
        """The group of a request holding rank, computed from the rank's
        coordinates alone, in O(dims + group size) whatever the world size.

        Args:
            spec: a group spec or :class:`Request` (see :meth:`request`).
            rank: a rank of the request's grid.

        Returns:
            ``Group(members, index, key)``.

        Raises:
            HcgValueError: the rank is outside the grid (ENOTMEMBER).
            As :meth:`request` for the spec.
        """
        req, c = self._c_request(spec)
        g = _lib.Group()
        rank = _cint(rank, "rank")
        rc = self._lib.hcg_group_of_rank(self._p(), ctypes.byref(c), rank,
                                         ctypes.byref(g))
        if rc:
            raise self._outside(rc, rank, req.grid_index, "group " + req.key)
        return Group(self._members(g), g.index, req.key)

    # ---- the process-group collection ----------------------------------------

    def field_request(self, grid: GridRef, field: str) -> Optional[Request]:
        """The request of one collection field of a grid.

        Args:
            grid: the grid (see :meth:`grid`).
            field: a field of :data:`FIELDS`, e.g. ``'dp_cp'``.

        Returns:
            The :class:`Request`, or None when the grid does not provide the
            field (all of its dims are absent).

        Raises:
            HcgKeyError: no such field or grid.
        """
        index = self._lib.hcg_field_find(field.encode("utf-8"))
        if index < 0:
            raise HcgKeyError(Status.ENOTFOUND, "no collection field '%s' "
                              "(fields: %s)" % (field, ", ".join(FIELDS)))
        g = self._grid_index(grid)
        c = _lib.Request()
        rc = self._lib.hcg_collection_request(self._p(), g, index,
                                              ctypes.byref(c))
        if rc == Status.ENOTPROVIDED:
            return None
        if rc:
            raise fail(rc, "field %s of grid '%s'" % (field, self._grids[g].name))
        return self._wrap_request(c)

    @overload
    def collection(self, grid: GridRef = ...,
                   rank: None = ...) -> Dict[str, Optional[Groups]]: ...

    @overload
    def collection(self, grid: GridRef, rank: int) -> Dict[str, Optional[Group]]: ...

    def collection(self, grid: GridRef = None, rank: Optional[int] = None) -> Any:
        """A grid's process-group collection (Megatron's ProcessGroupCollection).

        Alias fields (intra_dp_cp, intra_expt_dp) carry the key of the field
        they alias: equal keys mean one group object.

        Args:
            grid: the grid (see :meth:`grid`).
            rank: None, or a rank of the grid.

        Returns:
            field name -> groups, None for a field the grid does not provide.
            Without rank each value is a :class:`Groups` (key and the whole
            enumeration); with rank, the :class:`Group` holding that rank.

        Raises:
            HcgValueError: the rank is outside the grid (ENOTMEMBER).
            HcgKeyError: no such grid.
        """
        out: Dict[str, Optional[Union[Group, Groups]]] = {}
        for field in FIELDS:
            req = self.field_request(grid, field)
            if req is None:
                out[field] = None
            elif rank is None:
                out[field] = Groups(req.key, self.enumerate(req))
            else:
                out[field] = self.group_of_rank(req, rank)
        return out

    @staticmethod
    def field_alias(field: str) -> Optional[str]:
        """For an alias field, the field whose group object it is
        ('intra_dp_cp' -> 'dp_cp'); else None."""
        lib = _lib.lib()
        index = lib.hcg_field_find(field.encode("utf-8"))
        if index < 0:
            raise HcgKeyError(Status.ENOTFOUND, "no collection field '%s'" % field)
        alias = lib.hcg_field_alias(index)
        return _lib.text(lib.hcg_field_name(alias)) if alias >= 0 else None

    # ---- embedding groups -----------------------------------------------------

    def embedding_groups(self, kind: Union[str, int] = "embd") -> List[List[int]]:
        """The language module's embedding groups of a kind.

        Args:
            kind: 'embd' (first and last rank of each pp group) or 'pos_embd'
                (the first), or 0/1 as in hcg.h.

        Returns:
            The groups, canonical order.

        Raises:
            HcgValueError: an unknown kind.
        """
        k = _embedding_kind(kind)
        out = []
        buf = (ctypes.c_int * 2)()
        n = ctypes.c_int()
        for ordinal in range(self._lib.hcg_embedding_num_groups(self._p())):
            rc = self._lib.hcg_embedding_group_at(self._p(), k, ordinal, buf,
                                                  ctypes.byref(n))
            if rc:
                raise fail(rc, "embedding group %d" % ordinal)
            out.append(list(buf[:n.value]))
        return out

    def embedding_group(self, rank: int,
                        kind: Union[str, int] = "embd") -> Optional[List[int]]:
        """The embedding group of a kind holding rank.

        Args:
            rank: a rank of the world.
            kind: as :meth:`embedding_groups`'.

        Returns:
            Its members, or None when no group of that kind holds the rank.

        Raises:
            HcgValueError: an unknown kind.
        """
        k = _embedding_kind(kind)
        buf = (ctypes.c_int * 2)()
        n = ctypes.c_int()
        rank = _cint(rank, "rank")
        rc = self._lib.hcg_embedding_group_of_rank(self._p(), k, rank, buf,
                                                   ctypes.byref(n))
        if rc == Status.ENOTMEMBER:
            return None
        if rc:
            raise fail(rc, "embedding group of rank %d" % rank)
        return list(buf[:n.value])

    # ---- bridges ---------------------------------------------------------------

    def bridge(self, src: GridRef, dest: GridRef = None) -> "Bridge":
        """How an encoder grid feeds the language grid.

        Args:
            src: the encoder grid (see :meth:`grid`).
            dest: the language grid; None: the language module.

        Returns:
            The :class:`Bridge`.

        Raises:
            HcgValueError: the grids cannot be bridged (EBRIDGE), with the
                values that disagree.
            HcgKeyError: no such grid.
        """
        s = self._grid_index(src)
        d = self._grid_index(self.language if dest is None else dest)
        c = _lib.Bridge()
        err = _lib.Error()
        rc = self._lib.hcg_bridge_make(self._p(), s, d, ctypes.byref(c),
                                       ctypes.byref(err))
        if rc:
            raise from_c(err)
        return Bridge(self, c)


class Bridge:
    """A bridge from an encoder grid (src) to the language grid (dest).

    Colocated bridges (same ranks) have gather groups and batch slices;
    non-colocated ones have lane leaders and targets. Holds its layout.
    """

    def __init__(self, layout: Layout, c: Any) -> None:
        self._layout = layout
        self._c = c
        lib = layout._lib
        self.src: str = layout.grids[c.src].name
        self.dest: str = layout.grids[c.dest].name
        self.colocated: bool = bool(c.colocated)
        #: 'passthrough', 'fan-in' or 'fan-out'
        self.kind: str = _lib.text(lib.hcg_bridge_kind_name(c.kind))
        self.scale: int = c.scale
        self.dest_cp: int = c.dest_cp
        self.src_lanes: int = c.src_lanes
        self.dest_lanes: int = c.dest_lanes

    def __repr__(self) -> str:
        return ("<hcg.Bridge %s -> %s %s %s scale %d>"
                % (self.src, self.dest,
                   "colocated" if self.colocated else "non-colocated",
                   self.kind, self.scale))

    def _call(self, name: str, *args: Any) -> Any:
        return getattr(self._layout._lib, name)(self._layout._p(),
                                                ctypes.byref(self._c), *args)

    def groups(self) -> List[List[int]]:
        """Colocated gather groups, canonical order ([] for passthrough)."""
        out = []
        buf = (ctypes.c_int * max(1, self.scale))()
        n = ctypes.c_int()
        for ordinal in range(self._call("hcg_bridge_num_groups")):
            rc = self._call("hcg_bridge_group_at", ordinal, buf, len(buf),
                            ctypes.byref(n))
            if rc:
                raise fail(rc, "bridge group %d" % ordinal)
            out.append(list(buf[:n.value]))
        return out

    def group_of_rank(self, rank: int) -> Optional[List[int]]:
        """The colocated gather group holding rank.

        Args:
            rank: a rank of the world.

        Returns:
            Its members, or None when no gather group holds the rank.
        """
        buf = (ctypes.c_int * max(1, self.scale))()
        n = ctypes.c_int()
        rc = self._call("hcg_bridge_group_of_rank", _cint(rank, "rank"), buf,
                        len(buf), ctypes.byref(n))
        if rc == Status.ENOTMEMBER:
            return None
        if rc:
            raise fail(rc, "bridge group of rank %d" % rank)
        return list(buf[:n.value])

    def batch_slice(self, rank: int, batch: int) -> Tuple[int, int]:
        """The part of a batch rank holds on the larger-dp side.

        Args:
            rank: a rank of that side.
            batch: samples in the batch.

        Returns:
            ``(start, length)``.

        Raises:
            HcgValueError: scale does not divide batch (EBRIDGE).
        """
        start, length = ctypes.c_longlong(), ctypes.c_longlong()
        err = _lib.Error()
        rc = self._call("hcg_bridge_batch_slice", _cint(rank, "rank"),
                        operator.index(batch), ctypes.byref(start),
                        ctypes.byref(length), ctypes.byref(err))
        if rc:
            raise from_c(err, "batch slice of rank %d" % rank)
        return start.value, length.value

    def leaders(self, side: str = "src") -> List[int]:
        """Non-colocated: the leader of each lane of a side, lanes in canonical
        order.

        Args:
            side: 'src' (each lane's last rank) or 'dest' (its first).

        Returns:
            The leaders' ranks.

        Raises:
            KeyError: a side other than those two.
        """
        s = {"src": 0, "dest": 1}[side]
        lanes = self.src_lanes if s == 0 else self.dest_lanes
        return [self._call("hcg_bridge_leader", s, lane) for lane in range(lanes)]

    def targets(self, src_lane: int) -> range:
        """Non-colocated: the dest lanes a src lane sends to.

        Args:
            src_lane: a src lane.

        Returns:
            The dest lanes, as a range.

        Raises:
            HcgValueError: no such lane.
        """
        first, count = ctypes.c_int(), ctypes.c_int()
        rc = self._call("hcg_bridge_targets", _cint(src_lane, "lane"),
                        ctypes.byref(first), ctypes.byref(count))
        if rc:
            raise fail(rc, "targets of src lane %d" % src_lane)
        return range(first.value, first.value + count.value)
