"""Where a group's members meet: the store of the group's first member.

Under ``srun --mpi=pmix``, every rank opens a job store of its own in
init() (hcg.torch.store: its own port and 128-bit secret) and publishes
where it is, ``SECRET HOST:PORT``, with libhcg's ``hcg_ctx_publish``: one
PMIx fence that carries no data. A group meets at its first member's store
(the default group at rank 0's), and a member reads that address with one
PMIx get (``hcg_ctx_fetch``), once per hosting rank. So a rank's store
serves the groups it leads and no others, and no process answers for the
whole job; rank 0 is nobody special once init() returns (doc/scaling.md).
A rank that could not open its store publishes its failure instead,
``!hcg-failed CODE MESSAGE``: the members of its groups raise a
:class:`hcg.PeerError` naming it at once.

Without PMIx (MASTER_ADDR and MASTER_PORT, torch's TCPStore) or with a
store the caller made, every group meets at that one store
(:class:`OneStore`): the small-job path.
"""

from __future__ import annotations

import threading
from typing import Callable, Dict, NamedTuple, Optional, Sequence, Union

from ..errors import HcgRuntimeError, PeerError, Status, status_name

#: What starts a rank's failure in its publication, followed by "CODE
#: MESSAGE" (a secret, in hex, never starts with it).
FAILED = "!hcg-failed "
#: Bytes a rank publishes: "SECRET HOST:PORT" (32 + 1 + 253 + 6), or its
#: failure, cut to fit (libhcg's HCG_PUBLISH_MAX is 4096).
PUBLISH_BYTES = 2048
#: Bytes of the secret.
SECRET_BYTES = 16


class Place(NamedTuple):
    """One store: its address, its secret (None for a TCPStore) and the
    rank that hosts it (-1: the job's one store)."""

    host: str
    port: int
    secret: Optional[bytes]
    rank: int

    @property
    def address(self) -> str:
        return "%s:%d" % (self.host, self.port)


def encode(secret: bytes, host: str, port: int) -> bytes:
    """What a rank publishes when its store is open."""
    return ("%s %s:%d" % (secret.hex(), host, port)).encode()


def encode_failure(code: int, message: str) -> bytes:
    """What a rank publishes when it could not open its store, or failed
    before: its status and message (cut to fit)."""
    text = ("%s%d %s" % (FAILED, code, message)).encode("utf-8", "replace")
    return text[:PUBLISH_BYTES - 1]


def decode(payload: bytes, rank: int, what: str) -> Place:
    """The store rank ``rank`` published. Raises a PeerError naming it when
    it published its failure, HcgRuntimeError (EPMIX) when the bytes are
    not an address (never quoting them: they may hold the secret).
    ``what`` says why it was read ("the default process group", a group)."""
    text = payload.rstrip(b"\0").decode("utf-8", "replace")
    if text.startswith(FAILED):
        code, _, reason = text[len(FAILED):].partition(" ")
        code_n = int(code) if code.isdigit() else int(Status.EIO)
        raise PeerError(code_n, "%s: rank %d failed before it published the address "
                        "of its store: %s: %s" % (what, rank, status_name(code_n),
                                                  reason), rank, reason)
    hex_secret, _, address = text.partition(" ")
    host, _, port = address.rpartition(":")
    try:
        secret = bytes.fromhex(hex_secret)
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES or not host or not port.isdigit() or \
            not 0 < int(port) < 65536:
        raise HcgRuntimeError(Status.EPMIX, "%s: rank %d published no usable store "
                              "address (%d bytes that are not SECRET HOST:PORT)"
                              % (what, rank, len(text)))
    return Place(host, int(port), secret, rank)


class Places:
    """The stores of the job's ranks, each read once, when a group first
    needs it (thread-safe). ``fetch(rank)`` returns what that rank
    published (libhcg's hcg_ctx_fetch; a test may read them elsewhere)."""

    def __init__(self, fetch: Callable[[int], bytes],
                 close: Optional[Callable[[], None]] = None) -> None:
        self._fetch = fetch
        self._close = close
        self._known: Dict[int, Place] = {}
        self._failed: Dict[int, BaseException] = {}
        self._lock = threading.Lock()

    def of(self, members: Sequence[int], what: str) -> Place:
        """Where the group of ``members`` meets: its first member's store."""
        return self.rank(members[0], what)

    def rank(self, rank: int, what: str) -> Place:
        """Rank ``rank``'s store. Raises as :func:`decode`, or what the
        fetch raised (the same again for every later group it hosts)."""
        with self._lock:
            if rank in self._known:
                return self._known[rank]
            if rank in self._failed:
                raise self._failed[rank]
            try:
                place = decode(self._fetch(rank), rank, what)
            except PeerError as exc:
                self._failed[rank] = exc
                raise
            self._known[rank] = place
            return place

    def close(self) -> None:
        """Frees what the fetches need (the libhcg context). Idempotent."""
        close, self._close = self._close, None
        if close is not None:
            close()


class OneStore:
    """Every group at one store: the job's (MASTER_ADDR and MASTER_PORT,
    or a test's)."""

    def __init__(self, place: Place) -> None:
        self.place = place

    def of(self, members: Sequence[int], what: str) -> Place:  # pylint: disable=unused-argument
        return self.place

    def rank(self, rank: int, what: str) -> Place:  # pylint: disable=unused-argument
        return self.place

    def close(self) -> None:
        pass


#: Where a process's groups meet.
Where = Union[Places, OneStore]
