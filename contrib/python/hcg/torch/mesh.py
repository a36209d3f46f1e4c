"""``hcg.torch.device_mesh``: torch's ``DeviceMesh`` made of hcg's groups.

PyTorch's own parallelism (FSDP2's ``fully_shard``, DTensor, tensor,
context and expert parallel, torchtitan) takes a
``torch.distributed.device_mesh.DeviceMesh``. ``init_device_mesh`` makes
every dimension's groups again, one world-collective ``new_group`` call per
group of every dimension. Here the mesh is built with
``DeviceMesh.from_group`` (torch 2.4 and later) over the groups hcg.torch
makes by their members alone (:mod:`hcg.torch.groups`), and the N-D array
of ranks comes from the layout, so:

* every mesh dimension's group is hcg's group of those layout dims, the
  same object :func:`hcg.torch.new_collection` gives (both take the
  process's shared groups: ``mesh["tp"].get_group() is pgs.tp``); the
  mesh makes no group;
* a flattened dimension the caller names (``dp_cp``, torchtitan's
  ``loss``) is hcg's group of its dims too, registered on the mesh the way
  torch's own ``_flatten`` registers one, so ``mesh["dp_cp"]`` and a later
  ``mesh["dp", "cp"]._flatten("dp_cp")`` give it back instead of making a
  group again;
* a view (``view="expert"``) gives the mixture-of-experts mesh on the same
  ranks.

How a flattened dimension is registered depends on the torch, detected by
feature (never by version): torch 2.6 keeps them in
``device_mesh._mesh_resources`` (per thread), torch 2.14 in the root mesh's
``_flatten_mapping`` with a CuTe layout.
"""

from __future__ import annotations

import inspect
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from ..errors import HcgError, HcgValueError, Status
from ..layout import Dim, Grid, GridRef, Layout, View
from ._base import STATE, dist
from .collection import GroupFactory
from .groups import same_world, world_token

#: One mesh dimension: a layout dim's name, or ``(NAME, DIMS)``: a dimension
#: called NAME made of several layout dims, listed outermost (slowest)
#: first, e.g. ``("fsdp", ("dp_shard", "cp"))``.
MeshDim = Union[str, Tuple[str, Sequence[str]]]


class MeshError(HcgValueError):
    """Input :func:`device_mesh` refuses before it makes anything: a dim the
    grid or view lacks, a name given twice, dims in an order the mesh
    cannot keep, a rank outside the grid."""


# ImportError has a 'name' attribute of its own (the module's, never set
# here); HcgError's 'name' property, the status's name, is the one read.
class DeviceMeshUnavailableError(HcgError, ImportError):  # type: ignore[misc]
    """This PyTorch lacks what :func:`device_mesh` needs:
    ``DeviceMesh.from_group`` (torch 1.13 has no ``DeviceMesh`` at all), or
    a way to register a flattened dimension on a mesh."""


def _mesh_class() -> Any:
    """torch's DeviceMesh, when it has from_group."""
    d = dist()
    try:
        from torch.distributed.device_mesh import DeviceMesh
    except ImportError as exc:
        import torch

        raise DeviceMeshUnavailableError(
            Status.ENOTSUP, "hcg.torch.device_mesh needs torch.distributed."
            "device_mesh.DeviceMesh.from_group (PyTorch 2.4 and later); this "
            "PyTorch (%s) has no torch.distributed.device_mesh (%s). Its "
            "process groups are still yours: hcg.torch.new_collection()"
            % (torch.__version__, exc)) from None
    if not callable(getattr(DeviceMesh, "from_group", None)):
        import torch

        raise DeviceMeshUnavailableError(
            Status.ENOTSUP, "hcg.torch.device_mesh needs DeviceMesh.from_group "
            "(PyTorch 2.4 and later), which this PyTorch (%s) lacks"
            % torch.__version__)
    del d
    return DeviceMesh


# ---- the factory every device_mesh call shares by default --------------------

_default: Dict[str, Any] = {"factory": None, "task": None, "world": None}


