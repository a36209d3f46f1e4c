"""torchtitan's parallelism degrees as an hcg layout, and the meshes
torchtitan builds, made of hcg's groups.

torchtitan describes a job by degrees (``dp_replicate``, ``dp_shard``,
``cp``, ``tp``, ``pp``, ``ep``) and its ``ParallelDims.build_mesh`` makes
one world mesh with ``init_device_mesh``, then unflattens it into the
meshes its parallelisms take (``_global_meshes``: ``dataloading``,
``loss``, ``dense``, ``sparse``, and with its ``spmd_types`` backend
``spmd_dense_for_fwdbwd`` and ``spmd_sparse_for_fwdbwd``) and keeps one
1-D mesh per axis (``_single_axis_meshes``); every unflattened dimension
makes its groups again. (Checked against torchtitan's parallel_dims.py of
August 2026, commit d6555c4c; the ``etp`` degree of older torchtitan is
kept here as a layout option.) torchtitan always makes every key, the
``sparse`` mesh and the ``ep``/``efsdp`` axes with ep = 1 too (its
``get_optional_mesh`` raises ValueError for a key it lacks, and returns None
for a dim it backs by its fake backend); so does hcg.

Here the degrees become a layout that ``srun --hcg-layout`` places
(:func:`torchtitan_layout`), :func:`torchtitan_meshes` gives the same
meshes with :func:`hcg.torch.device_mesh`, every dimension (the combined
ones included) hcg's group of its layout dims, made by its members alone,
and :func:`torchtitan_axes` the 1-D meshes. The world mesh is the default
group's: no group is made for it.

The layout lists dims fastest first, torch's meshes outermost first; with
torchtitan's order (``tp`` fastest, then ``cp``, ``dp_shard``,
``dp_replicate``, ``pp``) the ranks of each mesh are those torchtitan's
world mesh gives them.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..errors import HcgError, Status
from ..layout import GridRef, Layout
from ._base import dist
from .mesh import MeshError, _device_type, _factory_of, _grid_of, _mesh_class, device_mesh

#: The base dims of a torchtitan layout, fastest first.
BASE_DIMS = ("tp", "cp", "dp_shard", "dp_replicate", "pp")
#: Its expert view's dims, fastest first (dp_replicate and pp are shared).
EXPERT_DIMS = ("etp", "ep", "efsdp", "dp_replicate", "pp")


def _degree(name: str, value: Any, rest: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or \
            not (value >= 1 or (rest and value == -1)):
        raise MeshError(Status.EINVAL, "torchtitan degree %s must be a whole "
                        "number >= 1%s, got %r"
                        % (name, " (or -1: the rest)" if rest else "", value))
    return int(value)


def torchtitan_layout(*, dp_replicate: int = 1, dp_shard: int = -1,
                      cp: int = 1, tp: int = 1, pp: int = 1, ep: int = 1,
                      etp: int = 1, grid: str = "llm",
                      world_size: Optional[int] = None) -> str:
    """The hcg layout text of torchtitan's parallelism degrees, for
    ``srun --hcg-layout``.

    ``dp_shard=-1`` (torchtitan's default) takes the ranks the other
    degrees leave (``*``). With ``ep > 1`` the layout gets an expert view
    whose ``ep`` borrows from ``dp_shard`` and ``cp`` (and from ``tp``
    when ``etp`` is 1), as torchtitan's does, and whose ``efsdp`` is what is
    left of them.

    Example: ``torchtitan_layout(dp_shard=4, tp=2, ep=4)`` is
    ``"llm:tp=2,cp=1,dp_shard=4,dp_replicate=1,pp=1; llm/expert:etp=1,ep=4,efsdp=*,dp_replicate,pp"``.

    Args:
        dp_replicate, dp_shard, cp, tp, pp, ep, etp: torchtitan's degrees
            (``parallelism.data_parallel_replicate_degree`` and the like).
        grid: the grid's name.
        world_size: when given, the layout is also checked against it (its
            degrees must multiply to it).

    Returns:
        str: the layout text.

    Raises:
        MeshError: (a ``ValueError``) a degree that is not a whole number
            >= 1 (-1 for dp_shard), ``etp`` neither 1 nor ``tp``, or (with
            ``world_size``) degrees the world size does not fit.
    """
    vals = {"dp_replicate": _degree("dp_replicate", dp_replicate),
            "dp_shard": _degree("dp_shard", dp_shard, rest=True),
            "cp": _degree("cp", cp), "tp": _degree("tp", tp),
            "pp": _degree("pp", pp), "ep": _degree("ep", ep),
            "etp": _degree("etp", etp)}
    if etp not in (1, tp):
        raise MeshError(Status.EINVAL, "torchtitan degree etp must be 1 or tp "
                        "(%d), got %d" % (tp, etp))
    if not isinstance(grid, str) or not grid.isidentifier():
        raise MeshError(Status.EINVAL, "grid must be a name, got %r" % (grid,))
    shard = "*" if dp_shard == -1 else str(dp_shard)
    text = "%s:tp=%d,cp=%d,dp_shard=%s,dp_replicate=%d,pp=%d" % (
        grid, tp, cp, shard, dp_replicate, pp)
    if ep > 1:
        text += "; %s/expert:etp=%d,ep=%d,efsdp=*,dp_replicate,pp" % (
            grid, etp, ep)
    if world_size is not None:
        try:
            Layout(text, world_size).close()
        except HcgError as exc:
            raise MeshError(exc.code, "torchtitan degrees %s do not fit %s "
                            "ranks: %s" % (", ".join(
                                "%s=%d" % kv for kv in vals.items()),
                                world_size, exc.message)) from None
    return text


#: torchtitan's two ways of laying out its dense meshes.
SPMD_BACKENDS = ("spmd_types", "partial_dtensor")


def torchtitan_meshes(*, grid: GridRef = None, spmd_backend: str = "spmd_types",
                      device_type: Optional[str] = None,
                      factory: Any = None) -> Dict[str, Any]:
    """The meshes torchtitan's ``ParallelDims.build_mesh`` builds, from
    hcg's groups, for a layout made by :func:`torchtitan_layout` (or with
    the same dim names), under the keys of its ``_global_meshes``, plus
    its world mesh.

    Args:
        grid: the grid (default: the only one, else the language module).
        spmd_backend: torchtitan's ``parallelism.spmd_backend``,
            ``"spmd_types"`` (its default) or ``"partial_dtensor"``.
        device_type: as :func:`hcg.torch.device_mesh`.
        factory: as :func:`hcg.torch.device_mesh`.

    Returns:
        dict: ``"dataloading"``: ``(pp, batch, cp, tp)``, ``batch`` being
        dp_replicate and dp_shard; ``"loss"``: the 1-D ``loss_mesh`` of
        batch and cp; ``"dense"``: ``(pp, dp_replicate, dp_shard, cp, tp)``
        with ``spmd_types``, ``(pp, dp_replicate, fsdp, tp)`` (``fsdp``:
        dp_shard and cp) with ``partial_dtensor``; with ``spmd_types``,
        ``"spmd_dense_for_fwdbwd"``: ``(dp, cp, tp)``, ``dp`` being
        dp_replicate and dp_shard; ``"sparse"``: ``(pp, dp_replicate,
        efsdp, ep)``, always, as torchtitan's (with an expert view, its
        dims, ``etp`` after ``ep`` when above 1; without one (ep = 1),
        ``efsdp`` is dp_shard, cp and tp and ``ep`` has size 1, backed by
        this rank's group of one); with ``spmd_types`` and ep > 1,
        ``"spmd_sparse_for_fwdbwd"``: ``(dp_replicate, efsdp, ep)``; and,
        when the grid is the whole job, ``"world"``: the 1-D ``world``
        mesh of the default group.

    Raises:
        MeshError: the grid lacks one of torchtitan's dims, an unknown
            ``spmd_backend``, or this rank is outside the grid; as
            :func:`hcg.torch.device_mesh` otherwise.
        DeviceMeshUnavailableError: as :func:`hcg.torch.device_mesh`.
    """
    if spmd_backend not in SPMD_BACKENDS:
        raise MeshError(Status.EINVAL, "spmd_backend must be one of %s, got %r"
                        % (", ".join(SPMD_BACKENDS), spmd_backend))
    fac = _factory_of(factory)
    g = _grid_of(fac.layout, grid)
    names = [d.name for d in g.view("base").dims]
    missing = [n for n in BASE_DIMS if n not in names]
    if missing or len(names) != len(BASE_DIMS):
        raise MeshError(Status.EINVAL, "grid '%s' is not torchtitan-shaped: "
                        "its dims are %s, torchtitan's %s (make the layout "
                        "with hcg.torch.torchtitan_layout)"
                        % (g.name, ", ".join(names), ", ".join(BASE_DIMS)))
    kw: Dict[str, Any] = {"grid": g.name, "device_type": device_type,
                          "factory": fac}
    batch = ("batch", ("dp_replicate", "dp_shard"))
    out = {
        "dataloading": device_mesh(["pp", batch, "cp", "tp"], **kw),
        "loss": device_mesh([("loss_mesh", ("dp_replicate", "dp_shard", "cp"))], **kw),
    }
    spmd = spmd_backend == "spmd_types"
    if spmd:
        out["dense"] = device_mesh(["pp", "dp_replicate", "dp_shard", "cp", "tp"], **kw)
        out["spmd_dense_for_fwdbwd"] = device_mesh(
            [("dp", ("dp_replicate", "dp_shard")), "cp", "tp"], **kw)
    else:
        out["dense"] = device_mesh(["pp", "dp_replicate",
                                    ("fsdp", ("dp_shard", "cp")), "tp"], **kw)
    views = {v.name: v for v in g.views}
    expert = {d.name: d.size for d in views["expert"].dims} \
        if "expert" in views else {}
    if expert:
        etp = expert.get("etp", 1)
        out["sparse"] = device_mesh(["pp", "dp_replicate", "efsdp", "ep"] +
                                    (["etp"] if etp > 1 else []),
                                    view="expert", **kw)
        if spmd and expert.get("ep", 1) > 1:
            out["spmd_sparse_for_fwdbwd"] = device_mesh(
                ["dp_replicate", "efsdp", "ep"], view="expert", **kw)
    else:
        # ep = 1, no expert view: torchtitan's sparse mesh all the same,
        # efsdp being dp_shard, cp and tp (its degree dp_shard*cp*tp/ep),
        # ep of size 1, backed by this rank's group of one.
        out["sparse"] = device_mesh(
            ["pp", "dp_replicate", ("efsdp", ("dp_shard", "cp", "tp")),
             ("ep", ())], **kw)
    if g.offset == 0 and g.size == fac.layout.world_size:
        out["world"] = _world_mesh(fac, device_type)
    return out


def _world_mesh(fac: Any, device_type: Optional[str]) -> Any:
    """torchtitan's 1-D ``world`` mesh, over the default group (which
    init() made): no group is made for it."""
    return _mesh_class().from_group(dist().group.WORLD, _device_type(fac, device_type),
                                    mesh_dim_names=("world",))


def torchtitan_axes(meshes: Dict[str, Any]) -> Dict[str, Any]:
    """torchtitan's ``_single_axis_meshes``: one 1-D mesh per axis, taken
    from the meshes :func:`torchtitan_meshes` gave (the same groups).

    Args:
        meshes: what :func:`torchtitan_meshes` returned.

    Returns:
        dict: ``pp``, ``batch``, ``loss``, ``dp_replicate``, ``cp``,
        ``tp``, ``ep``, ``efsdp`` (always, as torchtitan's), then ``dp``
        and ``dp_shard`` (spmd_types) or ``fsdp`` (partial_dtensor).

    Raises:
        MeshError: ``meshes`` lacks a mesh torchtitan_meshes() gives.
    """
    missing = [k for k in ("dataloading", "loss", "dense", "sparse")
               if k not in meshes]
    if missing:
        raise MeshError(Status.EINVAL, "torchtitan_axes takes what "
                        "torchtitan_meshes() returned; this has no %s"
                        % ", ".join(repr(k) for k in missing))
    dl, dense, sparse = meshes["dataloading"], meshes["dense"], meshes["sparse"]
    axes = {"pp": dl["pp"], "batch": dl["batch"], "loss": meshes["loss"],
            "dp_replicate": dense["dp_replicate"], "cp": dl["cp"], "tp": dl["tp"],
            "ep": sparse["ep"], "efsdp": sparse["efsdp"]}
    if "spmd_dense_for_fwdbwd" in meshes:
        axes["dp"] = meshes["spmd_dense_for_fwdbwd"]["dp"]
        axes["dp_shard"] = dense["dp_shard"]
    else:
        axes["fsdp"] = dense["fsdp"]
    return axes
