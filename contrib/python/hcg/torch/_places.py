"""Where a group's members meet: the store of the group's first member,
through the stores of its slices' heads when it has more members than one
store should serve.

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

A group whose members would hold more than its share of F connections
to one store (F: libhcg's fan-in, ``HCG_FANIN``, default 512; a group's
share F / GROUP_SHARE; a member holds up to MEMBER_CLIENTS) meets in
slices, as libhcg's exchange does: a member connects to its slice's
head's store, which forwards the group's keys to the leader's
(hcg.torch._store_relay), the heads themselves in slices again where
there are more of them than a slice. How large a slice is, is this
module's (:func:`group_slice`: what a store serves); who heads whose, at
every level, is libhcg's one arithmetic of slices (``hcg_slice_*``,
doc/architecture.md), which :func:`depth`, :func:`path` and
:func:`subtree` call. So no store serves more than
a group's share of F for it, its slice's connections and the links of
the heads below it; the leader's holds the group's keys alone, and every
member reads and writes the same ones.

The publications are read the same way (:func:`reads`): a member reads
only the store it connects to, its slice's head's, and a head also the
next one up its route, which its own store forwards to (the head hands
that store's address and secret to its store's process through their
pipe: no secret on the network). So a publication is read by its slice
and the heads below it, at most a slice and a slice of heads per group
its rank leads or heads a slice of, never by the whole job: not even rank
0's (`make bench-scale` counts the busiest one).

Without PMIx (MASTER_ADDR and MASTER_PORT, torch's TCPStore) or with a
store the caller made, every group meets at that one store
(:class:`OneStore`): the small-job path.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Callable, Dict, List, NamedTuple, Optional, Sequence, Union

from .. import _lib
from ..errors import HcgRuntimeError, HcgValueError, PeerError, Status, status_name

#: What starts a rank's failure in its publication, followed by "CODE
#: MESSAGE" (a secret, in hex, never starts with it).
FAILED = "!hcg-failed "
#: Bytes a rank publishes: "SECRET HOST:PORT" (32 + 1 + 253 + 6), or its
#: failure, cut to fit (libhcg's HCG_PUBLISH_MAX is 4096).
PUBLISH_BYTES = 2048
#: Bytes of the secret.
SECRET_BYTES = 16
#: Connections a member holds to one store at most: one per thread that
#: builds its groups (hcg.torch.groups.MAX_THREADS is this).
MEMBER_CLIENTS = 4
#: libhcg's fan-in when HCG_FANIN is not set (HCGRT_DEFAULT_FANIN).
DEFAULT_FANIN = 512
#: A store hosts a slice of each group its rank leads or heads a slice of
#: (a dozen or two), and their members differ: each group's slice gets
#: 1/GROUP_SHARE of F. `make bench-scale` counts what that leaves the
#: busiest store of a 5-dim grid with an expert view: 238 connections at
#: 1,024 ranks, 339 at 102,400 (F = 512), where F a group let it serve
#: 602 to 1,103.
GROUP_SHARE = 4
#: Stops of a route read at first: a deeper one (small slices over a large
#: group) is read again with the room hcg_slice_route says it needs.
_ROUTE_MAX = 16


def fanin() -> int:
    """libhcg's fan-in: HCG_FANIN (which libhcg has checked by the time
    init() publishes), else DEFAULT_FANIN."""
    text = os.environ.get("HCG_FANIN", "")
    return int(text) if text.isdigit() and 2 <= int(text) <= 1 << 31 else DEFAULT_FANIN


def _checked(value: int, call: str, count: int, slice_: int) -> int:
    """A result of libhcg's hcg_slice_* (-1: arguments it refuses)."""
    if value < 0:
        raise HcgValueError(Status.EINVAL, "%s: no slices of %d over a group of %d "
                            "members" % (call, slice_, count))
    return value


def _slice_of(count: int, slice_: int) -> int:
    """``slice_`` as libhcg takes it: a group that one slice holds meets at
    its leader's store whatever the slice (slice_for gives a group of one
    a slice of one, which libhcg, whose slices have two members at least,
    reads as two)."""
    return max(slice_, 2) if count <= slice_ else slice_


def depth(size: int, slice_: int) -> int:
    """The levels of slices over a group of ``size`` members, ``slice_``
    at a time (0: it meets at one store): libhcg's hcg_slice_levels."""
    slice_ = _slice_of(size, slice_)
    return _checked(_lib.lib().hcg_slice_levels(size, slice_), "hcg_slice_levels",
                   size, slice_)


