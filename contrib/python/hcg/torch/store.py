"""The job's store: torch.distributed's key-value store that only the
job's own tasks can use.

torch's TCPStore answers anyone who reaches its port (torch 2.14's even
lists its keys), so hcg.torch does not put the job's keys in one when it
has a private channel for a secret (PMIx). Every rank hosts one of these
stores instead, in a child process (_store_server.py: why a process),
where the groups it leads meet (hcg.torch._places); a task
reaches one over TCP, as a TCPStore, but each connection first proves, by
HMAC-SHA256 challenge and answer, that it knows the store's secret (128
random bits that reached the tasks through PMIx, never the network), and
the server proves it back. A connection
that cannot is closed before it can name, read or write a key; a client
that reaches a server which cannot (the port taken by someone else) says
so. What passes afterwards is not encrypted: the store holds addresses,
counters and failures, never the secret.

A client is a ``torch.distributed.Store``: torch's PrefixStore, gloo and
NCCL use it as they use a TCPStore. A wait (get, wait, multi_get) is held
by the server until its keys exist or its deadline passes, and answered
either way; a client whose server is gone (its rank died) learns it at once
from its socket, not at its timeout.

Where MASTER_ADDR and MASTER_PORT name the store, it is torch's TCPStore,
opened by :func:`tcp_store` (also ``hcg.torch.tcp_store``) on every torch.

This module is the store's face to the rest of hcg.torch; the parts, each
with one job, are:

    _store_proto.py   the wire protocol: constants, frames, handshake, start line
    _store_dial.py    a proven connection, the client's side of the handshake
    _store_client.py  the client, a torch Store (imports torch, so imported late)
    _store_main.py    the store process's entry point
    _store_server.py  the server's loop, in that process
    _store_conn.py    what the server holds per connection and parked wait
    _store_relay.py   the server's relays up a large group's route
"""

from __future__ import annotations

import atexit
import datetime
import os
import select
import subprocess
import sys
import threading
from typing import IO, TYPE_CHECKING, Any, Dict, Optional, Tuple, cast

from ..errors import HcgError, HcgRuntimeError, HcgValueError, Status
from . import _places
from . import _store_proto as proto
from ._base import STATE, Dist, Store, dist
from ._meet import first_line
from ._store_dial import HANDSHAKE_S, dial, recv_answer, where

if TYPE_CHECKING:  # at run time only once a client is made: it imports torch
    from ._store_client import JobStore

#: How long a rank waits for its store's process to say its port.
_START_S = 60.0


class StoreStartError(HcgError, OSError):
    """The store's process did not start, or ended before it listened.

    An :class:`hcg.HcgError` with status EIO, and the OSError it was before
    (an ``except OSError`` still catches it).

    Args:
        message: what failed.
        errno: the failed system call's error number, None when the
            process itself ended.
    """

    def __init__(self, message: str, errno: Optional[int] = None) -> None:
        super().__init__(Status.EIO, message)
        # OSError's own __init__ took the hcg status for an error number:
        # an OSError handler reading errno gets the system's, or None (which
        # some typeshed versions do not allow for, hence Any).
        cast(Any, self).errno = errno


_store_lock = threading.Lock()
#: Keyword arguments every TCPStore hcg opens gets (see _store_kwargs).
_store_kw: Optional[Dict[str, Any]] = None


def _store_kwargs(d: Dist) -> Dict[str, Any]:
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


def _opens(d: Dist, kwargs: Dict[str, Any]) -> bool:
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
              wait_for_workers: bool = True) -> Store:
    """A ``torch.distributed.TCPStore`` that opens on this torch whether or
    not it was built with libuv (public as ``hcg.torch.tcp_store``).

    Args:
        host, port, world_size, is_master, timeout, wait_for_workers: as
            TCPStore's: a server when ``is_master``, else a client of
            HOST:PORT.

    Returns:
        The TCPStore.

    Raises:
        TorchUnavailableError: no usable torch.distributed.
        RuntimeError: torch's own errors (a port in use, a server that
            never answers), as they come; callers turn them into
            :class:`hcg.HcgError` with what they were doing.
    """
    d = dist()
    return d.TCPStore(host, port, world_size, is_master, timeout,
                      wait_for_workers=wait_for_workers, **_store_kwargs(d))


def check_host(host: str) -> None:
    """Raises HcgValueError naming ``host`` unless it is one IP address or
    host name (no space, no control character, at most 253 characters):
    it is written into the store process's start line, and checked there
    again."""
    if not isinstance(host, str) or not proto.valid_host(host):
        raise HcgValueError(Status.EINVAL, "hcg.torch's store cannot listen on %r: "
                            "not one IP address or host name (MASTER_ADDR, when set "
                            "alone, is that address)" % (host,))


