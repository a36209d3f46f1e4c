"""hcg.torch.init(): torch.distributed's default group from the task's
environment alone.

Under ``srun --mpi=pmix --hcg-layout=...`` nothing else is needed: every
rank opens a store of its own on a free port (so steps sharing a node never
collide), and where it is reaches the job through one PMIx publication
(``hcg_ctx_publish`` in libhcg; hcg.torch._places): the default group meets
at rank 0's store, every later group at its first member's. torchrun-style
variables are honoured when set: MASTER_ADDR and MASTER_PORT name the one
store of the job (MASTER_ADDR alone names the address rank 0 publishes,
with a free port), and RANK and WORLD_SIZE must agree with the layout.

With PMIx, the stores are hcg's own (hcg.torch.store): each rank draws a
random secret (128 bits) for its own and publishes it beside the address,
and every connection to a store must prove it knows that secret before it
can name, read or write a key; a process outside the job that reaches the
port gets nothing. A secret is kept in memory only: never in the
environment, a command line or a message. With MASTER_ADDR and MASTER_PORT
set there is no publication, and so no secret: the store is a TCPStore, as
torchrun's, readable and writable by anyone who reaches the port.
"""

from __future__ import annotations

import atexit
import ctypes
import datetime
import math
import os
import secrets
import socket
import time
from typing import Any, Dict, Optional, Tuple

from .. import _lib
from ..env import TaskEnv, from_environ, in_task
from ..errors import HcgError, HcgRuntimeError, PeerError, Status, from_c
from . import _binding, _meet, _places
from . import store as jobstore
from ._base import (MAX_TIMEOUT_S, STATE, Dist, Store, Timeout, accepts, dist,
                    keep_backends, timeout_of)
from ._meet import first_line



def _env_int(name: str) -> Optional[int]:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise HcgRuntimeError(Status.EENV, "%s='%s' is not a number" % (name, text)) from None


def _check_torchrun_vars(task: TaskEnv) -> None:
    for name, want in (("RANK", task.rank), ("WORLD_SIZE", task.world_size)):
        got = _env_int(name)
        if got is not None and got != want:
            raise HcgRuntimeError(Status.EMISMATCH, "%s=%d but the hcg layout says "
                                  "%d (HCG_%s): the torch ranks must be the Slurm "
                                  "task ranks" % (name, got, want, name if name == "RANK"
                                           else "WORLD_SIZE"))


def _own_address() -> str:
    """An address of this host that the job's other tasks can reach."""
    nodes = os.environ.get("SLURM_STEP_NUM_NODES") or os.environ.get("SLURM_NNODES")
    if nodes == "1":
        return "127.0.0.1"  # every task is on this node
    launch = os.environ.get("SLURM_LAUNCH_NODE_IPADDR")
    if launch:
        # The source address of the route to srun's host: every node of the
        # step talks to srun, so this network reaches them all. No packet
        # is sent (connect on a UDP socket only picks the route).
        family = socket.AF_INET6 if ":" in launch else socket.AF_INET
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((launch, 9))
                return str(s.getsockname()[0])
        except OSError:
            pass
    return socket.gethostbyname(socket.gethostname())


def _publish(payload: bytes, timeout_s: int) -> _places.Places:
    """Publishes this rank's store (or its failure) with libhcg's
    hcg_ctx_publish, one fence that gives up after ``timeout_s`` seconds;
    the Places read the others' from the same context, which lives until
    they are closed (a later init(), or the process's exit)."""
    lib = _lib.lib()
    ctx = ctypes.c_void_p()
    err = _lib.Error()
    cfg = _lib.CtxConfig()
    cfg.timeout_s = max(1, min(timeout_s, MAX_TIMEOUT_S))
    rc = lib.hcg_ctx_init(ctypes.byref(cfg), ctypes.byref(ctx), ctypes.byref(err))
    if rc:
        raise _no_pmix(from_c(err))
    size = _places.PUBLISH_BYTES
    buf = ctypes.create_string_buffer(payload[:size - 1], size)
    epoch = ctypes.c_longlong(-1)
    rc = lib.hcg_ctx_publish(ctx, buf, size, ctypes.byref(epoch), ctypes.byref(err))
    if rc:
        lib.hcg_ctx_free(ctx)
        raise _no_pmix(from_c(err))

    def fetch(rank: int) -> bytes:
        out = ctypes.create_string_buffer(size)
        e = _lib.Error()
        if lib.hcg_ctx_fetch(ctx, epoch.value, rank, out, size, ctypes.byref(e)):
            raise from_c(e)
        return out.raw

    def close() -> None:
        lib.hcg_ctx_free(ctx)

    places = _places.Places(fetch, close)
    atexit.register(places.close)
    return places


