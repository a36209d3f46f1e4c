"""The job's store: torch.distributed's key-value store that only the
job's own tasks can use.

torch's TCPStore answers anyone who reaches its port (torch 2.14's even
lists its keys), so hcg.torch does not put the job's keys in one when it
has a private channel for a secret (PMIx). Every rank hosts one of these
stores instead, in a child process (_store_server.py: the protocol, and why
a process), where the groups it leads meet (hcg.torch._places); a task
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
"""

from __future__ import annotations

import atexit
import datetime
import hmac
import os
import random
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from typing import IO, Any, Dict, List, Optional, Sequence, Set, Tuple, Union, cast

from ..errors import HcgError, HcgRuntimeError, HcgTimeoutError, HcgValueError, Status
from . import _places
from . import _store_server as proto
from ._base import STATE, Dist, Store, dist
from ._meet import first_line

#: Seconds a connection may take to prove itself before it is closed.
HANDSHAKE_S = 10.0
#: How much longer than a wait's own deadline a client gives the server
#: to answer before it takes the connection for lost.
_GRACE_S = 30.0
#: The longest wait a request asks for (the server's bound).
_MAX_WAIT_S = proto.MAX_WAIT_MS / 1000.0
#: How long rank 0 waits for its store's process to say its port.
_START_S = 60.0
#: How long a client tries a port where nothing listens before it takes
#: the store for gone.
_REFUSED_S = 10.0
#: A client that the store closes before it is proven (the store was
#: making room: too many connections at once, or no descriptor left) tries
#: again after a pause that starts here and doubles up to _RETRY_MAX_S,
#: with jitter so that a thousand ranks turned away together do not all
#: come back together.
_RETRY_FIRST_S = 0.05
_RETRY_MAX_S = 1.0

Key = Union[str, bytes]
Value = Union[str, bytes, bytearray, Sequence[int]]


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


class _Busy(Exception):
    """The store closed a connection before proving itself to it without
    refusing it: it was making room (see _store_server.SHED_AGE_S); the
    client tries again."""


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
                              "_store_server.py")
        python = sys.executable or "python3"
        # -I -S: the standard library alone, whatever the task's
        # PYTHONPATH holds (and _store_relay.py, read by its path); -B: no
        # __pycache__ written beside an installed hcg. Its standard error
        # is the task's.
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
            _bytes(prefix).hex(), host, port, secret.hex(), rank, int(further), ms))

    def local(self, prefix: str) -> None:
        """Requests on keys under ``prefix`` that members relay here are
        served here after all (the way up failed before it was known, and
        this rank reports why here). Raises as :meth:`relay`."""
        self._command("local %s" % _bytes(prefix).hex())

    def fail(self, prefix: str, reason: str) -> None:
        """Requests on keys under ``prefix`` that members relay here are
        answered with ``reason`` (this rank could not learn where they go).
        Raises as :meth:`relay`."""
        self._command("fail %s %s" % (_bytes(prefix).hex(),
                                      _bytes(reason[:2000]).hex()))

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


def _bytes(value: Any) -> bytes:
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionResetError("the store closed the connection")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _recv_upto(sock: socket.socket, n: int) -> bytes:
    """Up to ``n`` bytes: fewer only when the peer closed first."""
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _where(host: str, port: int, host_rank: int) -> str:
    """A store in messages: its address and the rank that hosts it."""
    return "hcg.torch's store at %s:%d (hosted by rank %d)" % (host, port,
                                                               max(host_rank, 0))


def _connect(host: str, port: int, secret: bytes, timeout_s: float,
             host_rank: int = 0) -> socket.socket:
    """A proven connection to the job's store at HOST:PORT, tried until
    ``timeout_s`` passes (HcgRuntimeError when it cannot be had). A store
    that closes the connection before proving itself without refusing
    this task's proof (it was making room) is tried again, after a pause
    that grows."""
    where = _where(host, port, host_rank)
    start = time.monotonic()
    deadline = start + timeout_s
    refused_since: Optional[float] = None
    pause = _RETRY_FIRST_S
    while True:
        try:
            sock = socket.create_connection(
                (host, port), timeout=max(0.1, min(10.0, deadline - time.monotonic())))
        except OSError as exc:
            now = time.monotonic()
            if isinstance(exc, ConnectionRefusedError):
                # Nothing listens there. The store listens before its
                # address is published, so after a short grace (a caller
                # that learnt the port some other way) it is gone: say so
                # now rather than at the timeout.
                refused_since = refused_since or now
                if now - refused_since >= _REFUSED_S:
                    raise HcgRuntimeError(Status.EIO, "cannot reach %s: connection "
                                          "refused for %g s (rank 0's store is gone)"
                                          % (where, now - refused_since)) from None
            else:
                refused_since = None
            if now >= deadline:
                raise HcgRuntimeError(Status.EIO, "cannot reach %s within %g s: %s"
                                      % (where, timeout_s, exc)) from None
            time.sleep(0.05)
            continue
        refused_since = None
        try:
            return _handshake(sock, secret, where, deadline)
        except _Busy as exc:
            sock.close()
            now = time.monotonic()
            if now >= deadline:
                raise HcgRuntimeError(Status.EIO, "cannot reach %s within %g s: it "
                                      "kept closing the connection before the "
                                      "handshake ended (%s; too many connections at "
                                      "once?)" % (where, timeout_s, exc)) from None
            time.sleep(min(pause * random.uniform(0.5, 1.0), deadline - now))
            pause = min(2 * pause, _RETRY_MAX_S)
        except BaseException:
            sock.close()
            raise