def default_factory() -> GroupFactory:
    """The :class:`GroupFactory` that :func:`device_mesh` uses when given
    none: one per process over the process's shared groups
    (``shared=True``), so meshes built one after another, and
    :func:`hcg.torch.new_collection`'s collections, hand out the same
    group objects. It is made again when ``hcg.torch.init()`` recorded
    another task or torch's default group is another one (after
    ``destroy_process_group()``)."""
    factory: Optional[GroupFactory] = _default["factory"]
    if factory is None or _default["task"] is not STATE.task or \
            factory.layout.closed or not same_world(_default["world"]):
        factory = GroupFactory(shared=True)
        _default["factory"], _default["task"] = factory, STATE.task
        _default["world"] = world_token()
    return factory


def _factory_of(factory: Any) -> GroupFactory:
    if factory is None:
        return default_factory()
    if isinstance(factory, GroupFactory):
        return factory
    inner = getattr(factory, "factory", None)
    if isinstance(inner, GroupFactory):  # a ProcessGroups' factory, or alike
        return inner
    raise MeshError(Status.EINVAL, "factory must be an hcg.torch.GroupFactory "
                    "or a collection made by one (ProcessGroups), not %s"
                    % type(factory).__name__)


# ---- the plan: everything checked before any group is made --------------------

class _Plan:
    """A checked request: the mesh dims (name, layout dims outermost first),
    the flattened dims (name, mesh dim indices), this rank's N-D array of
    ranks, and the group requests to make."""

    def __init__(self, layout: Layout, rank: int, grid: Grid, view: View,
                 dims: List[Tuple[str, Tuple[str, ...]]],
                 flat: List[Tuple[str, Tuple[int, ...]]]) -> None:
        self.layout, self.rank, self.grid, self.view = layout, rank, grid, view
        self.dims, self.flat = dims, flat

    def layout_dims(self, mesh_dims: Sequence[int]) -> Tuple[str, ...]:
        return tuple(n for i in mesh_dims for n in self.dims[i][1])

    def request(self, names: Sequence[str]) -> Any:
        return self.layout.request_dims(list(names), self.grid.index,
                                        self.view.index)

    def ranks(self) -> Any:
        """This rank's array of ranks: shape the mesh dims' sizes, each
        entry the global rank with those coordinates (the other dims of
        the view at this rank's)."""
        import torch

        coords = self.layout.coords(self.rank, self.grid.index, self.view.index)
        by_name = {d.name: d for d in self.view.dims}
        covered = [n for _, names in self.dims for n in names]
        base = self.rank - sum(coords[n] * by_name[n].stride for n in covered)
        mesh = torch.tensor(base, dtype=torch.int)
        ndim = len(self.dims)
        for k, (_, names) in enumerate(self.dims):
            offsets = [0]
            for n in names:  # outermost first: the last one changes fastest
                dim = by_name[n]
                offsets = [o + c * dim.stride for o in offsets
                           for c in range(dim.size)]
            shape = [1] * ndim
            shape[k] = len(offsets)
            mesh = mesh + torch.tensor(offsets, dtype=torch.int).reshape(shape)
        return mesh


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise MeshError(Status.EINVAL, "%s must be a non-empty str, got %r"
                        % (what, value))
    return value


def _parse_dims(dims: Any, view: View, where: str) -> List[Tuple[str, Tuple[str, ...]]]:
    if isinstance(dims, str) or not isinstance(dims, Sequence) or not dims:
        raise MeshError(Status.EINVAL, "dims must be a non-empty list of mesh "
                        "dims, outermost first (e.g. ['pp', 'dp', 'cp', 'tp']), "
                        "got %r" % (dims,))
    by_name = {d.name: d for d in view.dims}
    out: List[Tuple[str, Tuple[str, ...]]] = []
    used: Dict[str, str] = {}
    names: Tuple[str, ...]
    for item in dims:
        if isinstance(item, str):
            name, names = item, (item,)
        elif isinstance(item, Sequence) and len(item) == 2 and \
                isinstance(item[1], Sequence) and not isinstance(item[1], str):
            name, names = _name(item[0], "a mesh dim's name"), tuple(item[1])
        else:
            raise MeshError(Status.EINVAL, "a mesh dim is a layout dim's name "
                            "or (NAME, [DIMS...]), got %r" % (item,))
        if not names and isinstance(item, str):
            raise MeshError(Status.EINVAL, "mesh dim '%s' names no layout dim"
                            % name)
        if any(name == n for n, _ in out):
            raise MeshError(Status.EINVAL, "mesh dim '%s' is named twice" % name)
        for n in names:
            _name(n, "a layout dim's name")
            if n not in by_name:
                raise MeshError(Status.ENOTFOUND, "%s has no dim '%s' (dims: "
                                "%s)" % (where, n, ", ".join(by_name)))
            if n in used:
                raise MeshError(Status.EINVAL, "layout dim '%s' is in mesh dims "
                                "'%s' and '%s': each may be in one only"
                                % (n, used[n], name))
            used[n] = name
        _check_outermost_first(names, by_name, "mesh dim '%s'" % name)
        out.append((name, names))
    return out