def _set_places(places: _places.Where) -> None:
    """Where this process's groups meet from now on (closing the previous
    init()'s)."""
    if STATE.places is not None:
        atexit.unregister(STATE.places.close)
        STATE.places.close()
    STATE.places = places


def _no_pmix(exc: HcgError) -> HcgError:
    if exc.code in (Status.EPMIX, Status.ENOTSUP):
        exc.message += (" (hcg.torch.init publishes the ranks' stores through "
                        "PMIx: run under srun --mpi=pmix, or set MASTER_ADDR "
                        "and MASTER_PORT)")
    return exc


def _no_address(rank: int, host: str, exc: BaseException) -> HcgRuntimeError:
    """A rank cannot listen on ``host``, the address it was to publish
    (binding tells at once; a TCPStore would find out only when its own
    client's connection timed out, after the whole timeout or more)."""
    return HcgRuntimeError(Status.EIO, "rank %d could not open hcg.torch's store on %s: "
                           "that is no address of this host (MASTER_ADDR, when set "
                           "alone, is the address rank 0 publishes): %s"
                           % (rank, host, first_line(exc)))


def _server(host: str, port: int, world_size: int,
            timeout: datetime.timedelta) -> Store:
    """Rank 0's TCPStore (MASTER_ADDR and MASTER_PORT name it). It does not
    wait for the others there."""
    try:
        return jobstore.tcp_store(host, port, world_size, True, timeout,
                                  wait_for_workers=False)
    except Exception as exc:  # pylint: disable=broad-except
        raise HcgRuntimeError(Status.EIO, "rank 0 could not open hcg.torch's store "
                              "(a TCPStore) on %s port %s: %s"
                              % (host, port, first_line(exc))) from None


def _job_server(rank: int, host: str, secret: bytes) -> jobstore.Server:
    """This rank's job store, on a free port of ``host`` (replacing one an
    earlier init() of this process opened)."""
    try:
        server = jobstore.Server(host, secret)
    except jobstore.StoreStartError as exc:
        raise HcgRuntimeError(Status.EIO, "rank %d could not start hcg.torch's store: %s"
                              % (rank, exc)) from None
    except (OSError, IndexError) as exc:
        raise _no_address(rank, host, exc) from None
    if STATE.store_server is not None:
        STATE.store_server.close()
    STATE.store_server = server
    return server


def _drop_server() -> None:
    """Closes this rank's job store after a failed init()."""
    if STATE.store_server is not None:
        STATE.store_server.close()
        STATE.store_server = None


#: How long a rank that already failed tries to reach the store to say so
#: (a rank 0 that failed too may never open it).
_REPORT_REACH = datetime.timedelta(seconds=15)


def _client(host: str, port: int, world_size: int, timeout: datetime.timedelta,
            problem: Optional[HcgError], secret: Optional[bytes] = None,
            host_rank: int = 0) -> Store:
    """A client of the store where this rank meets the default group (the
    job store of rank ``host_rank`` when there is a ``secret``, else rank
    0's TCPStore). A rank with a ``problem`` only wants to report it
    there: it tries for a short while, then raises the problem."""
    wait = timeout if problem is None else min(timeout, _REPORT_REACH)
    try:
        return jobstore.connect(host, port, secret, wait, world_size, host_rank)
    except HcgError:
        if problem is not None:
            raise problem from None
        raise


def _master_vars() -> Tuple[Optional[str], Optional[int]]:
    addr = os.environ.get("MASTER_ADDR") or None
    port = _env_int("MASTER_PORT")
    if port is not None and not 0 < port < 65536:
        raise HcgRuntimeError(Status.EENV, "MASTER_PORT=%d is not a TCP port" % port)
    return addr, port


