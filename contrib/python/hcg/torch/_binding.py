"""How torch will connect a group hcg makes (private): on its members
alone, or as one split of the world's communicator, and whether a gloo
group fits in the process's files. Decided from what this torch has, never
from its version (doc/torch.md, "A default group bound to a device").

When torch's default group is bound to a device (``init_process_group(...,
device_id=)``, and torch's eager ``nccl2`` backend), torch makes every
NCCL subgroup with ``ncclCommSplit`` from the default group's communicator,
whatever the caller asks (``_new_process_group_helper`` sets
``split_from`` from ``_get_split_source(default group)``; Debian 13's
torch 2.6 distributed_c10d.py lines 1889-1906 and 1975, sid's 2.14 lines
2704-2729 and 2872), and ``ncclCommSplit`` needs every rank of that
communicator: a group made by its members alone waits for the others
forever. There hcg makes each NCCL group with torch's ``split_group``
(2.6 line 4713, 2.14 line 6550), which every rank of the job calls for
every key in the same order, each naming its own group (torch finds its
colour from that one list, so no rank holds the groups of others).
TorchComms (2.14's ``_use_torchcomms_enabled``) makes subgroups by a
members-only rendezvous instead (2.14 line 2721): no split there.

Gloo connects a full mesh when a group is made: a member of a group of S
holds S - 1 connections, each a file. A process whose gloo groups would
need more files than its limit leaves room for is refused before any
connection, naming the ways out.
"""

from __future__ import annotations

import os
import resource
from typing import Any, Optional, Tuple

from ..errors import (HcgError, HcgRuntimeError, HcgTypeError, HcgValueError, Status,
                      error)
from ._base import Dist

#: Files a process keeps for everything but gloo's connections: its
#: libraries, hcg's store clients, CUDA's and NCCL's descriptors, a data
#: loader's pipes. SCALE.md: a 64-task job's tasks held up to 270 files,
#: most of them gloo's, with a few dozen for the rest.
RESERVED_FILES = 256


def is_nccl(backend: str) -> bool:
    """Whether a backend string makes an NCCL communicator (``nccl``,
    ``nccl2``, ``cuda:nccl``, ``cpu:gloo,cuda:nccl``)."""
    return "nccl" in backend.lower()


def is_gloo(backend: str) -> bool:
    """Whether a backend string makes a gloo group (eager: a full mesh)."""
    return "gloo" in backend.lower()


def default_group(d: Dist) -> Any:
    """torch's default process group, or None."""
    try:
        return d.distributed_c10d._get_default_group()
    except Exception:  # pylint: disable=broad-except
        return None


def bound_device(d: Dist) -> Any:
    """The device torch's default group is bound to (``device_id=``), or
    None: unbound, or a torch without ``bound_device_id`` (1.13)."""
    pg = default_group(d)
    return None if pg is None else getattr(pg, "bound_device_id", None)


def _torchcomms(c10d: Any) -> bool:
    enabled = getattr(c10d, "_use_torchcomms_enabled", None)
    try:
        return bool(enabled()) if enabled is not None else False
    except Exception:  # pylint: disable=broad-except
        return False


def splits(d: Dist) -> bool:
    """Whether torch makes this process's NCCL subgroups by splitting the
    default group's communicator: a bound default group whose backend for
    that device can split (torch's own test, ``_get_split_source``),
    without TorchComms."""
    c10d = d.distributed_c10d
    pg = default_group(d)
    if pg is None or getattr(pg, "bound_device_id", None) is None:
        return False
    if _torchcomms(c10d):
        return False
    source = getattr(c10d, "_get_split_source", None)
    if source is None:
        return True  # bound, and no way to ask: assume torch splits
    try:
        return source(pg) is not None
    except Exception:  # pylint: disable=broad-except
        return True


def split_function(d: Dist) -> Any:
    """torch's ``split_group`` (2.5+), or None."""
    return getattr(d.distributed_c10d, "split_group", None)


def refuse_split(what: str, device: Any, world: int,
                 have_split: bool) -> HcgRuntimeError:
    """Why a group cannot be made under a bound default group: torch
    without ``split_group``, or a group whose key does not hold every rank
    of the job (its non-members would never split)."""
    why = ("torch.distributed's default group is bound to %s (device_id=), so "
           "torch makes every NCCL group by splitting the job's communicator, "
           "which all %d ranks must join" % (device, world))
    if not have_split:
        return HcgRuntimeError(Status.ENOTSUP, "%s: %s, and this PyTorch has no "
                               "torch.distributed.split_group to do that with: "
                               "start without device_id (hcg.torch.init() binds "
                               "no device unless asked), or use a PyTorch that "
                               "has split_group (2.5 or later)" % (what, why))
    return HcgRuntimeError(Status.ENOTSUP, "%s: %s; the groups of this key do not "
                           "hold every rank of the job (a module's grid, an "
                           "embedding group, a bridge), so the ranks outside them "
                           "would never take part: start without device_id "
                           "(hcg.torch.init() binds no device unless asked), or "
                           "give this group the gloo backend" % (what, why))


