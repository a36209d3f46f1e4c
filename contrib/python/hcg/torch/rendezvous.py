"""hcg.torch.init(): torch.distributed's default group from the task's
environment alone.

Under ``srun --mpi=pmix --hcg-layout=...`` nothing else is needed: rank 0
opens the job's store on a free port (so steps sharing a node never collide),
and its address reaches every task through one PMIx broadcast
(``hcg_ctx_broadcast`` in libhcg). torchrun-style variables are honoured
when set: MASTER_ADDR and MASTER_PORT name the store (MASTER_ADDR alone
names the address rank 0 publishes, with a free port), and RANK and
WORLD_SIZE must agree with the layout.

With the PMIx broadcast, the store is hcg's own (hcg.torch.store): rank 0
draws a random secret (128 bits) and sends it beside the address, and every
connection to the store must prove it knows the secret before it can name,
read or write a key; a process outside the job that reaches the port gets
nothing. The secret is kept in this process's memory only: never in the
environment, a command line or a message. With MASTER_ADDR and MASTER_PORT
set there is no broadcast, and so no secret: the store is a TCPStore, as
torchrun's, readable and writable by anyone who reaches the port.
"""

from __future__ import annotations

import ctypes
import datetime
import math
import os
import secrets
import socket
import time
from typing import Optional, Tuple

from .. import _lib
from ..env import TaskEnv, from_environ, in_task
from ..errors import (HcgError, HcgRuntimeError, PeerError, Status, from_c,
                      status_name)
from . import _meet
from . import store as jobstore
from ._base import (MAX_TIMEOUT_S, STATE, Dist, Store, Timeout, dist,
                    keep_backends, timeout_of)
from ._meet import first_line

#: Room for what rank 0 broadcasts: "SECRET ADDRESS:PORT", or its failure.
_BCAST_BYTES = 2048
#: What starts rank 0's failure in the broadcast, followed by "CODE MESSAGE"
#: (a secret, in hex, never starts with it).
_FAILED = "!hcg-failed "
#: Bytes of randomness in the store's secret (128 bits).
_SECRET_BYTES = 16


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


def _broadcast(payload: bytes, timeout_s: int) -> bytes:
    """rank 0's payload, on every rank, through libhcg's PMIx broadcast,
    which gives up after ``timeout_s`` seconds in all."""
    lib = _lib.lib()
    ctx = ctypes.c_void_p()
    err = _lib.Error()
    cfg = _lib.CtxConfig()
    cfg.timeout_s = max(1, min(timeout_s, MAX_TIMEOUT_S))
    rc = lib.hcg_ctx_init(ctypes.byref(cfg), ctypes.byref(ctx), ctypes.byref(err))
    if rc:
        raise _no_pmix(from_c(err))
    try:
        buf = ctypes.create_string_buffer(payload[:_BCAST_BYTES - 1], _BCAST_BYTES)
        rc = lib.hcg_ctx_broadcast(ctx, 0, buf, _BCAST_BYTES, ctypes.byref(err))
        if rc:
            raise _no_pmix(from_c(err))
        return buf.value
    finally:
        lib.hcg_ctx_free(ctx)


def _no_pmix(exc: HcgError) -> HcgError:
    if exc.code in (Status.EPMIX, Status.ENOTSUP):
        exc.message += (" (hcg.torch.init publishes rank 0's address through "
                        "PMIx: run under srun --mpi=pmix, or set MASTER_ADDR "
                        "and MASTER_PORT)")
    return exc


def _no_address(host: str, exc: BaseException) -> HcgRuntimeError:
    """Rank 0 cannot listen on ``host``, the address it was to publish
    (binding tells at once; a TCPStore would find out only when its own
    client's connection timed out, after the whole timeout or more)."""
    return HcgRuntimeError(Status.EIO, "rank 0 could not open hcg.torch's store on %s: "
                           "that is no address of this host (MASTER_ADDR, when set "
                           "alone, is the address rank 0 publishes): %s"
                           % (host, first_line(exc)))


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


