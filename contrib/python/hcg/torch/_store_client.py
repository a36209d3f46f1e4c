"""The client of a job store (hcg.torch.store): a ``torch.distributed.Store``
whose requests go over one proven connection (_store_dial.py) in
_store_proto.py's frames.

Its class derives from torch's Store, so importing this module imports
torch: hcg.torch.store imports it when the first client is made, never
at its own import (``import hcg.torch`` must work without torch).
"""

from __future__ import annotations

import datetime
import socket
import threading
from typing import List, Optional, Sequence, Set, Tuple, Union

from ..errors import HcgRuntimeError, HcgTimeoutError, HcgValueError, Status
from . import _store_proto as proto
from ._base import dist
from ._store_dial import dial, recv_answer, where

#: How much longer than a wait's own deadline a client gives the server
#: to answer before it takes the connection for lost.
_GRACE_S = 30.0
#: The longest wait a request asks for (the server's bound).
_MAX_WAIT_S = proto.MAX_WAIT_MS / 1000.0

Key = Union[str, bytes]
Value = Union[str, bytes, bytearray, Sequence[int]]


# torch's Store is Any to mypy (pyproject.toml: torch is not followed),
# hence the ignore; dist() raises TorchUnavailableError without torch.
class JobStore(dist().Store):  # type: ignore[misc]
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
        self._sock: Optional[socket.socket] = dial(host, port, secret,
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
        what = where(self._where[0], self._where[1], self._host_rank)
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
                status, out = recv_answer(sock)
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
        self._call(proto.SET, [proto.encode(key), proto.encode(value)])

    def get(self, key: Key) -> bytes:
        return self._waiting(proto.GET, [proto.encode(key)])[0]

    def add(self, key: Key, amount: int) -> int:
        return int(self._call(proto.ADD, [proto.encode(key), b"%d" % int(amount)])[0])

    def add_many(self, adds: Sequence[Tuple[Key, int]]) -> List[int]:
        """Adds each amount to its key, in order, in one request (a key
        twice is added to twice); returns each key's new value. A key
        whose value is no number raises HcgRuntimeError (EIO), the
        others' adds made."""
        fields: List[bytes] = []
        for key, amount in adds:
            fields += [proto.encode(key), b"%d" % int(amount)]
        out = self._call(proto.MADD, fields)
        for (key, _), value in zip(adds, out):
            if not value:
                name = proto.encode(key).decode("utf-8", "replace")[:200]
                raise HcgRuntimeError(Status.EIO, "%s: the value of key '%s' is not "
                                      "a number" % (where(self._where[0], self._where[1],
                                                          self._host_rank), name))
        return [int(v) for v in out]

    def check(self, keys: Sequence[Key]) -> bool:
        return self._call(proto.CHECK, [proto.encode(k) for k in keys])[0] == b"1"

    def wait(self, keys: Sequence[Key],
             timeout: Optional[datetime.timedelta] = None) -> None:
        self._waiting(proto.WAIT, [proto.encode(k) for k in keys], timeout)

    def compare_set(self, key: Key, expected: Value, desired: Value) -> bytes:
        return self._call(proto.CAS, [proto.encode(key), proto.encode(expected),
                                      proto.encode(desired)])[0]

    def delete_key(self, key: Key) -> bool:
        return self._call(proto.DELETE, [proto.encode(key)])[0] == b"1"

    def num_keys(self) -> int:
        return int(self._call(proto.NUM, [])[0])

    def append(self, key: Key, value: Value) -> None:
        self._call(proto.APPEND, [proto.encode(key), proto.encode(value)])

    def multi_get(self, keys: Sequence[Key]) -> List[bytes]:
        return self._waiting(proto.MGET, [proto.encode(k) for k in keys])

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
        self._call(proto.RELAY, [proto.encode(prefix), b"%d" % ms,
                                 b"%d" % max(self._host_rank, 0)])
        self._relayed.add(prefix)

    def multi_set(self, keys: Sequence[Key], values: Sequence[Value]) -> None:
        if len(keys) != len(values):
            raise ValueError("multi_set: %d keys but %d values"
                             % (len(keys), len(values)))
        pairs: List[bytes] = []
        for k, v in zip(keys, values):
            pairs += [proto.encode(k), proto.encode(v)]
        self._call(proto.MSET, pairs)

    def has_extended_api(self) -> bool:
        return True

    def clone(self) -> "JobStore":
        return client(self._where[0], self._where[1], self._secret,
                      datetime.timedelta(seconds=self._wait_s()), self._host_rank)

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


#: Every client made, for as long as the process lives. torch keeps a store
#: from C++ (a group holds it, NCCL reads it at its first collective), and
#: pybind11 finds a Python subclass's methods only while its Python object
#: lives: one that only C++ still holds answers "Not implemented".
_alive: List[JobStore] = []
_alive_lock = threading.Lock()


def client(host: str, port: int, secret: bytes,
           timeout: datetime.timedelta, host_rank: int = 0) -> JobStore:
    """A client of the job's store (a ``torch.distributed.Store``), its
    connection proven. ``timeout`` is the store's: how long get and wait
    wait. Raises HcgRuntimeError (EIO) when the store cannot be reached
    within it, or does not prove it is the job's. The client lives as long
    as the process (see ``_alive``); close() ends its connection."""
    made = JobStore(host, port, secret, timeout, host_rank)
    with _alive_lock:
        _alive.append(made)
    return made


def _names(keys: Sequence[bytes]) -> str:
    shown = ", ".join("'%s'" % k.decode("utf-8", "replace")[:120] for k in keys[:4])
    more = " and %d more" % (len(keys) - 4) if len(keys) > 4 else ""
    return "key%s %s%s" % ("s" if len(keys) > 1 else "", shown, more)