def _store(task: TaskEnv, timeout: datetime.timedelta, deadline: float,
           problem: Optional[HcgError], addr: Optional[str], port: Optional[int]
           ) -> Tuple[Store, _places.Place, Optional[_places.Route]]:
    """A client of the store this rank meets the default group at, that
    store's place, and the route that takes the meeting to rank 0's
    (hcg.torch._places; None when MASTER_ADDR and MASTER_PORT name the
    store: no publication). The store is rank 0's, or in a job of more
    ranks than one store serves this rank's slice's head's, which relays
    to rank 0's; this rank reads that one publication, and where it heads
    a slice the next one up too (never rank 0's unless it is one of them:
    no publication is read by every rank). Every rank gets here, also one
    that already failed (``problem``), so that the publication, a
    collective step, completes: a rank publishes its failure instead of
    an address, and reports it at the next store up its route, which
    every rank reaches through relays. Raises this rank's own problem when
    it is rank 0's, or when the store it reports at failed too; a
    PeerError naming its slice's head when that one failed before it
    published."""
    master = task.rank == 0
    if addr is not None and port is not None:
        # No broadcast: a rank 0 that fails here cannot tell the others,
        # whose clients wait for its store until the timeout.
        one = _places.Place(addr, port, None, -1)
        _set_places(_places.OneStore(one))
        if master:
            if problem is not None:
                raise problem
            _drop_server()
            return (_server(addr, port, task.world_size, timeout), one, None)
        return (_client(addr, port, task.world_size, timeout, problem), one, None)
    # Every rank opens its own store and publishes where it is (or why it
    # could not): a rank that failed already publishes its failure, so
    # that the publication, a collective step, completes and the members
    # of its groups learn it at once.
    payload = b""
    if problem is None:
        try:
            host = (addr if master else None) or _own_address()
            secret = secrets.token_bytes(_places.SECRET_BYTES)
            server = _job_server(task.rank, host, secret)
            payload = _places.encode(secret, host, server.port)
        except HcgError as exc:
            problem = exc
        except OSError as exc:  # no address of its own
            problem = HcgRuntimeError(Status.EIO, "rank %d found no address of "
                                      "this host to publish: %s" % (task.rank, exc))
        except Exception as exc:  # pylint: disable=broad-except
            # Whatever else failed (a bug, a library hcg did not expect to
            # fail): the others learn it through the publication all the
            # same, never at their timeout.
            problem = HcgRuntimeError(Status.EIO, "rank %d could not start "
                                      "hcg.torch's store: %s"
                                      % (task.rank, _meet.describe_exception(exc)))
            problem.__cause__ = exc
    if problem is not None:
        payload = _places.encode_failure(int(problem.code), problem.message)
    left = max(1, int(math.ceil(deadline - time.monotonic())))
    try:
        places = _publish(payload, left)
    except HcgError:
        if problem is not None:
            raise problem from None  # the reason this rank failed first
        raise
    _set_places(places)
    if problem is not None and master:
        raise problem  # its own reason first
    members = range(task.world_size)
    if problem is None:
        # Raises a PeerError naming this rank's slice's head when it
        # failed before it published: the head reported it up (below).
        route = places.route(members, task.rank, "hcg.torch.init")
    else:
        # No store of its own: it reports at the store it would have met
        # at, or where it heads a slice at the next one up (whose rank
        # relays further, as for any member).
        way = _places.path(members, task.rank,
                           _places.group_slice(task.world_size, places.fanin))
        at = 1 if way[0] == task.rank else 0
        try:
            route = _places.Route(places.rank(way[at], "hcg.torch.init"), len(way) - at)
        except HcgError:
            raise problem from None  # that one failed too: nowhere to say it
    first = route.first
    store = _client(first.host, first.port, task.world_size, timeout, problem,
                    first.secret, first.rank)
    return store, first, route


#: How many times this process reached the job's store in init(): part of
#: the prefix where the ranks meet, the same on every rank.
_inits = 0


def _start(d: Dist, task: TaskEnv, backend: str, t: datetime.timedelta,
           problem: Optional[HcgError], device: Any = None) -> Tuple[str, int]:
    """The default group: the store, the ranks' meeting (where a rank that
    failed says so), then torch's init_process_group. Returns the address
    of the store this rank met at."""
    deadline = time.monotonic() + t.total_seconds()
    try:
        addr, port = _master_vars()
    except HcgError as exc:  # a MASTER_PORT that is no port
        addr, port = os.environ.get("MASTER_ADDR") or None, None
        problem = problem or exc
    try:
        store, first, route = _store(task, t, deadline, problem, addr, port)
    except BaseException:
        _drop_server()
        raise
    try:
        _default_group(d, task, backend, t, problem, store, first, route, deadline,
                       device)
    except BaseException:
        _drop_server()  # rank 0: its store goes with its failed init()
        raise
    keep_backends(d.distributed_c10d._get_default_group())
    return first.host, first.port


def _where(first: _places.Place) -> str:
    """The store a rank meets the default group at, for messages."""
    if first.rank < 0:
        return "store %s" % first.address  # MASTER_ADDR and MASTER_PORT's
    return "store %s of rank %d" % (first.address, first.rank)