def _job_server(host: str, secret: bytes) -> jobstore.Server:
    """Rank 0's job store, on a free port of ``host`` (replacing one an
    earlier init() of this process opened)."""
    try:
        server = jobstore.Server(host, secret)
    except jobstore.StoreStartError as exc:
        raise HcgRuntimeError(Status.EIO, "rank 0 could not start hcg.torch's store: %s"
                              % exc) from None
    except (OSError, IndexError) as exc:
        raise _no_address(host, exc) from None
    if STATE.store_server is not None:
        STATE.store_server.close()
    STATE.store_server = server
    return server


def _drop_server() -> None:
    """Closes rank 0's job store after a failed init()."""
    if STATE.store_server is not None:
        STATE.store_server.close()
        STATE.store_server = None


#: How long a rank that already failed tries to reach the store to say so
#: (a rank 0 that failed too may never open it).
_REPORT_REACH = datetime.timedelta(seconds=15)


def _client(host: str, port: int, world_size: int, timeout: datetime.timedelta,
            problem: Optional[HcgError], secret: Optional[bytes] = None) -> Store:
    """A client of rank 0's store (the job store when there is a
    ``secret``, else a TCPStore). A rank with a ``problem`` only wants to
    report it there: it tries for a short while, then raises the problem."""
    wait = timeout if problem is None else min(timeout, _REPORT_REACH)
    try:
        return jobstore.connect(host, port, secret, wait, world_size)
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
           problem: Optional[HcgError], addr: Optional[str],
           port: Optional[int]) -> Tuple[Store, str, int, Optional[bytes]]:
    """The job's store (rank 0 hosts it), its address and the job's secret
    (None when MASTER_ADDR and MASTER_PORT name the store: no broadcast). Every rank gets
    here, also one that already failed (``problem``), so that the
    broadcast, a collective step, completes: rank 0 publishes its failure
    there instead of an address, and every other rank raises a PeerError
    naming it at once. Raises rank 0's own problem on rank 0."""
    master = task.rank == 0
    if addr is not None and port is not None:
        # No broadcast: a rank 0 that fails here cannot tell the others,
        # whose clients wait for its store until the timeout.
        if master:
            if problem is not None:
                raise problem
            _drop_server()
            return (_server(addr, port, task.world_size, timeout), addr, port,
                    None)
        return (_client(addr, port, task.world_size, timeout, problem),
                addr, port, None)
    payload = b""
    if master:
        if problem is None:
            try:
                host = addr or _own_address()
                secret = secrets.token_bytes(_SECRET_BYTES)
                server = _job_server(host, secret)
                payload = ("%s %s:%d" % (secret.hex(), host, server.port)).encode()
            except HcgError as exc:
                problem = exc
            except OSError as exc:  # no address of its own
                problem = HcgRuntimeError(Status.EIO, "rank 0 found no address of "
                                          "this host to publish: %s" % exc)
            except Exception as exc:  # pylint: disable=broad-except
                # Whatever else failed (a bug, a library hcg did not
                # expect to fail): the others learn it through the
                # broadcast all the same, never at their timeout.
                problem = HcgRuntimeError(Status.EIO, "rank 0 could not start "
                                          "hcg.torch's store: %s"
                                          % _meet.describe_exception(exc))
                problem.__cause__ = exc
        if problem is not None:
            payload = ("%s%d %s" % (_FAILED, int(problem.code),
                                    problem.message)).encode("utf-8", "replace")
    left = max(1, int(math.ceil(deadline - time.monotonic())))
    try:
        got = _broadcast(payload, left).decode("utf-8", "replace")
    except HcgError:
        if problem is not None:
            raise problem from None  # the reason this rank failed first
        raise
    if problem is not None and (master or got.startswith(_FAILED)):
        raise problem  # its own reason first
    if got.startswith(_FAILED):
        code, _, reason = got[len(_FAILED):].partition(" ")
        code_n = int(code) if code.isdigit() else int(Status.EIO)
        raise PeerError(code_n, "hcg.torch.init: rank 0 failed before it "
                        "published the address of its store: %s: %s"
                        % (status_name(code_n), reason), 0, reason)
    hex_secret, _, address = got.partition(" ")
    host, _, text = address.rpartition(":")
    try:
        secret = bytes.fromhex(hex_secret)
    except ValueError:
        secret = b""
    if len(secret) != _SECRET_BYTES or not host or not text.isdigit():
        # Never quote what came: it may hold the secret.
        raise HcgRuntimeError(Status.EPMIX, "rank 0 published no usable store "
                              "address (%d bytes that are not SECRET HOST:PORT)"
                              % len(got))
    store = _client(host, int(text), task.world_size, timeout, problem, secret)
    return store, host, int(text), secret


