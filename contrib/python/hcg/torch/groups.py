"""Process groups made by their members alone.

torch's classic ``new_group`` is collective over the whole world: every rank
takes part in creating every group, member or not. hcg knows each rank's
groups without asking anyone, so here only the members of a group create it:

* where torch has it (2.1 and later), the public
  ``new_group(ranks, use_local_synchronization=True)``;
* on older torch (Debian 12 ships 1.13), the backend's own constructor on a
  ``PrefixStore`` unique to the group, registered in torch's tables so that
  every ``torch.distributed`` call accepts it (``get_rank(group)``,
  ``get_backend``, ``destroy_process_group``, ``get_process_group_ranks``).

Features are detected, never version strings. Gloo connects eagerly, so on
the constructor path a rank's groups are built on up to ``MAX_THREADS``
threads, each with its own store client (a ``TCPStore`` client holds its lock
while it waits). Every rank takes its groups in one global order (largest
first, then by key): the first unfinished group in that order always has all
its members working on it, so the threads cannot deadlock.

Each member first checks in under the group's prefix; when the group does not
form in time the error names the group key and the ranks that never arrived.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import inspect
import os
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import HcgError, Status
from ._base import STATE, dist

#: Most groups a rank connects at once on the constructor path. Measured
#: with bench_torch's collection at 32 tasks on 2 CPUs (7 shared groups per
#: rank): all 7 at once took 4.5-6.3 s, 2 to 4 at once 0.65-0.87 s, one
#: after another 0.9-1.1 s. Every member connecting all its groups at once
#: makes the whole job's connections contend; a few at a time keeps the
#: overlap without the contention.
MAX_THREADS = 4


class GroupSpec(NamedTuple):
    """One group to create: its key, its members (global ranks, ascending)
    and the keyword arguments of its creation (backend, timeout,
    pg_options). ``tag`` names the group in the store (default: the key);
    every member must give the same tag. ``desc`` is torch's group_desc
    where torch takes one (default: the key)."""

    key: str
    members: Tuple[int, ...]
    backend: Optional[str]
    timeout: datetime.timedelta
    pg_options: Any = None
    tag: Optional[str] = None
    desc: Optional[str] = None


_created_lock = threading.Lock()
#: tag -> how many times this process has created it: part of the store
#: prefix, so that a group made again after destroy_process_group does not
#: read the addresses of its earlier life. Every member creates a tag the
#: same number of times, so they agree on the prefix.
_created: Dict[str, int] = {}


def _accepts(fn: Callable[..., Any], name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def members_only_public(d: Any) -> bool:
    """True when torch's own new_group can involve only the members."""
    return _accepts(d.new_group, "use_local_synchronization")


def _registry(c10d: Any) -> Tuple[Dict[Any, Any], Dict[Any, Any], Dict[Any, Any]]:
    world = getattr(c10d, "_world", None)
    if world is not None and hasattr(world, "pg_map"):
        return world.pg_map, world.pg_names, world.pg_group_ranks
    try:
        return c10d._pg_map, c10d._pg_names, c10d._pg_group_ranks
    except AttributeError:
        raise HcgError(Status.ENOTSUP, "this PyTorch has neither "
                       "new_group(use_local_synchronization=) nor the "
                       "process-group tables hcg.torch registers groups in: "
                       "groups cannot be made by their members alone") from None


def _generation(tag: str) -> int:
    with _created_lock:
        n = _created.get(tag, 0)
        _created[tag] = n + 1
        return n


def _prefix(s: GroupSpec) -> str:
    """The group's store prefix: the tag (the key, unless the caller named
    the group otherwise) names every group of an enumeration, the first
    member tells this one from the others, and the generation keeps a group
    made again from meeting its earlier life."""
    tag = s.tag or s.key
    return "hcg/%s/%d/%d/" % (tag, s.members[0], _generation(tag))


def _missing(store: Any, members: Sequence[int]) -> List[int]:
    missing = []
    for i, m in enumerate(members):
        try:
            # add(key, 0) reads a counter without waiting (torch 1.13's
            # Python stores have no check()).
            if store.add("hcg_in/%d" % i, 0) == 0:
                missing.append(m)
        except Exception:  # the store itself is gone: cannot tell
            return []
    return missing


def _timeout_error(spec: GroupSpec, store: Any, exc: BaseException) -> HcgError:
    missing = _missing(store, spec.members) if store is not None else []
    who = ("ranks %s never arrived" % ", ".join(map(str, missing))
           if missing else "its members did not all connect")
    return HcgError(Status.ETIMEOUT, "process group '%s' (ranks %s) did not "
                    "form within %g s: %s (torch: %s)"
                    % (spec.key, _span(spec.members),
                       spec.timeout.total_seconds(), who,
                       str(exc).strip().splitlines()[0] if str(exc) else
                       type(exc).__name__))


def _span(members: Sequence[int]) -> str:
    if len(members) > 8:
        return "%s, ... %d in all" % (", ".join(map(str, members[:6])),
                                      len(members))
    return ", ".join(map(str, members))


class _Clients(threading.local):
    store: Any = None