class Server:
    """The job store's server, a child process of this one listening on
    ``host`` at ``port`` (default: a free one; :attr:`port` says which).
    It ends when :meth:`close` is called or this process ends (it watches
    a pipe from this one, and this process itself: a child this one forks
    keeps the pipe open, not the server). The secret reaches it through
    that pipe, never its environment or command line. ``handshake_s``: how
    long a connection may take to prove itself; ``max_stored``: how many
    bytes of keys and values the store holds at most (see
    _store_server.MAX_STORED).

    Raises:
        HcgValueError: ``host`` is not one IP address or host name, or the
            secret is not 16 bytes.
        StoreStartError: the process did not start or ended early (its
            standard error, the caller's, says why); an HcgError (EIO) and
            an OSError.
        OSError: it cannot listen there (the reason in the message).
    """

    def __init__(self, host: str, secret: bytes, port: int = 0,
                 handshake_s: float = HANDSHAKE_S,
                 max_stored: int = proto.MAX_STORED) -> None:
        check_host(host)
        if len(secret) != proto.SECRET_BYTES:
            raise HcgValueError(Status.EINVAL, "the job store's secret has %d bytes, "
                                "not %d" % (len(secret), proto.SECRET_BYTES))
        try:
            line = proto.start_line(host, port, handshake_s, max_stored, os.getpid(),
                                    secret)
        except ValueError as exc:
            raise HcgValueError(Status.EINVAL, "hcg.torch's store on %s port %d: %s"
                                % (host, port, exc)) from None
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                              "_store_main.py")
        python = sys.executable or "python3"
        # -I -S: the standard library alone, whatever the task's
        # PYTHONPATH holds (the server's modules are found by their
        # directory: _store_main.py); -B: no __pycache__ written beside an
        # installed hcg. Its standard error is the task's.
        try:
            self._proc = subprocess.Popen([python, "-I", "-S", "-B", script],
                                          stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, close_fds=True)
        except OSError as exc:
            raise StoreStartError("cannot run %s: %s" % (python, exc),
                                  exc.errno) from None
        pipe = cast(IO[bytes], self._proc.stdin)
        try:
            pipe.write(line)
            pipe.flush()
            answer = self._answer()
        except OSError as exc:
            self.close()
            raise StoreStartError("its process: %s" % exc, exc.errno) from None
        if not answer.isdigit():
            self.close()
            if answer.startswith("ERROR "):
                raise OSError(answer[len("ERROR "):])
            raise StoreStartError("its process (%s %s) ended before it listened"
                                  % (python, script))
        self.port = int(answer)
        self._pipe_lock = threading.Lock()  # a command is one whole line
        # At exit, end it as close() does (it would end anyway once this
        # process is gone; this way nothing is left running or unreaped).
        atexit.register(self.close)

    def _answer(self) -> str:
        """The process's one line (it writes it whole, at once), or "" when
        it ended first."""
        out = cast(IO[bytes], self._proc.stdout)
        if not select.select([out], [], [], _START_S)[0]:
            raise OSError("the store's process did not listen within %g s" % _START_S)
        line = out.readline()
        out.close()
        return line.decode("utf-8", "replace").strip()

    def __repr__(self) -> str:
        return "<hcg.torch job store server, process %d>" % self._proc.pid

    def relay(self, prefix: str, host: str, port: int, secret: bytes, rank: int,
              further: bool, timeout: datetime.timedelta) -> None:
        """From now on this store forwards every request on keys under
        ``prefix`` to the store of rank ``rank`` at HOST:PORT, proving its
        links with that store's ``secret``, which this process read through
        PMIx: it reaches the store's process through their pipe, never the
        network (_store_relay.py). ``further``: that store relays them on
        too (its own rank says where; a link tells it to wait ``timeout``
        for that). Idempotent for the same store.

        Raises:
            HcgValueError: a prefix that does not end with '/', an address
                or secret that is not one.
            HcgRuntimeError: the store's process is gone.
        """
        check_host(host)
        if not prefix.endswith("/") or len(secret) != proto.SECRET_BYTES or \
                not 0 < port < 65536 or rank < 0:
            raise HcgValueError(Status.EINVAL, "hcg.torch's store cannot relay '%s' to "
                                "rank %d's store at %s:%d: not a prefix ending with '/', "
                                "a port and a secret of %d bytes"
                                % (prefix, rank, host, port, proto.SECRET_BYTES))
        ms = min(int(max(0.0, timeout.total_seconds()) * 1000), proto.MAX_WAIT_MS)
        self._command("relay %s %s %d %s %d %d %d" % (
            proto.encode(prefix).hex(), host, port, secret.hex(), rank, int(further), ms))

    def local(self, prefix: str) -> None:
        """Requests on keys under ``prefix`` that members relay here are
        served here after all (the way up failed before it was known, and
        this rank reports why here). Raises as :meth:`relay`."""
        self._command("local %s" % proto.encode(prefix).hex())

    def fail(self, prefix: str, reason: str) -> None:
        """Requests on keys under ``prefix`` that members relay here are
        answered with ``reason`` (this rank could not learn where they go).
        Raises as :meth:`relay`."""
        self._command("fail %s %s" % (proto.encode(prefix).hex(),
                                      proto.encode(reason[:2000]).hex()))

    def _command(self, line: str) -> None:
        """Writes one command line to the store's process (its pipe)."""
        pipe = self._proc.stdin
        try:
            with self._pipe_lock:
                if pipe is None or pipe.closed:
                    raise BrokenPipeError("the store was closed")
                pipe.write(line.encode("ascii") + b"\n")
                pipe.flush()
        except (OSError, ValueError) as exc:
            raise HcgRuntimeError(Status.EIO, "hcg.torch's store (process %d) cannot "
                                  "be told where its relayed keys go: %s"
                                  % (self._proc.pid, exc)) from None

    @property
    def pid(self) -> int:
        """The server process's id."""
        return self._proc.pid

    def close(self) -> None:
        """Stops the server (its process ends; idempotent)."""
        atexit.unregister(self.close)
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()