#: How many times this process reached the job's store in init(): part of
#: the prefix where the ranks meet, the same on every rank.
_inits = 0


def _start(d: Dist, task: TaskEnv, backend: str, t: datetime.timedelta,
           problem: Optional[HcgError]) -> Tuple[str, int]:
    """The default group: the store, the ranks' meeting (where a rank that
    failed says so), then torch's init_process_group."""
    deadline = time.monotonic() + t.total_seconds()
    try:
        addr, port = _master_vars()
    except HcgError as exc:  # a MASTER_PORT that is no port
        addr, port = os.environ.get("MASTER_ADDR") or None, None
        problem = problem or exc
    try:
        store, host, port, secret = _store(task, t, deadline, problem, addr, port)
    except BaseException:
        _drop_server()
        raise
    STATE.store_secret = secret
    try:
        _default_group(d, task, backend, t, problem, store, host, port, deadline)
    except BaseException:
        _drop_server()  # rank 0: its store goes with its failed init()
        raise
    keep_backends(d.distributed_c10d._get_default_group())
    return host, port


def _default_group(d: Dist, task: TaskEnv, backend: str, t: datetime.timedelta,
                   problem: Optional[HcgError], store: Store, host: str, port: int,
                   deadline: float) -> None:
    """The ranks' meeting at the store, then init_process_group."""
    global _inits
    what = ("the default process group (%d ranks, store %s:%d)"
            % (task.world_size, host, port))
    meeting = d.PrefixStore("hcg/init/%d/" % _inits, store)
    _inits += 1
    try:
        if problem is not None:
            _meet.report(meeting, task.rank, problem, settle=True)
            raise problem
        _meet.meet(meeting, task.rank, range(task.world_size), task.rank,
                   deadline, what, t.total_seconds(), settle=True)
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
        if problem is None and not isinstance(err, (PeerError, _meet.Cancelled)):
            # Its own failure here (a timeout, a lost store, anything
            # else): the others, latecomers too, learn it at once.
            _meet.report(meeting, task.rank, err, settle=True)
        if task.rank == 0:
            # This rank hosts the store: the others read the failure there.
            _meet.linger(meeting, task.world_size, deadline)
        if isinstance(err, _meet.Cancelled):  # cannot happen: none reported
            raise HcgRuntimeError(Status.EIO, "%s: cancelled" % what) from None
        if err is exc:
            raise
        raise err from exc
    seconds = t.total_seconds()
    start = time.monotonic()
    try:
        d.init_process_group(backend, store=store, rank=task.rank,
                             world_size=task.world_size, timeout=t)
    except Exception as exc:  # pylint: disable=broad-except
        err = _meet.formation_error(what, seconds, meeting, exc,
                                    time.monotonic() - start)
        _meet.report(meeting, task.rank, err)
        raise err from None


def init(backend: Optional[str] = None, timeout: Optional[Timeout] = None) -> TaskEnv:
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

    Returns:
        This task's :class:`hcg.env.TaskEnv`, recorded, so that later
        hcg.torch calls need no arguments.

    Raises:
        hcg.HcgRuntimeError: no hcg layout in the environment (EENV), no
            PMIx and no MASTER_ADDR/MASTER_PORT (EPMIX), a store that
            cannot open (EIO), RANK, WORLD_SIZE or an initialized torch
            that disagree with the layout (EMISMATCH).
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
        if d.is_initialized():
            if problem is not None:
                raise problem
            if (d.get_rank(), d.get_world_size()) != (task.rank, task.world_size):
                raise HcgRuntimeError(Status.EMISMATCH, "torch.distributed is already "
                                      "initialized as rank %d of %d, but the hcg "
                                      "layout says rank %d of %d"
                                      % (d.get_rank(), d.get_world_size(), task.rank,
                                  task.world_size))
        else:
            if backend is None:
                import torch

                backend = "nccl" if torch.cuda.is_available() else "gloo"
            STATE.store_addr = _start(d, task, backend, t, problem)
        STATE.task, STATE.backend, STATE.timeout = task, backend, t
        return task