def slice_for(size: int, fanin_: int) -> int:
    """How many members of a group of ``size`` meet at one store, so that
    no store serves more than ``fanin_`` connections for it: all of them
    when each holding MEMBER_CLIENTS fits, else the largest slice whose
    members' connections plus the links of the heads below (one per head,
    at most slice - 1 a level) fit, at least 2."""
    if size * MEMBER_CLIENTS <= fanin_:
        return size
    best = 2
    for s in range(2, fanin_ // MEMBER_CLIENTS + 1):
        if s * MEMBER_CLIENTS + (s - 1) * depth(size, s) <= fanin_:
            best = s
    return best


def group_slice(size: int, fanin_: int) -> int:
    """The slice of a group of ``size`` members when the fan-in is
    ``fanin_``: :func:`slice_for` with the group's share of it."""
    return slice_for(size, max(1, fanin_ // GROUP_SHARE))


def path(members: Sequence[int], rank: int, size: int,
         index: Optional[int] = None) -> List[int]:
    """The ranks whose stores ``rank``'s requests for the group of
    ``members`` go through: the head of its slice of ``size``, the head of
    that head's slice among the heads, and so on, the group's first member
    last (just it for a group of at most ``size``); libhcg's
    hcg_slice_route. Where ``rank`` heads a slice, the path starts with
    itself. ``index``: ``rank``'s place in ``members`` where the caller
    knows it (else it is looked up). O(depth) beyond that look-up."""
    pos = members.index(rank) if index is None else index
    count = len(members)
    size = _slice_of(count, size)
    cap = _ROUTE_MAX
    while True:
        stops = (ctypes.c_int * cap)()
        n = _checked(_lib.lib().hcg_slice_route(count, size, pos, stops, cap),
                     "hcg_slice_route", count, size)
        if n <= cap:
            return [members[stops[k]] for k in range(n)]
        cap = n


def reads(members: Sequence[int], rank: int, size: int,
          index: Optional[int] = None) -> List[int]:
    """The ranks whose publications ``rank`` reads for the group of
    ``members`` met in slices of ``size`` (see :func:`path`): the store it
    connects to, and where it heads a slice the next store up, where its
    own store forwards the group's keys. Never the leader's unless it is
    one of those two."""
    way = path(members, rank, size, index)
    return way[:2] if way[0] == rank else way[:1]


def subtree(count: int, index: int, size: int) -> int:
    """How many of a group's ``count`` members, met in slices of ``size``,
    reach the leader through the member at ``index`` (itself included):
    the ranks whose :func:`path` holds it; libhcg's hcg_slice_reach. 1 for
    a member that heads no slice; ``count`` for the leader."""
    size = _slice_of(count, size)
    return _checked(_lib.lib().hcg_slice_reach(count, size, index), "hcg_slice_reach",
                   count, size)


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


class Route(NamedTuple):
    """How a rank meets a group (see :func:`path`): ``first``, the store it
    connects to; ``hops``, the stores on the way to the leader's (1: first
    is the leader's; more: first relays the group's keys, where its own
    rank says); ``next``, where this rank heads a slice, the store its own
    store forwards them to, else None; ``failed``, for such a head, why
    that store's place cannot be had (its rank failed before it
    published), next then None."""

    first: Place
    hops: int
    next: Optional[Place] = None
    failed: Optional[PeerError] = None

    @property
    def relayed(self) -> bool:
        """Whether ``first`` forwards the group's keys."""
        return self.hops > 1

    @property
    def further(self) -> bool:
        """Whether ``next`` forwards them too (it is not the leader's)."""
        return self.hops > 2


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
                 close: Optional[Callable[[], None]] = None,
                 fanin_: Optional[int] = None) -> None:
        self._fetch = fetch
        self._close = close
        #: libhcg's fan-in: a group's share of it is what one store serves
        #: for it at most (group_slice)
        self.fanin = fanin() if fanin_ is None else fanin_
        self._known: Dict[int, Place] = {}
        self._failed: Dict[int, BaseException] = {}
        self._lock = threading.Lock()

    def of(self, members: Sequence[int], what: str) -> Place:
        """Where the group of ``members`` meets: its first member's store."""
        return self.rank(members[0], what)

    def route(self, members: Sequence[int], rank: int, what: str) -> Route:
        """How ``rank`` meets the group of ``members`` (:class:`Route`),
        reading only the publications :func:`reads` names. Raises as
        :meth:`rank` when the store it connects to cannot be had; a head's
        next store that cannot is in the route's ``failed``."""
        size = group_slice(len(members), self.fanin)
        way = path(members, rank, size)
        first = self.rank(way[0], what)
        if way[0] != rank or len(way) == 1:
            return Route(first, len(way))
        try:
            return Route(first, len(way), self.rank(way[1], what))
        except PeerError as exc:
            return Route(first, len(way), None, exc)

    @property
    def read(self) -> List[int]:
        """The ranks whose publications this process read so far (for
        tests and benchmarks of what each publication serves)."""
        with self._lock:
            return sorted(set(self._known) | set(self._failed))

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

    def route(self, members: Sequence[int], rank: int,  # pylint: disable=unused-argument
              what: str) -> Route:
        return Route(self.place, 1)

    def close(self) -> None:
        pass


#: Where a process's groups meet.
Where = Union[Places, OneStore]