def build(specs: Sequence[GroupSpec], rank: int) -> Dict[str, Any]:
    """Creates the groups of ``specs`` (all holding ``rank``) and returns
    key -> process group. Only their members call this, in any order."""
    d = dist()
    if not d.is_initialized():
        raise HcgError(Status.EINVAL, "torch.distributed is not initialized: "
                       "call hcg.torch.init() (or init_process_group) first")
    for s in specs:
        if rank not in s.members:
            raise HcgError(Status.ENOTMEMBER, "rank %d is not a member of "
                           "group '%s'" % (rank, s.key))
    order = sorted(specs, key=lambda s: (-len(s.members), s.key))
    if members_only_public(d):
        return {s.key: _public(d, s, rank) for s in order}
    return _constructed(d, order, rank)


def _public(d: Any, s: GroupSpec, rank: int) -> Any:
    prefix = _prefix(s)
    try:
        ps = d.PrefixStore(prefix, d.distributed_c10d._get_default_store())
        ps.add("hcg_in/%d" % s.members.index(rank), 1)
    except Exception:  # no default store to check in with: messages say less
        ps = None
    kwargs: Dict[str, Any] = {"ranks": list(s.members), "timeout": s.timeout,
                              "backend": s.backend, "pg_options": s.pg_options,
                              "use_local_synchronization": True}
    if _accepts(d.new_group, "group_desc"):
        kwargs["group_desc"] = s.desc or s.key
    try:
        return d.new_group(**kwargs)
    except RuntimeError as exc:  # the members' barrier timed out
        raise _timeout_error(s, ps, exc) from None


def _constructed(d: Any, order: Sequence[GroupSpec], rank: int) -> Dict[str, Any]:
    c10d = d.distributed_c10d
    pg_map, pg_names, pg_group_ranks = _registry(c10d)
    base = STATE.store_addr
    clients = _Clients()
    timeout = max(s.timeout for s in order) if order else None

    def store() -> Any:
        if base is None:
            return c10d._get_default_store()
        if clients.store is None:
            clients.store = d.TCPStore(base[0], base[1], None, False, timeout)
        return clients.store

    def fresh(prefix: str) -> Any:
        """A new client for the post-mortem: after a timeout the old one
        may be unusable."""
        try:
            client = (c10d._get_default_store() if base is None else
                      d.TCPStore(base[0], base[1], None, False,
                                 datetime.timedelta(seconds=10)))
            return d.PrefixStore(prefix, client)
        except Exception:
            return None

    devices: List[Any] = []
    device_lock = threading.Lock()

    def device() -> Any:
        """One gloo device (one listening socket, one event loop) for all
        the groups of this call, where torch would open one per group;
        GLOO_SOCKET_IFNAME picks the interface, as for torch's groups."""
        with device_lock:
            if not devices:
                iface = os.environ.get("GLOO_SOCKET_IFNAME")
                devices.append(
                    d.ProcessGroupGloo.create_device(interface=iface.split(",")[0])
                    if iface else d.ProcessGroupGloo.create_default_device())
            return devices[0]

    default_backend = str(d.get_backend())
    prefixes = {s.key: _prefix(s) for s in order}

    def one(s: GroupSpec) -> Tuple[str, Any, Any]:
        backend = str(s.backend or default_backend)
        ps = d.PrefixStore(prefixes[s.key], store())
        grank = s.members.index(rank)
        ps.add("hcg_in/%d" % grank, 1)
        try:
            if backend == "gloo":
                opts = d.ProcessGroupGloo._Options()
                opts._devices = [device()]
                opts._timeout = s.timeout
                pg = d.ProcessGroupGloo(ps, grank, len(s.members), opts)
            elif backend == "nccl":
                opts = s.pg_options
                if opts is None:
                    opts = d.ProcessGroupNCCL.Options()
                opts._timeout = s.timeout
                pg = d.ProcessGroupNCCL(ps, grank, len(s.members), opts)
            else:
                raise HcgError(Status.ENOTSUP, "hcg.torch makes gloo and "
                               "nccl groups on this PyTorch, not '%s' (group "
                               "'%s')" % (backend, s.key))
        except RuntimeError as exc:
            raise _timeout_error(s, fresh(prefixes[s.key]), exc) from None
        return backend, ps, pg

    out: Dict[str, Any] = {}
    threads = 1 if base is None else min(MAX_THREADS, len(order))
    if threads <= 1:
        results = [(s, one(s)) for s in order]
    else:
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            futures = [(s, pool.submit(one, s)) for s in order]
            results = []
            error: Optional[BaseException] = None
            for s, f in futures:
                try:
                    results.append((s, f.result()))
                except BaseException as exc:  # keep the first, wait for all
                    error = error or exc
            if error is not None:
                raise error
    for s, (backend, ps, pg) in results:
        pg_map[pg] = (backend, ps)
        pg_names[pg] = "hcg:%s" % prefixes[s.key][4:-1]  # never numeric
        pg_group_ranks[pg] = {m: i for i, m in enumerate(s.members)}
        out[s.key] = pg
    return out