def connect(host: str, port: int, secret: Optional[bytes],
            timeout: datetime.timedelta, world_size: Optional[int] = None,
            host_rank: int = 0) -> Store:
    """A new client of the job store at HOST:PORT: hcg's (:func:`client`)
    when init() got the ``secret`` through PMIx, else a TCPStore (the
    store MASTER_ADDR and MASTER_PORT name, ``world_size`` as TCPStore's).
    Raises HcgRuntimeError (EIO) naming the store and the rank that hosts
    it (``host_rank``; -1: rank 0, the job's one store) when it cannot be
    reached within ``timeout``."""
    try:
        if secret is not None:
            return client(host, port, secret, timeout, host_rank)
        return tcp_store(host, port, world_size, False, timeout)
    except HcgError:
        raise
    except Exception as exc:  # pylint: disable=broad-except
        raise HcgRuntimeError(Status.EIO, "cannot reach %s within %g s: %s"
                              % (where(host, port, host_rank),
                                 timeout.total_seconds(), first_line(exc))) from None


def relay_route(route: _places.Route, prefix: str, client: "JobStore",
                timeout: datetime.timedelta) -> None:
    """Makes the keys under ``prefix`` reach the group leader's store along
    ``route`` (hcg.torch._places): where this rank heads a slice, its own
    store is told where they go next, through its pipe; then the store
    ``client`` reaches is told they are relayed (Server.relay,
    JobStore.relay). Nothing to do for a route of one store.

    Raises:
        hcg.PeerError: this rank heads a slice and the next store up has
            no place (its rank failed before it published); this rank's
            store answers the slice with that reason.
        hcg.HcgRuntimeError: this rank heads a slice but has no store of
            its own, or its store or ``client``'s is gone.
    """
    if not route.relayed:
        return
    if route.next is not None or route.failed is not None:
        server = STATE.store_server
        if server is None:
            raise HcgRuntimeError(Status.EIO, "rank %d heads a slice of a group met "
                                  "through relays but has no hcg.torch store of its "
                                  "own (hcg.torch.init opens one)" % route.first.rank)
        if route.failed is not None:
            server.fail(prefix, "rank %d, which heads this slice, cannot reach the "
                        "next store up its route: %s"
                        % (route.first.rank, route.failed.message))
            raise route.failed
        up = route.next
        assert up is not None and up.secret is not None
        server.relay(prefix, up.host, up.port, up.secret, up.rank, route.further,
                     timeout)
    client.relay(prefix, timeout)



def client(host: str, port: int, secret: bytes,
           timeout: datetime.timedelta, host_rank: int = 0) -> "JobStore":
    """A client of the job's store (a ``torch.distributed.Store``), its
    connection proven. ``timeout`` is the store's: how long get and wait
    wait. Raises HcgRuntimeError (EIO) when the store cannot be reached
    within it, or does not prove it is the job's. The client lives as long
    as the process (_store_client._alive); close() ends its connection."""
    from . import _store_client  # torch's: imported when first needed

    return _store_client.client(host, port, secret, timeout, host_rank)


def stats(host: str, port: int, secret: bytes, host_rank: int = 0) -> Dict[str, int]:
    """What the job store at HOST:PORT holds and served so far, by name
    (_store_server.Loop._stats; "proven" and "requests" without this
    query's own), for tests, benchmarks and diagnostics of where a job's
    load went. One proven connection of its own; needs no torch."""
    sock = dial(host, port, secret, 30.0, host_rank)
    try:
        sock.settimeout(30.0)
        sock.sendall(proto.frame(proto.STATS, []))
        status, fields = recv_answer(sock)
    except (OSError, ValueError) as exc:
        raise HcgRuntimeError(Status.EIO, "%s: its statistics: %s"
                              % (where(host, port, host_rank), exc)) from None
    finally:
        sock.close()
    if status != proto.OK:
        raise HcgRuntimeError(Status.EIO, "%s: no statistics" % where(host, port, host_rank))
    out = {k: int(v) for k, v in (f.decode().split("=", 1) for f in fields)}
    out["proven"] -= 1
    out["requests"] -= 1
    return out


def served(host: str, port: int, secret: bytes, host_rank: int = 0) -> Tuple[int, int]:
    """What the job store at HOST:PORT served so far: the connections it
    proved and the requests it handled, this query's own not counted (see
    :func:`stats`)."""
    out = stats(host, port, secret, host_rank)
    return out["proven"], out["requests"]