def _check_outermost_first(names: Sequence[str], by_name: Mapping[str, Dim],
                           what: str) -> None:
    """A dimension made of several layout dims orders its ranks as their
    group does (ascending): the dims must go from the slowest to the
    fastest, the reverse of the layout's order."""
    # A dim of size 1 changes no rank: it may stand anywhere.
    strides = [by_name[n].stride for n in names if by_name[n].size > 1]
    if any(a <= b for a, b in zip(strides, strides[1:])):
        want = sorted(names, key=lambda n: -by_name[n].stride)
        raise MeshError(Status.EINVAL, "%s lists %s: give them outermost "
                        "first, %s (the layout lists dims fastest first), so "
                        "that its order of ranks is its group's"
                        % (what, ", ".join(names), ", ".join(want)))


def _parse_flatten(flatten: Any, dims: List[Tuple[str, Tuple[str, ...]]],
                   by_name: Mapping[str, Dim], contiguous: bool
                   ) -> List[Tuple[str, Tuple[int, ...]]]:
    if flatten is None:
        return []
    if not isinstance(flatten, Mapping):
        raise MeshError(Status.EINVAL, "flatten must map a flattened dim's "
                        "name to mesh dims, e.g. {'dp_cp': ['dp', 'cp']}, got "
                        "%r" % (flatten,))
    names = [n for n, _ in dims]
    out: List[Tuple[str, Tuple[int, ...]]] = []
    for name, members in flatten.items():
        _name(name, "a flattened dim's name")
        if name in names:
            raise MeshError(Status.EINVAL, "flattened dim '%s' has the name of "
                            "a mesh dim" % name)
        if isinstance(members, str) or not isinstance(members, Sequence) or \
                not members:
            raise MeshError(Status.EINVAL, "flattened dim '%s': give a "
                            "non-empty list of mesh dims, got %r" % (name, members))
        index = []
        for m in members:
            if m not in names:
                raise MeshError(Status.ENOTFOUND, "flattened dim '%s': no mesh "
                                "dim '%s' (mesh dims: %s)"
                                % (name, m, ", ".join(names)))
            index.append(names.index(m))
        if len(set(index)) != len(index) or index != sorted(index):
            raise MeshError(Status.EINVAL, "flattened dim '%s': name its mesh "
                            "dims once each, in the mesh's order (%s), got %s"
                            % (name, ", ".join(names), ", ".join(members)))
        if contiguous and index != list(range(index[0], index[-1] + 1)):
            raise DeviceMeshUnavailableError(
                Status.ENOTSUP, "flattened dim '%s': this PyTorch's DeviceMesh "
                "slices a flattened dim as a run of adjacent mesh dims, and "
                "%s are not adjacent in the mesh (%s)"
                % (name, ", ".join(members), ", ".join(names)))
        _check_outermost_first([n for i in index for n in dims[i][1]], by_name,
                               "flattened dim '%s' (layout dims)" % name)
        out.append((name, tuple(index)))
    return out


# ---- registering a flattened dim on the mesh -------------------------------------

