"""PyTorch process groups for an hcg layout, made by their members alone.

Importing this package does not import torch; the first call that needs it
does, and raises :class:`TorchUnavailableError` (an hcg.HcgError and an
ImportError) with a clear message when PyTorch or torch.distributed is
missing.

    import torch.distributed as dist
    import hcg.torch

    hcg.torch.init()                        # under srun --mpi=pmix --hcg-layout=...
    pgs = hcg.torch.new_collection()        # this rank's groups, Megatron's names
    dist.all_reduce(t, group=pgs.dp_cp)
    model = GPTModel(..., pg_collection=pgs.to_megatron())

For PyTorch's own stack (FSDP2, DTensor, torchtitan):
``hcg.torch.device_mesh`` is a ``DeviceMesh`` of hcg's groups, and
``torchtitan_layout``/``torchtitan_meshes``/``torchtitan_axes`` map torchtitan's degrees.

For Megatron-LM: ``HyperCommGrid`` is its class, ``check_megatron_args``
refuses arguments that disagree with the launcher's layout, and
``hcg.torch.megatron.create_topology`` is its MIMO topology.

See doc/torch.md.
"""

from typing import TYPE_CHECKING, Any

from ._base import NotInitializedError, Timeout, TorchUnavailableError
from .collection import (ATTRIBUTES, GroupFactory, MultiModuleCollection,
                         ProcessGroups, new_collection, new_collections,
                         new_multimodule_collection)
from .grid import HyperCommGrid
from .mesh import DeviceMeshUnavailableError, MeshError, device_mesh
from .titan import torchtitan_axes, torchtitan_layout, torchtitan_meshes
from .megatron import MegatronArgs, MegatronError, check_megatron_args, megatron_args
from .rendezvous import init
from .store import tcp_store

if TYPE_CHECKING:
    from .bridge import ColocatedBridge, NonColocatedBridge

__all__ = ["ATTRIBUTES", "ColocatedBridge", "DeviceMeshUnavailableError", "GroupFactory", "HyperCommGrid",
           "NonColocatedBridge", "NotInitializedError", "Timeout",
           "MultiModuleCollection", "ProcessGroups", "TorchUnavailableError",
           "MeshError", "device_mesh", "init", "new_collection", "new_collections",
           "new_multimodule_collection", "tcp_store",
           "torchtitan_axes", "torchtitan_layout", "torchtitan_meshes",
           "MegatronArgs", "MegatronError", "check_megatron_args", "megatron_args"]


def __getattr__(name: str) -> Any:
    """The bridges, loaded when first named: they are torch.nn.Modules, so
    their module imports torch, which importing hcg.torch must not."""
    if name in ("ColocatedBridge", "NonColocatedBridge"):
        from ._base import dist

        dist()  # TorchUnavailableError, saying so, without torch
        from . import bridge

        value = getattr(bridge, name)
        globals()[name] = value  # found directly from now on
        return value
    raise AttributeError("module %r has no attribute %r" % (__name__, name))