def _default_group(d: Dist, task: TaskEnv, backend: str, t: datetime.timedelta,
                   problem: Optional[HcgError], store: Store, first: _places.Place,
                   route: Optional[_places.Route], deadline: float,
                   device: Any = None) -> None:
    """The ranks' meeting at the store, then init_process_group (bound to
    ``device`` when one is given). Where
    ``route`` is relayed (_places.path), ``store`` is a client of this
    rank's slice's head's store, told first that the meeting's keys and
    torch's are relayed, and where this rank heads a slice its own store
    is told where they go next. A head whose next store up has no place
    (its rank failed before it published) makes its store the meeting of
    its part of the job instead, and reports that failure there."""
    global _inits
    what = "the default process group (%d ranks, %s)" % (task.world_size, _where(first))
    prefix = "hcg/init/%d/" % _inits
    meeting = d.PrefixStore(prefix, store)
    torch_store = store
    _inits += 1
    places = STATE.places
    size = 1  # the members reaching the meeting through this one (below)
    if isinstance(places, _places.Places):
        slice_ = _places.group_slice(task.world_size, places.fanin)
        if slice_ < task.world_size:
            # The group meets in slices: torch's keys under a prefix of
            # their own, so that they are forwarded too; every rank takes
            # the same one, those that meet at rank 0's store itself too.
            torch_store = d.PrefixStore(prefix + "torch", store)
        # The members reaching rank 0's store through this one (itself
        # included): what a failed head answers for, and a cut-off head waits for.
        size = _places.subtree(task.world_size, task.rank, slice_)
    # A head's store serves its slice: it stays for the others to read.
    heads = route is not None and route.relayed and first.rank == task.rank
    cut: Optional[PeerError] = None  # the next store up failed before it published
    if route is not None and route.relayed:
        try:
            if route.failed is not None:
                cut = route.failed
                STATE.store_server.local(prefix + "/")
                STATE.store_server.local(prefix + "torch/")
            for sub in ("/", "torch/"):
                if cut is None:
                    jobstore.relay_route(route, prefix + sub, store, t)
                else:
                    store.relay(prefix + sub, t)
        except HcgError as exc:
            problem = problem or exc
    try:
        if problem is not None:
            # It answers for the members that reach rank 0's store through
            # it: those in its slice read its failure in its publication.
            _meet.report(meeting, task.rank, problem, settle=size)
            raise problem
        if cut is not None:
            # Its part of the job meets at its store, and reads there who
            # failed; the rest of the job reads it at rank 0's (that rank
            # reported it there itself).
            _meet.report(meeting, cut.rank, HcgRuntimeError(cut.code, cut.reason),
                         settle=True)
            raise cut
        _meet.meet(meeting, task.rank, range(task.world_size), task.rank,
                   deadline, what, t.total_seconds(), settle=True,
                   check_in=_meet.check_in_by(store, prefix))
    except BaseException as exc:  # pylint: disable=broad-except
        err: BaseException = exc
        if not isinstance(exc, (HcgError, _meet.Cancelled)) and \
                isinstance(exc, Exception):
            # A failure hcg did not expect (a bug, a library): told as
            # any other, in hcg's words.
            err = HcgRuntimeError(Status.EIO, "%s: rank %d failed before the "
                                  "ranks met: %s" % (what, task.rank,
                                                     _meet.describe_exception(exc)))
            err.__cause__ = exc
        if problem is None and cut is None and \
                not isinstance(err, (PeerError, _meet.Cancelled)):
            # Its own failure here (a timeout, a lost store, anything
            # else): the others, latecomers too, learn it at once.
            _meet.report(meeting, task.rank, err, settle=True)
        if cut is not None:
            # The members meeting at its store read the failure there.
            _meet.linger(meeting, size, deadline)
        elif task.rank == 0 or heads:
            # This rank hosts the store (or a slice's way to it): the
            # others read the failure there.
            _meet.linger(meeting, task.world_size, deadline)
        if isinstance(err, _meet.Cancelled):  # cannot happen: none reported
            raise HcgRuntimeError(Status.EIO, "%s: cancelled" % what) from None
        if err is exc:
            raise
        raise err from exc
    seconds = t.total_seconds()
    start = time.monotonic()
    kwargs: Dict[str, Any] = {} if device is None else {"device_id": device}
    try:
        d.init_process_group(backend, store=torch_store, rank=task.rank,
                             world_size=task.world_size, timeout=t, **kwargs)
        _meet.connected(d, None, backend)
    except Exception as exc:  # pylint: disable=broad-except
        err = _meet.formation_error(what, seconds, meeting, exc,
                                    time.monotonic() - start)
        _meet.report(meeting, task.rank, err)
        raise err from None