def _flatten_style(mesh_class: Any) -> Optional[str]:
    """How this torch keeps a mesh's flattened dims: 'layout' (the root
    mesh's _flatten_mapping with a CuTe layout, torch 2.14), 'resources'
    (device_mesh._mesh_resources' per-thread tables, torch 2.6), None."""
    import torch.distributed.device_mesh as dm

    try:
        params: Mapping[str, Any] = inspect.signature(
            mesh_class.__init__).parameters
    except (TypeError, ValueError):
        params = {}
    if "_layout" in params and "_root_mesh" in params and \
            "_flatten_mapping" in getattr(mesh_class, "__annotations__", {}):
        return "layout"
    env = getattr(dm, "_mesh_resources", None)
    if env is not None and all(hasattr(env, a) for a in (
            "root_to_flatten_mapping", "flatten_name_to_root_dims",
            "child_to_root_mapping")):
        return "resources"
    return None


def _register_flat(style: str, mesh_class: Any, root: Any, name: str,
                   index: Tuple[int, ...], group: Any) -> None:
    if style == "layout":
        layout_type = type(root._layout)
        axes = layout_type([root._layout[i] for i in index])
        flat = mesh_class(root.device_type,
                          _layout=layout_type([axes.collapse()]),
                          _rank_map=root._rank_map, mesh_dim_names=(name,),
                          _root_mesh=root, _init_backend=False)
        flat._dim_group_names = [group.group_name]
        registry = getattr(root, "_pg_registry", None)
        if registry is not None:
            registry[group.group_name] = group
        root._flatten_mapping[name] = flat
    else:
        import torch.distributed.device_mesh as dm

        env = dm._mesh_resources
        flat = mesh_class.from_group(group, root.device_type,
                                     mesh_dim_names=(name,))
        env.child_to_root_mapping[flat] = root
        env.root_to_flatten_mapping.setdefault(root, {})[name] = flat
        env.flatten_name_to_root_dims.setdefault(root, {})[name] = tuple(index)


# ---- the call ----------------------------------------------------------------

def _device_type(factory: GroupFactory, device_type: Optional[str]) -> str:
    if device_type is not None:
        if not isinstance(device_type, str) or not device_type.isalpha():
            raise MeshError(Status.EINVAL, "device_type is a device kind such "
                            "as 'cpu' or 'cuda' (no index), got %r"
                            % (device_type,))
        return device_type
    backend = str(factory._backend or dist().get_backend())
    return "cuda" if "nccl" in backend else "cpu"


def _grid_of(layout: Layout, grid: GridRef) -> Grid:
    if grid is None and len(layout.grids) > 1:
        grid = layout.language
    try:
        return layout.grid(grid)
    except HcgError as exc:
        raise MeshError(exc.code, exc.message) from None


