"""What every part of hcg.torch shares (private): the lazy torch import,
the errors for a missing torch and a missing default group, timeouts, and
the rendezvous state init() records (its task in hcg._source, which
resolves every call's layout)."""

from __future__ import annotations

import atexit
import ctypes
import datetime
import inspect
import os
import threading
import weakref
from typing import Any, List, Optional, Union

from .._source import record_task, recorded_task
from ..env import TaskEnv
from ..errors import HcgError, HcgRuntimeError, HcgTypeError, HcgValueError, Status
from ._places import Where

# torch's types, named for the reader. To mypy they are Any: torch is not
# followed (pyproject.toml's [tool.mypy]), and hcg imports without torch.
#: A torch.distributed.ProcessGroup.
ProcessGroup = Any
#: A torch.distributed.Store (TCPStore, PrefixStore).
Store = Any
#: The torch.distributed module.
Dist = Any


# For mypy: HcgError.name (the status's) is not ImportError.name (a
# module's); the former wins, as in mesh.DeviceMeshUnavailableError.
class TorchUnavailableError(HcgError, ImportError):  # type: ignore[misc]
    """PyTorch (with torch.distributed) cannot be used in this process.

    An :class:`hcg.HcgError` with status ENOTSUP (a feature this process
    lacks) and an ImportError, what ``import torch`` raises.

    Args:
        message: what is missing and what to do.
    """

    def __init__(self, message: str) -> None:
        super().__init__(Status.ENOTSUP, message)
        self.msg = message  # ImportError's text, as ImportError(message) sets it


class NotInitializedError(HcgRuntimeError, ValueError):
    """A call that needs torch.distributed's default group before there is
    one. Both a RuntimeError (what torch 1.x raises there) and a ValueError
    (torch 2.x); raised by :func:`require_initialized` alone."""


def dist() -> Dist:
    """torch.distributed, imported now (and only now).

    Raises:
        TorchUnavailableError: no torch, or one without torch.distributed.
    """
    try:
        import torch.distributed as d
    except ImportError as exc:
        raise TorchUnavailableError(
            "hcg.torch needs PyTorch with torch.distributed, and importing it "
            "failed (%s). Install PyTorch, or use hcg.Layout directly: "
            "everything else in hcg works without torch." % exc) from exc
    if not d.is_available():
        raise TorchUnavailableError(
            "this PyTorch build has no torch.distributed (is_available() is "
            "False): hcg.torch cannot create process groups")
    return d


def accepts(fn: Any, name: str) -> bool:
    """Whether ``fn`` (a torch call) takes a parameter ``name``: how hcg
    tells what this torch has, never by its version. False where the
    signature cannot be read."""
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def require_initialized(api: str) -> Dist:
    """torch.distributed, once its default process group exists: the one
    check of every call that makes groups.

    Args:
        api: the public call that needs the group, named in the message
            (e.g. ``"hcg.torch.GroupFactory"``).

    Returns:
        torch.distributed.

    Raises:
        TorchUnavailableError: no usable torch.distributed.
        NotInitializedError: no default process group yet (EINVAL).
    """
    d = dist()
    if not d.is_initialized():
        # torch's own words for it in the middle: code written against
        # torch's error (and Megatron's tests) matches them.
        raise NotInitializedError(Status.EINVAL, "%s: torch.distributed's default "
                                  "process group has not been initialized: call "
                                  "hcg.torch.init() first (or torch.distributed."
                                  "init_process_group)" % api)
    return d


#: Default timeout when neither the caller nor HCG_TIMEOUT gives one. Longer
#: than libhcg's 60 s (gloo connects a full mesh per group, slow on a busy
#: node), far shorter than torch's 30 minutes, which hide a missing rank.
DEFAULT_TIMEOUT_S = 300
MAX_TIMEOUT_S = 86400


#: A timeout as hcg.torch takes it: a timedelta, or seconds (an int or a
#: float), as torch.distributed's own calls take the former.
Timeout = Union[datetime.timedelta, float]


