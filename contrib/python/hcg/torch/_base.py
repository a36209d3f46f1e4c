"""What every part of hcg.torch shares: the lazy torch import, the error
for a missing torch, timeouts, TCPStores that open on every torch, and the
rendezvous state init() records."""

from __future__ import annotations

import datetime
import os
import threading
from typing import Any, Dict, Optional, Tuple

from ..errors import HcgError, Status


class TorchUnavailableError(ImportError):
    """PyTorch (with torch.distributed) cannot be used in this process."""


def dist() -> Any:
    """torch.distributed, imported now (and only now)."""
    try:
        import torch.distributed as d  # type: ignore[import]
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


#: Default timeout when neither the caller nor HCG_TIMEOUT gives one. Longer
#: than libhcg's 60 s (gloo connects a full mesh per group, slow on a busy
#: node), far shorter than torch's 30 minutes, which hide a missing rank.
DEFAULT_TIMEOUT_S = 300
MAX_TIMEOUT_S = 86400


def timeout_of(timeout: Any) -> datetime.timedelta:
    """A timedelta from a timedelta, a number of seconds or None (then
    HCG_TIMEOUT, then DEFAULT_TIMEOUT_S)."""
    if timeout is None:
        text = os.environ.get("HCG_TIMEOUT")
        if text is None or text == "":
            return datetime.timedelta(seconds=DEFAULT_TIMEOUT_S)
        if not text.isdigit() or not 1 <= int(text) <= MAX_TIMEOUT_S:
            raise HcgError(Status.EENV, "HCG_TIMEOUT='%s': expected whole "
                           "seconds from 1 to %d" % (text, MAX_TIMEOUT_S))
        return datetime.timedelta(seconds=int(text))
    if isinstance(timeout, datetime.timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise HcgError(Status.EINVAL, "timeout must be a datetime.timedelta "
                       "or seconds, got %r" % (timeout,))
    if not 0 < seconds <= MAX_TIMEOUT_S:
        raise HcgError(Status.EINVAL, "timeout must be more than 0 and at "
                       "most %d s, got %g s" % (MAX_TIMEOUT_S, seconds))
    return datetime.timedelta(seconds=seconds)


def group_timeout(timeout: Any) -> datetime.timedelta:
    """The timeout of a group: the caller's, else init()'s, else
    timeout_of(None)."""
    if timeout is not None:
        return timeout_of(timeout)
    return STATE.timeout or timeout_of(None)


_store_lock = threading.Lock()
#: Keyword arguments every TCPStore hcg opens gets (see _store_kwargs).
_store_kw: Optional[Dict[str, Any]] = None


def _store_kwargs(d: Any) -> Dict[str, Any]:
    """What a TCPStore needs to open on this torch, detected once.

    torch 2.4 and later take ``use_libuv`` and default it to True, but a
    torch built without libuv (Debian's 2.6 and 2.14) refuses that default
    in every TCPStore, server or client. Whether the argument exists is
    read from the constructor's signature; where it does, a throwaway
    server on a free loopback port tells whether torch's default opens.
    When it does not and one with ``use_libuv=False`` does, every store
    hcg opens asks for that. The check is the feature itself, never a
    version number."""
    global _store_kw
    with _store_lock:
        if _store_kw is None:
            _store_kw = {}
            if "use_libuv" in (d.TCPStore.__init__.__doc__ or ""):
                if not _opens(d, {}) and _opens(d, {"use_libuv": False}):
                    _store_kw = {"use_libuv": False}
        return dict(_store_kw)


def _opens(d: Any, kwargs: Dict[str, Any]) -> bool:
    try:
        probe = d.TCPStore("127.0.0.1", 0, 1, True,
                           datetime.timedelta(seconds=10),
                           wait_for_workers=False, **kwargs)
    except Exception:  # pylint: disable=broad-except
        return False
    del probe  # its server thread ends with it
    return True


def tcp_store(host: str, port: int, world_size: Optional[int],
              is_master: bool, timeout: datetime.timedelta,
              wait_for_workers: bool = True) -> Any:
    """A ``torch.distributed.TCPStore`` (server when ``is_master``, else a
    client of HOST:PORT) that opens on this torch whether or not it was
    built with libuv. Arguments as TCPStore's. torch's own errors (a port
    in use, a server that never answers) are raised as they come; callers
    turn them into :class:`hcg.HcgError` with what they were doing."""
    d = dist()
    return d.TCPStore(host, port, world_size, is_master, timeout,
                      wait_for_workers=wait_for_workers, **_store_kwargs(d))


class _State:
    """What init() learned, for the calls after it (one per process)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.store_addr: Optional[Tuple[str, int]] = None  # host, port
        self.task: Any = None  # hcg.env.TaskEnv of init()
        self.backend: Optional[str] = None
        self.timeout: Optional[datetime.timedelta] = None


STATE = _State()