def device_mesh(dims: Sequence[MeshDim], *, grid: GridRef = None,
                view: Optional[str] = None,
                flatten: Optional[Mapping[str, Sequence[str]]] = None,
                device_type: Optional[str] = None,
                factory: Any = None) -> Any:
    """A ``DeviceMesh`` of a grid (or one of its views) of the task's layout,
    whose every dimension is hcg's process group of its layout dims.

    The groups are made by their members alone, with the factory's options
    (:class:`hcg.torch.GroupFactory`); ``DeviceMesh.from_group`` then builds
    the mesh over them, so the mesh itself makes no group. Not collective:
    each rank makes its own groups, as :func:`hcg.torch.new_collection`
    does, and ranks outside the grid must not call it.

    Example (``srun --hcg-layout='tp=2,cp=2,dp=*,pp=2'``)::

        hcg.torch.init()
        mesh = hcg.torch.device_mesh(["pp", "dp", "cp", "tp"],
                                     flatten={"dp_cp": ["dp", "cp"]})
        fully_shard(model, mesh=mesh["dp_cp"])
        parallelize_module(model, mesh["tp"], plan)

    Args:
        dims: the mesh dims, outermost first (torch's convention; the
            layout lists them fastest first). Each is a dim of the grid or
            view (``"tp"``), or ``(NAME, DIMS)``: one mesh dim called NAME
            made of several layout dims, outermost first
            (``("fsdp", ["dp_shard", "cp"])``), or of none (``("ep", ())``:
            a dim of size 1, backed by this rank's group of one, which
            connects nothing). A layout dim may be in one
            mesh dim only; dims left out keep this rank's coordinates (the
            mesh is then this rank's slice, like a submesh).
        grid: the grid; default as :func:`hcg.torch.new_collection`: the
            only grid, else the language module.
        view: a view of the grid (``"expert"``); default its base dims.
        flatten: flattened dims to register on the mesh, name -> mesh dims
            in the mesh's order, e.g. ``{"dp_cp": ["dp", "cp"]}``:
            ``mesh["dp_cp"]`` is then hcg's group of those dims.
        device_type: the mesh's device kind; default ``"cuda"`` when the
            groups' backend is NCCL, else ``"cpu"``.
        factory: the :class:`hcg.torch.GroupFactory` whose groups to use (or
            a collection it made). Default: one factory per process over
            the process's shared groups (:func:`default_factory`), the
            groups :func:`hcg.torch.new_collection` hands out too:
            ``mesh["tp"].get_group() is pgs.tp`` without naming a factory.
            A factory of your own (``GroupFactory()``) is a fresh set.

    Returns:
        torch.distributed.device_mesh.DeviceMesh: ``mesh_dim_names`` are the
        mesh dims' names; ``mesh`` holds the global ranks;
        ``mesh.get_group(name)`` is hcg's group, the group rank is the
        coordinate along that dim.

    Raises:
        DeviceMeshUnavailableError: (an ``ImportError``) this PyTorch has no
            ``DeviceMesh.from_group`` (before 2.4; Debian 12's 1.13), or
            cannot register the flattened dims asked for.
        MeshError: (a ``ValueError``) a dim the grid or view lacks, a name
            given twice, a layout dim in two mesh dims, a combined or
            flattened dim whose layout dims are not outermost first, this
            rank outside the grid, a bad ``device_type`` or ``factory``.
            Nothing is made.
        hcg.HcgError: torch.distributed is not initialized, or a group
            cannot form (:class:`hcg.PeerError` when another member failed
            first); the groups this call made are destroyed.
    """
    mesh_class = _mesh_class()
    fac = _factory_of(factory)
    layout, rank = fac.layout, fac.rank
    g = _grid_of(layout, grid)
    try:
        v = g.view(view if view is not None else "base")
    except HcgError as exc:
        raise MeshError(exc.code, exc.message) from None
    where = ("grid '%s'" % g.name if v.index == 0 else
             "view '%s' of grid '%s'" % (v.name, g.name))
    parsed = _parse_dims(dims, v, where)
    style = _flatten_style(mesh_class) if flatten else None
    if flatten and style is None:
        raise DeviceMeshUnavailableError(
            Status.ENOTSUP, "this PyTorch's DeviceMesh keeps flattened dims in "
            "a way hcg does not know: make the mesh without flatten=, and "
            "its flattened dims with hcg.torch.device_mesh([(NAME, DIMS)]) "
            "as meshes of their own")
    by_name = {d.name: d for d in v.dims}
    flat = _parse_flatten(flatten, parsed, by_name, style == "resources")
    kind = _device_type(fac, device_type)
    if not g.contains(rank):
        raise MeshError(Status.ENOTMEMBER, "hcg.torch.device_mesh: rank %d is "
                        "not in grid '%s' (ranks %d-%d): call it only on the "
                        "grid's ranks (TaskEnv.layout.grid(NAME).contains("
                        "rank))" % (rank, g.name, g.offset, g.offset + g.size - 1))
    plan = _Plan(layout, rank, g, v, parsed, flat)
    requests = [plan.request(names) if names else None for _, names in parsed]
    requests += [plan.request(plan.layout_dims(index)) if plan.layout_dims(index)
                 else None for _, index in flat]
    ranks = plan.ranks()
    groups = fac.groups_of([r for r in requests if r is not None])
    if any(r is None for r in requests):
        # A mesh dim of no layout dim has size 1: this rank's group of one
        # backs it (no connection; one object for every such dim).
        alone = fac.alone()
        made = iter(groups)
        groups = [alone if r is None else next(made) for r in requests]
    mesh = mesh_class.from_group(groups[:len(parsed)], kind, mesh=ranks,
                                 mesh_dim_names=tuple(n for n, _ in parsed))
    for (name, index), group in zip(flat, groups[len(parsed):]):
        _register_flat(style or "", mesh_class, mesh, name, index, group)
    return mesh