def _handshake(sock: socket.socket, secret: bytes, where: str,
               deadline: float) -> socket.socket:
    """Proves this task to the store on ``sock`` and checks its proof
    (_Busy when the store closed it first without refusing it)."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The greeting may come late: a store taking a burst of ranks in
        # turn leaves the latest in its backlog for a while (they lose
        # their place if they leave).
        sock.settimeout(max(HANDSHAKE_S, deadline - time.monotonic()))
        try:
            hello = _recv_upto(sock, len(proto.HELLO) + proto.NONCE)
        except ConnectionResetError as exc:
            raise _Busy("reset before its greeting: %s" % exc) from None
        if len(hello) < len(proto.HELLO) + proto.NONCE:
            raise _Busy("closed before its greeting")
        if hello[:len(proto.HELLO)] != proto.HELLO:
            raise HcgRuntimeError(Status.EIO, "%s is not one: it did not greet as "
                                  "hcg's store does (another program on that port?)"
                                  % where)
        sock.settimeout(HANDSHAKE_S)
        server_nonce, client_nonce = hello[len(proto.HELLO):], os.urandom(proto.NONCE)
        try:
            sock.sendall(proto.ANSWER + client_nonce +
                         proto.mac(secret, b"client", server_nonce, client_nonce))
            proof = _recv_upto(sock, proto.MAC)
        except (ConnectionResetError, BrokenPipeError) as exc:
            # Closed while the answer was on its way: shed, not refused (a
            # refusal reads the whole answer and closes without a word).
            raise _Busy("reset during the handshake: %s" % exc) from None
        if proof == proto.BUSY:
            raise _Busy("busy")
        if not proof:
            raise HcgRuntimeError(Status.EIO, "%s refused this task: its secret is "
                                  "not this task's (another job's store?)" % where)
        if not hmac.compare_digest(proof, proto.mac(secret, b"server", server_nonce,
                                               client_nonce)):
            raise HcgRuntimeError(Status.EIO, "%s did not prove it is this job's "
                                  "(another program on that port?)" % where)
        sock.settimeout(None)
        return sock
    except (HcgRuntimeError, _Busy):
        raise
    except OSError as exc:
        raise HcgRuntimeError(Status.EIO, "%s: the handshake failed: %s"
                              % (where, exc)) from None


def connect(host: str, port: int, secret: Optional[bytes],
            timeout: datetime.timedelta, world_size: Optional[int] = None,
            host_rank: int = 0) -> Any:
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
                              % (_where(host, port, host_rank),
                                 timeout.total_seconds(), first_line(exc))) from None


def relay_route(route: _places.Route, prefix: str, client: Any,
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


_client_class: Any = None
#: Every client made, for as long as the process lives. torch keeps a store
#: from C++ (a group holds it, NCCL reads it at its first collective), and
#: pybind11 finds a Python subclass's methods only while its Python object
#: lives: one that only C++ still holds answers "Not implemented".
_alive: List[Any] = []
_alive_lock = threading.Lock()


def client(host: str, port: int, secret: bytes,
           timeout: datetime.timedelta, host_rank: int = 0) -> Any:
    """A client of the job's store (a ``torch.distributed.Store``), its
    connection proven. ``timeout`` is the store's: how long get and wait
    wait. Raises HcgRuntimeError (EIO) when the store cannot be reached
    within it, or does not prove it is the job's. The client lives as long
    as the process (see ``_alive``); close() ends its connection."""
    global _client_class
    with _alive_lock:
        if _client_class is None:
            _client_class = _make_client_class(dist())
    made = _client_class(host, port, secret, timeout, host_rank)
    with _alive_lock:
        _alive.append(made)
    return made


def stats(host: str, port: int, secret: bytes, host_rank: int = 0) -> Dict[str, int]:
    """What the job store at HOST:PORT holds and served so far, by name
    (_store_server.Loop._stats; "proven" and "requests" without this
    query's own), for tests, benchmarks and diagnostics of where a job's
    load went. One proven connection of its own; needs no torch."""
    sock = _connect(host, port, secret, 30.0, host_rank)
    try:
        sock.settimeout(30.0)
        sock.sendall(proto.frame(proto.STATS, []))
        (n,) = struct.unpack(">I", _recv_exact(sock, 4))
        status, fields = proto.fields(_recv_exact(sock, n))
    except (OSError, ValueError) as exc:
        raise HcgRuntimeError(Status.EIO, "%s: its statistics: %s"
                              % (_where(host, port, host_rank), exc)) from None
    finally:
        sock.close()
    if status != proto.OK:
        raise HcgRuntimeError(Status.EIO, "%s: no statistics" % _where(host, port, host_rank))
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


def _make_client_class(d: Any) -> Any:
    class JobStore(d.Store):  # type: ignore[misc]
        """A client of the job's store (see hcg.torch.store). One
        connection, one request at a time (thread-safe: a lock). Keys are
        str (UTF-8) or bytes, values bytes (str is taken as UTF-8)."""

        def __init__(self, host: str, port: int, secret: bytes,
                     timeout: datetime.timedelta, host_rank: int = 0) -> None:
            super().__init__()
            self._where = (host, port)
            self._host_rank = host_rank
            self._secret = secret
            self._timeout_s = timeout.total_seconds()
            self._lock = threading.Lock()
            self._relayed: Set[str] = set()  # prefixes this connection relays
            self._sock: Optional[socket.socket] = _connect(host, port, secret,
                                                           self._timeout_s, host_rank)
            setter = getattr(self, "set_timeout", None)
            if setter is not None:
                setter(timeout)

        def __repr__(self) -> str:
            return "<hcg.torch job store client of %s:%d>" % self._where

        def _wait_s(self, timeout: Optional[datetime.timedelta] = None) -> float:
            if timeout is not None:
                return timeout.total_seconds()
            own = getattr(self, "timeout", None)  # set_timeout's, where torch has it
            return own.total_seconds() if isinstance(own, datetime.timedelta) \
                else self._timeout_s

        def _call(self, op: int, fields: Sequence[bytes],
                  wait_s: Optional[float] = None) -> List[bytes]:
            what = _where(self._where[0], self._where[1], self._host_rank)
            request = proto.frame(op, fields)
            if len(request) - 4 > proto.MAX_REQUEST:
                # The store would close the connection on it: say why here.
                raise HcgValueError(Status.ELIMIT, "%s: a request of %d bytes, and the "
                                    "store takes at most %d (its values are addresses "
                                    "and ids, not data)" % (what, len(request) - 4,
                                                            proto.MAX_REQUEST))
            with self._lock:
                sock = self._sock
                if sock is None:
                    raise HcgRuntimeError(Status.EIO, "the connection to %s was lost "
                                          "earlier" % what)
                try:
                    sock.settimeout(min(wait_s or 0.0, _MAX_WAIT_S) + _GRACE_S)
                    sock.sendall(request)
                    (n,) = struct.unpack(">I", _recv_exact(sock, 4))
                    if n == 0 or n > proto.MAX_ANSWER:
                        raise ConnectionResetError("a frame of %d bytes" % n)
                    status, out = proto.fields(_recv_exact(sock, n))
                except (OSError, ValueError) as exc:
                    self._sock = None
                    sock.close()
                    raise HcgRuntimeError(Status.EIO, "lost the connection to %s: %s"
                                          % (what, exc)) from None
            if status == proto.TIMEOUT:
                raise HcgTimeoutError(Status.ETIMEOUT, "%s: timed out after %g s "
                                      "waiting for %s" % (what, wait_s or 0.0,
                                                          _names(fields[1:])))
            if status != proto.OK:
                raise HcgRuntimeError(Status.EIO, "%s: %s" % (
                    what, (out[0] if out else b"error").decode("utf-8", "replace")))
            return out

        def _waiting(self, op: int, keys: Sequence[bytes],
                     timeout: Optional[datetime.timedelta] = None) -> List[bytes]:
            wait_s = max(0.0, self._wait_s(timeout))
            # The server clamps a longer wait to a year too (a socket
            # timeout cannot be a timedelta.max either).
            ms = min(int(wait_s * 1000), proto.MAX_WAIT_MS)
            return self._call(op, [b"%d" % ms] + list(keys), wait_s)

        def set(self, key: Key, value: Value) -> None:
            self._call(proto.SET, [_bytes(key), _bytes(value)])

        def get(self, key: Key) -> bytes:
            return self._waiting(proto.GET, [_bytes(key)])[0]

        def add(self, key: Key, amount: int) -> int:
            return int(self._call(proto.ADD, [_bytes(key), b"%d" % int(amount)])[0])

        def add_many(self, adds: Sequence[Tuple[Key, int]]) -> List[int]:
            """Adds each amount to its key, in order, in one request (a key
            twice is added to twice); returns each key's new value. A key
            whose value is no number raises HcgRuntimeError (EIO), the
            others' adds made."""
            fields: List[bytes] = []
            for key, amount in adds:
                fields += [_bytes(key), b"%d" % int(amount)]
            out = self._call(proto.MADD, fields)
            for (key, _), value in zip(adds, out):
                if not value:
                    raise HcgRuntimeError(Status.EIO, "%s: the value of key '%s' is not "
                                          "a number" % (_where(self._where[0], self._where[1],
                                                               self._host_rank),
                                                        _bytes(key).decode("utf-8", "replace")[:200]))
            return [int(v) for v in out]

        def check(self, keys: Sequence[Key]) -> bool:
            return self._call(proto.CHECK, [_bytes(k) for k in keys])[0] == b"1"

        def wait(self, keys: Sequence[Key],
                 timeout: Optional[datetime.timedelta] = None) -> None:
            self._waiting(proto.WAIT, [_bytes(k) for k in keys], timeout)

        def compare_set(self, key: Key, expected: Value, desired: Value) -> bytes:
            return self._call(proto.CAS, [_bytes(key), _bytes(expected), _bytes(desired)])[0]

        def delete_key(self, key: Key) -> bool:
            return self._call(proto.DELETE, [_bytes(key)])[0] == b"1"

        def num_keys(self) -> int:
            return int(self._call(proto.NUM, [])[0])

        def append(self, key: Key, value: Value) -> None:
            self._call(proto.APPEND, [_bytes(key), _bytes(value)])

        def multi_get(self, keys: Sequence[Key]) -> List[bytes]:
            return self._waiting(proto.MGET, [_bytes(k) for k in keys])

        def relay(self, prefix: str,
                  timeout: Optional[datetime.timedelta] = None) -> None:
            """Tells the store this client reaches that requests on keys
            under ``prefix`` are relayed from it, to the store its own rank
            (the one this client was made for) names (Server.relay); until
            it does, they wait there, ``timeout`` at most (default: the
            client's). No address and no secret in it (_store_relay.py).
            Idempotent; told once per connection."""
            if prefix in self._relayed:
                return
            ms = min(int(max(0.0, self._wait_s(timeout)) * 1000), proto.MAX_WAIT_MS)
            self._call(proto.RELAY, [_bytes(prefix), b"%d" % ms,
                                     b"%d" % max(self._host_rank, 0)])
            self._relayed.add(prefix)

        def multi_set(self, keys: Sequence[Key], values: Sequence[Value]) -> None:
            if len(keys) != len(values):
                raise ValueError("multi_set: %d keys but %d values"
                                 % (len(keys), len(values)))
            pairs: List[bytes] = []
            for k, v in zip(keys, values):
                pairs += [_bytes(k), _bytes(v)]
            self._call(proto.MSET, pairs)

        def has_extended_api(self) -> bool:
            return True

        def clone(self) -> "JobStore":
            return cast("JobStore", client(self._where[0], self._where[1], self._secret,
                                           datetime.timedelta(seconds=self._wait_s()),
                                           self._host_rank))

        def close(self) -> None:
            """Closes the connection (later calls raise HcgRuntimeError)."""
            with self._lock:
                if self._sock is not None:
                    self._sock.close()
                    self._sock = None

        def __del__(self) -> None:
            sock = getattr(self, "_sock", None)
            if sock is not None:
                sock.close()

    return JobStore


def _names(keys: Sequence[bytes]) -> str:
    shown = ", ".join("'%s'" % k.decode("utf-8", "replace")[:120] for k in keys[:4])
    more = " and %d more" % (len(keys) - 4) if len(keys) > 4 else ""
    return "key%s %s%s" % ("s" if len(keys) > 1 else "", shown, more)
