"""torchtitan's parallelism degrees as an hcg layout, and the meshes
torchtitan builds, made of hcg's groups.

torchtitan describes a job by degrees (``dp_replicate``, ``dp_shard``,
``cp``, ``tp``, ``pp``, ``ep``, ``etp``) and makes one world mesh with
``init_device_mesh``, then derives the meshes its parallelisms take: the
dense one ``(pp, dp_replicate, fsdp, tp)`` where ``fsdp`` is ``dp_shard``
and ``cp`` together, the mixture-of-experts one ``(pp, dp_replicate,
efsdp, ep, etp)`` on the same ranks, and the loss mesh: ``batch``
(``dp_replicate`` and ``dp_shard``) by ``cp``, flattened to ``loss``.

Here the degrees become a layout that ``srun --hcg-layout`` places
(:func:`torchtitan_layout`), and :func:`torchtitan_meshes` gives those
meshes with :func:`hcg.torch.device_mesh`: every dimension, the combined
ones included, is hcg's group of its layout dims, made by its members
alone.

The layout lists dims fastest first, torch's meshes outermost first; with
torchtitan's order (``tp`` fastest, then ``cp``, ``dp_shard``,
``dp_replicate``, ``pp``) the ranks of each mesh are those torchtitan's
world mesh gives them.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from ..errors import HcgError, Status
from ..layout import GridRef, Layout
from .mesh import MeshError, _factory_of, _grid_of, device_mesh

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


def torchtitan_meshes(*, grid: GridRef = None,
                      device_type: Optional[str] = None,
                      factory: Any = None) -> Dict[str, Any]:
    """The meshes torchtitan builds, from hcg's groups, for a layout made by
    :func:`torchtitan_layout` (or with the same dim names).

    Args:
        grid: the grid (default: the only one, else the language module).
        device_type: as :func:`hcg.torch.device_mesh`.
        factory: as :func:`hcg.torch.device_mesh`.

    Returns:
        dict: ``"world"``: ``(pp, dp_replicate, dp_shard, cp, tp)`` with
        the flattened dims ``dp`` (dp_replicate, dp_shard), ``dp_shard_cp``
        and ``dp_cp`` (torchtitan's names before it unflattened meshes);
        ``"dense"``: ``(pp, dp_replicate, fsdp, tp)``, ``fsdp`` being
        dp_shard and cp; ``"loss"``: ``(batch, cp)`` with ``loss``
        flattened from both; and, when the grid has an expert view,
        ``"sparse"``: ``(pp, dp_replicate, efsdp, ep, etp)``.

    Raises:
        MeshError: the grid lacks one of torchtitan's dims, or this rank is
            outside it; as :func:`hcg.torch.device_mesh` otherwise.
        DeviceMeshUnavailableError: as :func:`hcg.torch.device_mesh`.
    """
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
    out = {
        "world": device_mesh(["pp", "dp_replicate", "dp_shard", "cp", "tp"],
                             flatten={"dp": ["dp_replicate", "dp_shard"],
                                      "dp_shard_cp": ["dp_shard", "cp"],
                                      "dp_cp": ["dp_replicate", "dp_shard",
                                                "cp"]}, **kw),
        "dense": device_mesh(["pp", "dp_replicate",
                              ("fsdp", ("dp_shard", "cp")), "tp"], **kw),
        "loss": device_mesh([("batch", ("dp_replicate", "dp_shard")), "cp"],
                            flatten={"loss": ["batch", "cp"]}, **kw),
    }
    if "expert" in [v.name for v in g.views]:
        out["sparse"] = device_mesh(["pp", "dp_replicate", "efsdp", "ep",
                                     "etp"], view="expert", **kw)
    return out