def timeout_of(timeout: Optional[Timeout]) -> datetime.timedelta:
    """The timeout a caller gave, checked.

    Args:
        timeout: a timedelta, a number of seconds, or None: then
            HCG_TIMEOUT (whole seconds), then DEFAULT_TIMEOUT_S.

    Returns:
        The timeout as a timedelta.

    Raises:
        hcg.HcgTypeError: neither a timedelta nor a number.
        hcg.HcgValueError: not more than 0 s and at most MAX_TIMEOUT_S.
        hcg.HcgRuntimeError: an HCG_TIMEOUT that is no such number (EENV).
    """
    if timeout is None:
        text = os.environ.get("HCG_TIMEOUT")
        if text is None or text == "":
            return datetime.timedelta(seconds=DEFAULT_TIMEOUT_S)
        if not text.isdigit() or not 1 <= int(text) <= MAX_TIMEOUT_S:
            raise HcgRuntimeError(Status.EENV, "HCG_TIMEOUT='%s': expected whole "
                                  "seconds from 1 to %d" % (text, MAX_TIMEOUT_S))
        return datetime.timedelta(seconds=int(text))
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise HcgTypeError(Status.EINVAL, "timeout must be a datetime.timedelta "
                           "or seconds, got %r" % (timeout,))
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise HcgValueError(Status.EINVAL, "timeout must be more than 0 and at "
                            "most %d s, got %g s" % (MAX_TIMEOUT_S, seconds))
    return datetime.timedelta(seconds=seconds)


def group_timeout(timeout: Optional[Timeout]) -> datetime.timedelta:
    """The timeout of a group: the caller's, else init()'s, else
    timeout_of(None)."""
    if timeout is not None:
        return timeout_of(timeout)
    return STATE.timeout or timeout_of(None)


_kept_lock = threading.Lock()
#: The backends of the groups hcg made, one list per live group (emptied
#: when the group goes): see keep_backends.
_kept: List[List[Any]] = []
_kept_atexit = False


def keep_backends(pg: ProcessGroup) -> None:
    """Makes sure the backends of ``pg`` (a torch 2.x process group, which
    wraps them) are never destroyed while the GIL is held.

    torch frees a ``ProcessGroupGloo`` or ``ProcessGroupNCCL`` without the
    GIL when the last reference to it is a Python one, but the 2.x
    ``ProcessGroup`` wrapper frees its backends with the GIL held. Gloo's
    destructor waits for its worker threads, and a worker that just ran a
    collective may be freeing the tensor of it, whose Python object needs
    the GIL: the process hangs (seen at the end of a test on torch 2.6, as
    often as the machine was busy). So hcg keeps a Python reference to each
    backend and drops it only after the group itself is gone: the backend
    is then freed without the GIL. At exit, the backends of groups still
    alive are left to the operating system rather than freed during the
    interpreter's shutdown. On torch 1.x a group is its backend: nothing
    to do."""
    global _kept_atexit
    getter = getattr(pg, "_get_backend", None)
    if getter is None:
        return
    import torch

    types = getattr(pg, "_device_types", None)
    names = [str(t) for t in types] if types else ["cpu", "cuda"]
    backends: List[Any] = []
    for name in names:
        try:
            backend = getter(torch.device(name))
        except Exception:  # pylint: disable=broad-except
            continue  # no backend for that device
        if backend is not None and all(backend is not b for b in backends):
            backends.append(backend)
    if not backends:
        return
    # Called once the group's own object is gone (its weak references are
    # cleared after its C++ side was freed); not at exit (see below).
    weakref.finalize(pg, backends.clear).atexit = False
    with _kept_lock:
        _kept[:] = [k for k in _kept if k]
        _kept.append(backends)
        if not _kept_atexit:
            atexit.register(_leave_at_exit)
            _kept_atexit = True


def _leave_at_exit() -> None:
    """At exit, the groups still alive die during the interpreter's
    shutdown, in no order hcg controls: their backends get one more
    reference that is never dropped, so none is freed with the GIL held.
    The process's exit reclaims them."""
    with _kept_lock:
        alive = [b for k in _kept for b in k]
    if alive:
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(alive))


class _State:
    """What init() learned, for the calls after it (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        #: Where groups meet (hcg.torch._places: a Places, one store for
        #: all, or None for torch's default store when init() was not
        #: hcg's). Secrets in it are never printed.
        self.places: Optional[Where] = None
        #: This rank's job store (hcg.torch.store.Server), while it serves.
        self.store_server: Any = None
        self.backend: Optional[str] = None
        self.timeout: Optional[datetime.timedelta] = None


    @property
    def task(self) -> Optional[TaskEnv]:
        """The task init() read: what a None source means (hcg._source)."""
        return recorded_task()

    @task.setter
    def task(self, task: Optional[TaskEnv]) -> None:
        record_task(task)


STATE = _State()
