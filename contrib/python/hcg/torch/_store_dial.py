"""A proven connection to a job store (hcg.torch.store): the client's side
of _store_proto.py's handshake, tried until a deadline, with what a client
must tell apart on the way: a store gone (nothing listens), a store making
room (BUSY: try again) and a port that is not the job's store. Needs no
torch: the client (_store_client.py), stats() and the tests use it.
"""

from __future__ import annotations

import hmac
import os
import random
import socket
import struct
import time
from typing import List, Optional, Tuple

from ..errors import HcgRuntimeError, Status
from . import _store_proto as proto

#: Seconds a connection may take to prove itself before it is closed.
HANDSHAKE_S = 10.0
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


class Busy(Exception):
    """The store closed a connection before proving itself to it without
    refusing it: it was making room (see _store_server.SHED_AGE_S); the
    client tries again."""


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Exactly ``n`` bytes (ConnectionResetError when the peer closed first)."""
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            raise ConnectionResetError("the store closed the connection")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def recv_answer(sock: socket.socket) -> Tuple[int, List[bytes]]:
    """One answer of the store: its status and fields. ConnectionResetError
    for a length no answer has (0, or over MAX_ANSWER) or a peer that
    closed; ValueError for a body that is no answer (proto.fields)."""
    (n,) = struct.unpack(">I", recv_exact(sock, 4))
    if n == 0 or n > proto.MAX_ANSWER:
        raise ConnectionResetError("a frame of %d bytes" % n)
    return proto.fields(recv_exact(sock, n))


def recv_upto(sock: socket.socket, n: int) -> bytes:
    """Up to ``n`` bytes: fewer only when the peer closed first."""
    parts, got = [], 0
    while got < n:
        chunk = sock.recv(n - got)
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def where(host: str, port: int, host_rank: int) -> str:
    """A store in messages: its address and the rank that hosts it."""
    return "hcg.torch's store at %s:%d (hosted by rank %d)" % (host, port,
                                                               max(host_rank, 0))


def dial(host: str, port: int, secret: bytes, timeout_s: float,
         host_rank: int = 0) -> socket.socket:
    """A proven connection to the job's store at HOST:PORT, tried until
    ``timeout_s`` passes (HcgRuntimeError when it cannot be had). A store
    that closes the connection before proving itself without refusing
    this task's proof (it was making room) is tried again, after a pause
    that grows."""
    what = where(host, port, host_rank)
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
                                          "refused for %g s (the store is gone)"
                                          % (what, now - refused_since)) from None
            else:
                refused_since = None
            if now >= deadline:
                raise HcgRuntimeError(Status.EIO, "cannot reach %s within %g s: %s"
                                      % (what, timeout_s, exc)) from None
            time.sleep(0.05)
            continue
        refused_since = None
        try:
            return _handshake(sock, secret, what, deadline)
        except Busy as exc:
            sock.close()
            now = time.monotonic()
            if now >= deadline:
                raise HcgRuntimeError(Status.EIO, "cannot reach %s within %g s: it "
                                      "kept closing the connection before the "
                                      "handshake ended (%s; too many connections at "
                                      "once?)" % (what, timeout_s, exc)) from None
            time.sleep(min(pause * random.uniform(0.5, 1.0), deadline - now))
            pause = min(2 * pause, _RETRY_MAX_S)
        except BaseException:
            sock.close()
            raise


def _handshake(sock: socket.socket, secret: bytes, what: str,
               deadline: float) -> socket.socket:
    """Proves this task to the store on ``sock`` and checks its proof
    (Busy when the store closed it first without refusing it)."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # The greeting may come late: a store taking a burst of ranks in
        # turn leaves the latest in its backlog for a while (they lose
        # their place if they leave).
        sock.settimeout(max(HANDSHAKE_S, deadline - time.monotonic()))
        try:
            hello = recv_upto(sock, len(proto.HELLO) + proto.NONCE)
        except ConnectionResetError as exc:
            raise Busy("reset before its greeting: %s" % exc) from None
        if len(hello) < len(proto.HELLO) + proto.NONCE:
            raise Busy("closed before its greeting")
        if hello[:len(proto.HELLO)] != proto.HELLO:
            raise HcgRuntimeError(Status.EIO, "%s is not one: it did not greet as "
                                  "hcg's store does (another program on that port?)"
                                  % what)
        sock.settimeout(HANDSHAKE_S)
        server_nonce, client_nonce = hello[len(proto.HELLO):], os.urandom(proto.NONCE)
        try:
            sock.sendall(proto.ANSWER + client_nonce +
                         proto.mac(secret, b"client", server_nonce, client_nonce))
            proof = recv_upto(sock, proto.MAC)
        except (ConnectionResetError, BrokenPipeError) as exc:
            # Closed while the answer was on its way: shed, not refused (a
            # refusal reads the whole answer and closes without a word).
            raise Busy("reset during the handshake: %s" % exc) from None
        if proof == proto.BUSY:
            raise Busy("busy")
        if not proof:
            raise HcgRuntimeError(Status.EIO, "%s refused this task: its secret is "
                                  "not this task's (another job's store?)" % what)
        if not hmac.compare_digest(proof, proto.mac(secret, b"server", server_nonce,
                                                    client_nonce)):
            raise HcgRuntimeError(Status.EIO, "%s did not prove it is this job's "
                                  "(another program on that port?)" % what)
        sock.settimeout(None)
        return sock
    except (HcgRuntimeError, Busy):
        raise
    except OSError as exc:
        raise HcgRuntimeError(Status.EIO, "%s: the handshake failed: %s"
                              % (what, exc)) from None

