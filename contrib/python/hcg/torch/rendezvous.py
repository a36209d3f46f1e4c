"""hcg.torch.init(): torch.distributed's default group from the task's
environment alone.

Under ``srun --mpi=pmix --hcg-layout=...`` nothing else is needed: rank 0
opens a TCPStore on a free port (so steps sharing a node never collide),
and its address reaches every task through one PMIx broadcast
(``hcg_ctx_broadcast`` in libhcg). torchrun-style variables are honoured
when set: MASTER_ADDR and MASTER_PORT name the store (MASTER_ADDR alone
names the address rank 0 publishes, with a free port), and RANK and
WORLD_SIZE must agree with the layout.
"""

from __future__ import annotations

import ctypes
import os
import socket
from typing import Any, Optional, Tuple

from .. import _lib
from ..env import TaskEnv, from_environ, in_task
from ..errors import HcgError, Status, from_c
from ._base import STATE, dist, tcp_store, timeout_of

#: Room for "ADDRESS:PORT" in the broadcast (an IPv6 address and a port fit).
_ADDR_BYTES = 256


def _env_int(name: str) -> Optional[int]:
    text = os.environ.get(name)
    if text is None or text == "":
        return None
    try:
        return int(text)
    except ValueError:
        raise HcgError(Status.EENV, "%s='%s' is not a number" % (name, text)) from None


def _check_torchrun_vars(task: TaskEnv) -> None:
    for name, want in (("RANK", task.rank), ("WORLD_SIZE", task.world_size)):
        got = _env_int(name)
        if got is not None and got != want:
            raise HcgError(Status.EMISMATCH, "%s=%d but the hcg layout says "
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
                return s.getsockname()[0]
        except OSError:
            pass
    return socket.gethostbyname(socket.gethostname())


def _broadcast(payload: bytes) -> bytes:
    """rank 0's payload, on every rank, through libhcg's PMIx broadcast."""
    lib = _lib.lib()
    ctx = ctypes.c_void_p()
    err = _lib.Error()
    rc = lib.hcg_ctx_init(None, ctypes.byref(ctx), ctypes.byref(err))
    if rc:
        raise _no_pmix(from_c(err))
    try:
        buf = ctypes.create_string_buffer(payload, _ADDR_BYTES)
        rc = lib.hcg_ctx_broadcast(ctx, 0, buf, _ADDR_BYTES, ctypes.byref(err))
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


def _store(task: TaskEnv, timeout: Any) -> Tuple[Any, str, int]:
    master = task.rank == 0
    addr = os.environ.get("MASTER_ADDR") or None
    port = _env_int("MASTER_PORT")
    if addr is not None and port is not None:
        if not 0 < port < 65536:
            raise HcgError(Status.EENV, "MASTER_PORT=%d is not a TCP port" % port)
        return (tcp_store(addr, port, task.world_size, master, timeout), addr, port)
    store = None
    if master:
        host = addr or _own_address()
        # Port 0: the kernel picks a free port. Rank 0 must not wait for the
        # others here: they learn the port only after it is published.
        store = tcp_store(host, 0, task.world_size, True, timeout,
                           wait_for_workers=False)
        payload = ("%s:%d" % (host, store.port)).encode()
    else:
        payload = b""
    got = _broadcast(payload).decode()
    host, _, text = got.rpartition(":")
    if not host or not text.isdigit():
        raise HcgError(Status.EPMIX, "rank 0 published no usable store "
                       "address (got %r)" % got)
    if store is None:
        store = tcp_store(host, int(text), task.world_size, False, timeout)
    return store, host, int(text)


def init(backend: Optional[str] = None, timeout: Any = None) -> TaskEnv:
    """Starts torch.distributed's default group for this task and returns
    its :class:`hcg.env.TaskEnv` (recorded, so later hcg.torch calls need no
    arguments). ``backend``: 'nccl' when CUDA is available, else 'gloo'.
    ``timeout``: a timedelta or seconds (default HCG_TIMEOUT, else 300 s),
    used for the store, the default group and every group hcg.torch makes.

    When torch.distributed is already initialized, checks that its rank and
    world size are the layout's and records the layout."""
    d = dist()
    with STATE.lock:
        if not in_task():
            raise HcgError(Status.EENV, "hcg.torch.init: this process has no "
                           "hcg layout (HCG_* variables): start it with srun "
                           "--mpi=pmix --hcg-layout=LAYOUT, or pass the layout "
                           "to GroupFactory/new_collection yourself")
        task = from_environ()
        _check_torchrun_vars(task)
        t = timeout_of(timeout)
        if d.is_initialized():
            if (d.get_rank(), d.get_world_size()) != (task.rank, task.world_size):
                raise HcgError(Status.EMISMATCH, "torch.distributed is already "
                               "initialized as rank %d of %d, but the hcg "
                               "layout says rank %d of %d"
                               % (d.get_rank(), d.get_world_size(), task.rank,
                                  task.world_size))
        else:
            if backend is None:
                import torch  # type: ignore[import]

                backend = "nccl" if torch.cuda.is_available() else "gloo"
            store, host, port = _store(task, t)
            try:
                d.init_process_group(backend, store=store, rank=task.rank,
                                     world_size=task.world_size, timeout=t)
            except RuntimeError as exc:
                raise HcgError(Status.ETIMEOUT, "the default process group "
                               "(%d ranks, store %s:%d) did not form within "
                               "%g s: %s" % (task.world_size, host, port,
                                             t.total_seconds(), exc)) from None
            STATE.store_addr = (host, port)
        STATE.task, STATE.backend, STATE.timeout = task, backend, t
        return task