def file_limit() -> int:
    """The process's soft limit on open files (a large number when
    unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 30 if soft == resource.RLIM_INFINITY else int(soft)


def gloo_room(limit: Optional[int] = None) -> int:
    """Gloo connections a process may hold: its file limit less
    RESERVED_FILES."""
    return max(0, (file_limit() if limit is None else limit) - RESERVED_FILES)


def gloo_peers_held(d: Dist) -> int:
    """Gloo connections this process's live groups hold: S - 1 for each
    group of S members with a gloo backend (the default group's too),
    from torch's own tables. O(groups of this process)."""
    c10d = d.distributed_c10d
    world = getattr(c10d, "_world", None)
    table = getattr(world, "pg_map", None) if world is not None else None
    if table is None:
        table = getattr(c10d, "_pg_map", {})
    held = 0
    for pg, entry in list(table.items()):
        backend = entry[0] if isinstance(entry, tuple) and entry else ""
        if not is_gloo(str(backend)):
            continue
        try:
            held += max(0, int(pg.size()) - 1)
        except Exception:  # pylint: disable=broad-except
            continue
    return held


def gloo_lazy_available(d: Dist) -> bool:
    """Whether this torch's gloo can connect a group's pairs on first use
    instead of when the group is made (its devices take ``lazy_init``,
    2.14; chosen with TORCH_GLOO_LAZY_INIT=1)."""
    gloo = getattr(d, "ProcessGroupGloo", None)
    make = getattr(gloo, "create_default_device", None)
    return "lazy_init" in (getattr(make, "__doc__", None) or "")


def gloo_lazy(d: Dist) -> bool:
    """Whether this process's gloo groups connect lazily: a torch that
    can, asked to with TORCH_GLOO_LAZY_INIT."""
    asked = os.environ.get("TORCH_GLOO_LAZY_INIT", "").strip().lower()
    return asked in ("1", "true", "yes", "on") and gloo_lazy_available(d)


def refuse_gloo(d: Dist, what: str, size: int, held: int,
                room: int) -> Optional[HcgError]:
    """The error for a gloo group of ``size`` members that does not fit
    beside ``held`` connections in ``room``; None when it fits, or when
    gloo connects lazily here (a member then connects the peers it talks
    to, not all of them)."""
    if held + size - 1 <= room or gloo_lazy(d):
        return None
    lazy = (", or let gloo connect lazily (TORCH_GLOO_LAZY_INIT=1: this torch "
            "has it)" if gloo_lazy_available(d) else "")
    return error(
        Status.ELIMIT, "%s: gloo connects every member to every other when the "
        "group is made: %d connections, beside the %d this process's gloo groups "
        "hold, need more files than its limit of %d leaves room for (%d, keeping "
        "%d for the rest). Use NCCL for it (Megatron-LM: "
        "--disable-gloo-process-groups), or raise the limit on open files "
        "(ulimit -n; the hard limit is %s)%s"
        % (what, size - 1, held, file_limit(), room, RESERVED_FILES, _hard_limit(),
           lazy))


def _hard_limit() -> str:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return "unlimited" if hard == resource.RLIM_INFINITY else str(hard)


def check_world_gloo(d: Dist, backend: str, world: int,
                     what: str) -> Optional[HcgError]:
    """The error for a gloo default group of ``world`` ranks that does not
    fit this process's files; None when it fits or is not gloo."""
    if not is_gloo(backend):
        return None
    return refuse_gloo(d, what, world, 0, gloo_room())


def device_of(device_id: Any) -> Tuple[Any, str]:
    """A ``device_id`` as init() takes it (an int, "cuda:N" or a
    torch.device of type cuda with an index), as a torch.device, with its
    text. Raises HcgTypeError / HcgValueError for anything else."""
    import torch

    if isinstance(device_id, bool) or not isinstance(device_id, (int, str, torch.device)):
        raise HcgTypeError(Status.EINVAL, "hcg.torch.init(device_id=...) takes a CUDA "
                           "device index, 'cuda:N' or a torch.device, got %s"
                           % type(device_id).__name__)
    if isinstance(device_id, int):
        if device_id < 0:
            raise HcgValueError(Status.ERANGE, "hcg.torch.init(device_id=%d): a "
                                "device index is 0 or more" % device_id)
        dev = torch.device("cuda", device_id)
    else:
        try:
            dev = torch.device(device_id)
        except (RuntimeError, TypeError, ValueError) as exc:
            raise HcgValueError(Status.EINVAL, "hcg.torch.init(device_id=%r): not a "
                                "device: %s" % (device_id, exc)) from None
    if dev.type != "cuda" or dev.index is None:
        raise HcgValueError(Status.EINVAL, "hcg.torch.init(device_id=%s): the "
                            "default group is bound to one CUDA device with its "
                            "index, e.g. cuda:0" % dev)
    return dev, str(dev)