def _device_problem(d: Dist, device_id: Any) -> Tuple[Any, Optional[HcgError]]:
    """The device init() binds the default group to (None for none), or
    why it cannot (a bad device_id, a torch without device_id)."""
    if device_id is None:
        return None, None
    try:
        device, _ = _binding.device_of(device_id)
    except HcgError as exc:
        return None, exc
    if not accepts(d.init_process_group, "device_id"):
        return None, HcgRuntimeError(Status.ENOTSUP, "hcg.torch.init(device_id=%s): "
                                     "this PyTorch's init_process_group takes no "
                                     "device_id: call init() without it" % device)
    return device, None


def init(backend: Optional[str] = None, timeout: Optional[Timeout] = None,
         device_id: Any = None) -> TaskEnv:
    """Starts torch.distributed's default group for this task.

    A rank that fails here before the others could know (a RANK that
    disagrees with the layout, a store rank 0 cannot open) still takes
    part in the collective steps, to tell the others: they raise
    :class:`hcg.PeerError` naming it and its reason at once, not at their
    timeout.

    When torch.distributed is already initialized, checks that its rank and
    world size are the layout's and records the layout.

    Args:
        backend: of the default group; default 'nccl' when CUDA is
            available, else 'gloo'.
        timeout: a timedelta or seconds (default HCG_TIMEOUT, else 300 s),
            used for the store, the default group and every group
            hcg.torch makes; it also bounds how long init() waits for the
            other ranks in all.
        device_id: binds the default group to this task's GPU, as torch
            recommends (``init_process_group(device_id=)``): an index,
            ``"cuda:N"`` or a ``torch.device``. NCCL then connects at once,
            and torch makes every NCCL subgroup by splitting the job's
            communicator: hcg makes those with ``split_group``, every rank
            taking part for every key (doc/torch.md). Default None: unbound,
            each group made by its members alone.

    Returns:
        This task's :class:`hcg.env.TaskEnv`, recorded, so that later
        hcg.torch calls need no arguments.

    Raises:
        hcg.HcgRuntimeError: no hcg layout in the environment (EENV), no
            PMIx and no MASTER_ADDR/MASTER_PORT (EPMIX), a store that
            cannot open (EIO), RANK, WORLD_SIZE, an initialized torch or
            its bound device that disagree with the layout or device_id
            (EMISMATCH), a device_id this torch cannot take (ENOTSUP).
        hcg.HcgValueError: a gloo default group whose connections do not
            fit this process's file limit (ELIMIT), a device_id that is no
            CUDA device.
        hcg.HcgTimeoutError: the other ranks did not all arrive in time.
        hcg.PeerError: another rank failed first (its rank and reason).
        hcg.HcgTypeError, hcg.HcgValueError: a bad timeout.
    """
    d = dist()
    with STATE.lock:
        if not in_task():
            raise HcgRuntimeError(Status.EENV, "hcg.torch.init: this process has no "
                                  "hcg layout (HCG_* variables): start it with srun "
                                  "--mpi=pmix --hcg-layout=LAYOUT, or pass the layout "
                                  "to GroupFactory/new_collection yourself")
        task = from_environ()
        t = timeout_of(timeout)
        problem: Optional[HcgError] = None
        try:
            _check_torchrun_vars(task)
        except HcgError as exc:
            problem = exc
        except Exception as exc:  # pylint: disable=broad-except
            problem = HcgRuntimeError(Status.EENV, "rank %d could not check "
                                      "RANK and WORLD_SIZE: %s"
                                      % (task.rank, _meet.describe_exception(exc)))
        device, bad_device = _device_problem(d, device_id)
        problem = problem or bad_device
        if d.is_initialized():
            if problem is not None:
                raise problem
            if (d.get_rank(), d.get_world_size()) != (task.rank, task.world_size):
                raise HcgRuntimeError(Status.EMISMATCH, "torch.distributed is already "
                                      "initialized as rank %d of %d, but the hcg "
                                      "layout says rank %d of %d"
                                      % (d.get_rank(), d.get_world_size(), task.rank,
                                  task.world_size))
            bound = _binding.bound_device(d)
            if device is not None and bound != device:
                raise HcgRuntimeError(Status.EMISMATCH, "hcg.torch.init(device_id=%s): "
                                      "torch.distributed is already initialized, "
                                      "bound to %s" % (device, bound))
        else:
            if backend is None:
                import torch

                backend = "nccl" if torch.cuda.is_available() else "gloo"
            problem = problem or _binding.check_world_gloo(
                d, backend, task.world_size, "the default process group (%d ranks)"
                % task.world_size)
            _start(d, task, backend, t, problem, device)
        STATE.task, STATE.backend, STATE.timeout = task, backend, t
        return task
