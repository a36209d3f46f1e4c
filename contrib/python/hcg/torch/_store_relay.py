"""A store that relays: what lets a group of more members than one store
should serve meet at its leader's store through the stores of its slices'
heads (hcg.torch.groups, doc/scaling.md), as libhcg's relays bound what
one process serves in its PMIx exchange.

Where a prefix's keys go is said by the store's own rank, never by the
network. A slice's head (a rank process, which has PMIx) reads the
publication of the next store up its group's route itself and tells its
own store through the pipe it started it with (:meth:`Relays.command`:
``relay PREFIX HOST PORT SECRET RANK FURTHER TIMEOUT_MS``, the prefix and
secret in hex): from then on the store forwards every request on a key
under the prefix to that store, over one link that the store itself opens
and proves with that store's secret. A member of the group tells the
store of its slice's head, first thing on its connection, ``RELAY prefix
WAIT_MS RANK``: only that the prefix is relayed there, how long it waits
and the rank it takes for the store's host (for messages), no address and
no key. A store told by a member before its rank said where holds the
prefix's requests until it does (``local``: they are served here; ``fail``:
they are answered with the rank's reason) or the member's wait passes,
then answers them with an error that names that rank. A link tells the
next store up the same way when that store relays further (FURTHER), so
each head configures exactly one hop: its own. No secret ever crosses the
network: a link proves itself by HMAC challenge and answer as a member
does (doc/security.md).

Who heads whose slice is libhcg's arithmetic (hcg.torch._places), and a
failure travels these relays as doc/architecture.md ("How a failure
travels") writes once for hcg.torch and libhcg; here are the means (a
held prefix that fails naming its rank, ``local``, ``fail``).

The leader's store alone holds the group's keys, so every member reads
and writes the same ones, and counters and compare-and-set stay exact.
Waits go up tagged (``TAGGED``), so that none holds up another on the
link, and the same wait of many members at once (the meeting's decision,
an NCCL id) goes up once and is answered to all of them; members' ADDs
(the meeting's counters) go up together, those that come while a batch is
up in the next one (``MADD``), and a store below's batch joins this
store's. So the leader's store serves its own slice and one link per other
slice, whatever the group's size, and a link asks it a few times per
step, not once a member.

Only the standard library (the store's process imports it). The
protocol is _store_proto.py's, as the client's and the server's; what
the relays need of the server's loop they live in is :class:`Loop`.
"""

from __future__ import annotations

import collections
import errno
import hmac
import os
import selectors
import socket
import struct
import time
from typing import Callable, Deque, Dict, List, Optional, Protocol, Sequence, Set, Tuple

from . import _store_proto as proto
from ._store_conn import Conn

#: Prefixes one store relays at most (each a group this rank heads a
#: slice of: a few dozen at most).
MAX_RELAYS = 4096
#: Longest prefix (hcg's are a group's name).
MAX_PREFIX = 1024
#: Longest line the store's rank writes on its pipe (a relay command: a
#: hex prefix, an address, a hex secret; a failure's reason in hex).
MAX_COMMAND = 16384
#: Links one store holds at most: one per store it forwards to.
MAX_LINKS = 4096
#: How long a link may take to connect and prove itself (as a client's
#: handshake may: store.HANDSHAKE_S), tries on a busy store included.
CONNECT_S = 30.0
#: Pause before trying a store again that closed the link to make room
#: (it said BUSY), doubling up to RETRY_MAX_S, as a client does.
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 1.0
#: A member's wait joins the same wait in flight up unless that one ends
#: more than this after the member's own deadline (its answer, a timeout,
#: would come too late); one that ends first is asked again for it.
JOIN_S = 2.0

Hop = Tuple[str, int, bytes, int]  # host, port, secret, the rank hosting it


class Loop(Protocol):
    """What the relays use of the server's loop they live in
    (_store_server.Loop): its selector, which watches their links too, its
    connections, and its ways to answer, handle and guard a request."""

    sel: selectors.BaseSelector
    conns: Set[Conn]
    #: The tag of the request being handled, for its answer.
    tag: Optional[bytes]

    def answer(self, conn: Conn, status: int, out: Sequence[bytes]) -> None:
        """Answers the request being handled (with its tag, if it has one)."""

    def reply(self, conn: Conn, tag: Optional[bytes], status: int,
              out: Sequence[bytes]) -> None:
        """Answers a request of conn: a tagged one with its tag first."""

    def unblock(self, conn: Conn) -> None:
        """conn's untagged request was answered: serve what follows it."""

    def later(self, conn: Conn) -> None:
        """Serves conn's buffered requests from the loop, soon."""

    def handle(self, conn: Conn, op: int, f: List[bytes]) -> None:
        """Handles one request of conn, as it came (``tag`` says its tag)."""

    def guard(self, fn: Callable[[Conn], None], conn: Conn) -> None:
        """fn(conn); an exception it raises ends that connection, not the
        server."""

    def report(self, exc: BaseException) -> None:
        """Writes an unexpected failure to the store's standard error."""


class _Forward:
    """A member's request waiting for the answer from upstream; for a wait,
    what it waits for and until when (a shared wait that timed out upstream
    before this member's deadline is asked again for it)."""

    __slots__ = ("conn", "tag", "op", "keys", "deadline")

    def __init__(self, conn: Conn, tag: Optional[bytes], op: int = 0,
                 keys: Tuple[bytes, ...] = (), deadline: float = 0.0) -> None:
        self.conn, self.tag = conn, tag
        self.op, self.keys, self.deadline = op, keys, deadline


class _Adds:
    """A request's adds waiting to go up in a batch: its fields (key,
    amount, ...), their size in a frame, and who asked."""

    __slots__ = ("fwd", "fields", "size")

    def __init__(self, fwd: _Forward, fields: List[bytes]) -> None:
        self.fwd, self.fields = fwd, fields
        self.size = sum(len(x) + 4 for x in fields)


class Link:
    """The store's connection to the next store up a chain (a client of
    it, proven with its secret), carrying tagged requests."""

    def __init__(self, relays: "Relays", hop: Hop) -> None:
        self.relays = relays
        self.hop = hop
        self.sock: Optional[socket.socket] = None
        self.state = "new"  # new, connecting, hello, proving, ready
        self.inbuf = bytearray()
        self.outbuf = bytearray()  # sent once ready
        self.mask = 0
        self.nonce = b""
        self.server_nonce = b""
        self.started = time.monotonic()
        self.retry_at = 0.0
        self.pause = RETRY_FIRST_S
        self.next_tag = 0
        self.pending: Dict[bytes, List[_Forward]] = {}
        # (op, keys) -> (tag, deadline): waits in flight others may join.
        self.reads: Dict[Tuple[int, Tuple[bytes, ...]], Tuple[bytes, float]] = {}
        # Tag -> its (op, keys) in reads: an answer finds its entry at once.
        self.read_of: Dict[bytes, Tuple[int, Tuple[bytes, ...]]] = {}
        self.announced: Set[bytes] = set()  # prefixes told further up
        # Members' ADDs go up together, a prefix's at a time (a store up
        # the chain forwards a request of one prefix): those that come
        # while a batch is up wait for its answer and go in the next (MADD).
        # A store below's batch (a MADD) joins too, so that a link up a
        # chain asks as often as one below, not once per link under it.
        self.adds: Dict[bytes, Deque[_Adds]] = {}
        # Tag of a batch up -> its prefix and how many adds each of its
        # requests made, in order.
        self.adds_up: Dict[bytes, Tuple[bytes, List[int]]] = {}
        self.prefixes_up: Set[bytes] = set()  # those with a batch up

    def where(self) -> str:
        return "%s:%d (hosted by rank %d)" % (self.hop[0], self.hop[1], self.hop[3])

    # -- connecting -------------------------------------------------------

    def connect(self) -> None:
        host, port = self.hop[0], self.hop[1]
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, protocol)
        sock.setblocking(False)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        rc = sock.connect_ex(address)
        if rc not in (0, errno.EINPROGRESS, errno.EAGAIN):
            sock.close()
            raise OSError(rc, os.strerror(rc))
        self.sock = sock
        self.state = "connecting"
        self.inbuf = bytearray()
        self._watch(selectors.EVENT_WRITE)

    def _watch(self, want: int) -> None:
        sel = self.relays.loop.sel
        if self.sock is None or want == self.mask:
            return
        if self.mask == 0:
            sel.register(self.sock, want, self)
        elif want == 0:
            sel.unregister(self.sock)
        else:
            sel.modify(self.sock, want, self)
        self.mask = want

    def _close_sock(self) -> None:
        if self.sock is not None:
            self._watch(0)
            self.sock.close()
            self.sock = None

    def busy(self, now: float) -> None:
        """The store closed the link before proving itself: try again
        after a pause, keeping what waits to be sent."""
        self._close_sock()
        self.state = "new"
        self.retry_at = now + self.pause
        self.pause = min(2 * self.pause, RETRY_MAX_S)

    # -- events -----------------------------------------------------------

    def event(self, mask: int) -> None:
        if self.state == "connecting":
            assert self.sock is not None
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
            self.state = "hello"
            self._watch(selectors.EVENT_READ)
            return
        if mask & selectors.EVENT_READ:
            self._read()
        if mask & selectors.EVENT_WRITE and self.state == "ready":
            self._flush()

    def _read(self) -> None:
        assert self.sock is not None
        try:
            data = self.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except ConnectionResetError:
            data = b""
        if not data:
            if self.state in ("hello", "proving"):
                # Shed to make room (BUSY), or closed before its greeting:
                # as a client, try again.
                if self.state == "hello" or bytes(self.inbuf).startswith(proto.BUSY):
                    self.busy(time.monotonic())
                    return
                raise ConnectionError("it refused this store's proof (not the "
                                      "secret its rank published?)")
            raise ConnectionError("it closed the link")
        self.inbuf += data
        if self.state == "hello":
            need = len(proto.HELLO) + proto.NONCE
            if len(self.inbuf) < need:
                return
            if bytes(self.inbuf[:len(proto.HELLO)]) != proto.HELLO:
                raise ConnectionError("it did not greet as hcg's store does")
            server_nonce = bytes(self.inbuf[len(proto.HELLO):need])
            del self.inbuf[:need]
            self.nonce = os.urandom(proto.NONCE)
            self.state = "proving"
            self._send_now(proto.ANSWER + self.nonce +
                           proto.mac(self.hop[2], b"client", server_nonce, self.nonce))
            self.server_nonce = server_nonce
            return
        if self.state == "proving":
            if len(self.inbuf) < proto.MAC:
                return
            proof = bytes(self.inbuf[:proto.MAC])
            del self.inbuf[:proto.MAC]
            if not hmac.compare_digest(proof, proto.mac(self.hop[2], b"server",
                                                        self.server_nonce, self.nonce)):
                raise ConnectionError("it did not prove it is the store its rank "
                                      "published")
            self.state = "ready"
            self.pause = RETRY_FIRST_S
            self._flush()
        self._answers()

    def _send_now(self, data: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(data)  # a handshake's few bytes: the buffer takes them

    def _flush(self) -> None:
        assert self.sock is not None
        if self.outbuf:
            try:
                sent = self.sock.send(self.outbuf)
            except (BlockingIOError, InterruptedError):
                sent = 0
            del self.outbuf[:sent]
        self._watch(selectors.EVENT_READ | (selectors.EVENT_WRITE if self.outbuf else 0))

    def _answers(self) -> None:
        while len(self.inbuf) >= 4:
            (n,) = struct.unpack_from(">I", self.inbuf, 0)
            if n == 0 or n > proto.MAX_ANSWER + 4 + proto.MAX_TAG:
                raise ConnectionError("it sent a frame of %d bytes" % n)
            if len(self.inbuf) < 4 + n:
                return
            status, out = proto.fields(bytes(self.inbuf[4:4 + n]))
            del self.inbuf[:4 + n]
            if not out:
                raise ConnectionError("it answered without the request's tag")
            tag = out[0]
            waiting = self.pending.pop(tag, None)
            if waiting is None:
                raise ConnectionError("it answered a request never sent")
            if not waiting and status != proto.OK:  # a RELAY it was told
                raise ConnectionError("it refused to relay further: %s" % b"".join(
                    out[1:2]).decode("utf-8", "replace"))
            read = self.read_of.pop(tag, None)
            if read is not None and self.reads.get(read, (b"",))[0] == tag:
                del self.reads[read]  # not when a later wait took its place
            if tag in self.adds_up:
                prefix, counts = self.adds_up.pop(tag)
                self.prefixes_up.discard(prefix)
                self._added(waiting, counts, status, out[1:])
                if self.adds.get(prefix):
                    self._send_adds(prefix)
                continue
            now = time.monotonic()
            again: List[_Forward] = []
            for fwd in waiting:
                if status == proto.TIMEOUT and fwd.deadline > now + 0.01:
                    again.append(fwd)  # joined a wait that ended before its own
                else:
                    self.relays.answer(fwd, status, out[1:])
            for fwd in again:
                self.wait(fwd)

    # -- requests ---------------------------------------------------------

    def request(self, op: int, fields: Sequence[bytes], fwd: Optional[_Forward],
                read: Optional[Tuple[int, Tuple[bytes, ...]]] = None,
                deadline: float = 0.0) -> None:
        self.next_tag += 1
        tag = struct.pack(">Q", self.next_tag)
        self.pending[tag] = [fwd] if fwd is not None else []
        if read is not None:
            self.reads[read] = (tag, deadline)
            self.read_of[tag] = read
        self.outbuf += proto.frame(proto.TAGGED, [tag, bytes([op])] + list(fields))
        self.relays.upstream += 1
        if self.state == "ready":
            self._flush()

    def add(self, prefix: bytes, adds: "_Adds") -> None:
        """A request's adds (a member's ADD, or a store below's MADD) on
        keys under ``prefix``: up now if none of the prefix's is up, else in
        its next batch."""
        self.adds.setdefault(prefix, collections.deque()).append(adds)
        if prefix not in self.prefixes_up:
            self._send_adds(prefix)

    def _send_adds(self, prefix: bytes) -> None:
        queue = self.adds[prefix]
        batch: List[_Adds] = []
        size = 0
        while queue and (not batch or size + queue[0].size <= proto.MAX_REQUEST // 2):
            batch.append(queue.popleft())
            size += batch[-1].size
        if not queue:
            del self.adds[prefix]
        self.request(proto.MADD, [x for adds in batch for x in adds.fields], None)
        tag = struct.pack(">Q", self.next_tag)
        self.adds_up[tag] = (prefix, [len(adds.fields) // 2 for adds in batch])
        self.prefixes_up.add(prefix)
        self.pending[tag] = [adds.fwd for adds in batch]

    def _added(self, waiting: List[_Forward], counts: List[int], status: int,
               values: List[bytes]) -> None:
        """Hands a batch's answer to the requests in it, each its own
        values: for a member's ADD one (an error where its key's value is
        no number), for a store below's MADD its values as they came."""
        if status != proto.OK:  # the whole batch (a store up there refused it)
            for fwd in waiting:
                self.relays.answer(fwd, status, values[:1])
            return
        if len(values) != sum(counts):
            raise ConnectionError("it answered %d adds with %d values"
                                  % (sum(counts), len(values)))
        at = 0
        for fwd, n in zip(waiting, counts):
            mine, at = values[at:at + n], at + n
            if fwd.op == proto.MADD or mine[0]:
                self.relays.answer(fwd, proto.OK, mine)
            else:
                self.relays.answer(fwd, proto.ERROR, [b"the value of key '%s' is not a "
                                                      b"number" % fwd.keys[0][:200]])

    def wait(self, fwd: _Forward) -> None:
        """Sends a member's wait up, or joins the same wait in flight (one
        that does not end much later than this one would: it is asked
        again for those whose deadline is later than its own)."""
        read = (fwd.op, fwd.keys)
        inflight = self.reads.get(read)
        if inflight is not None and inflight[1] <= fwd.deadline + JOIN_S:
            self.pending[inflight[0]].append(fwd)
            return
        ms = max(0, int((fwd.deadline - time.monotonic()) * 1000))
        self.request(fwd.op, [b"%d" % ms] + list(fwd.keys), fwd, read, fwd.deadline)

    def fail(self, reason: str) -> None:
        """Every member waiting on this link is told why, and the link
        goes: the next request opens another."""
        self._close_sock()
        self.state = "failed"
        waiting, self.pending, self.reads, self.read_of = self.pending, {}, {}, {}
        waiting[b""] = [adds.fwd for queue in self.adds.values() for adds in queue]
        self.adds, self.adds_up, self.prefixes_up = {}, {}, set()
        self.outbuf = bytearray()
        msg = ("hcg.torch's store could not relay to the store at %s (the group "
               "leader's, or a slice head's on the way): %s" % (self.where(), reason))
        for fwds in waiting.values():
            for fwd in fwds:
                self.relays.answer(fwd, proto.ERROR, [msg.encode()])


class _Up:
    """Where a prefix's requests go: the next store up (its rank's
    ``relay`` command), whether that store relays them further, and until
    when a link tells it to wait for its own rank's word."""

    __slots__ = ("hop", "further", "deadline")

    def __init__(self, hop: Hop, further: bool, deadline: float) -> None:
        self.hop, self.further, self.deadline = hop, further, deadline


class _Held:
    """A prefix a member said is relayed here before this store's rank said
    where: its requests, held until it does, and until when they wait."""

    __slots__ = ("deadline", "rank", "requests")

    def __init__(self, deadline: float, rank: int) -> None:
        self.deadline, self.rank = deadline, rank
        # (connection, tag, op, fields): what came meanwhile, in order.
        self.requests: Deque[Tuple[Conn, Optional[bytes], int, List[bytes]]] = \
            collections.deque()


class Relays:
    """The prefixes a store relays and its links up."""

    def __init__(self, loop: Loop) -> None:
        self.loop = loop
        self.prefixes: Dict[bytes, _Up] = {}  # configured by this store's rank
        self.held: Dict[bytes, _Held] = {}  # named by a member, not yet configured
        self.local: Set[bytes] = set()  # served here after all (its rank said so)
        self.failed: Dict[bytes, bytes] = {}  # prefix -> why its requests fail
        self.links: Dict[Hop, Link] = {}
        self.forwarded = 0  # members' requests forwarded
        self.upstream = 0  # requests sent up (members' waits shared)
        self.commands = bytearray()  # what the rank wrote, up to a whole line

    def active(self) -> bool:
        """Whether any request may have to leave this store (forwarded,
        held for its rank's word, or refused for a failed prefix)."""
        return bool(self.prefixes or self.held or self.failed)

    def _count(self) -> int:
        """The prefixes this store knows, whatever became of them (bounded
        by MAX_RELAYS together)."""
        return len(self.prefixes) + len(self.held) + len(self.local) + len(self.failed)

    # -- RELAY, from a member or a store below -------------------------------

    def register(self, conn: Conn, f: List[bytes]) -> None:
        """A RELAY request (``prefix, wait_ms, rank``): the prefix's keys
        are relayed from this store. Known already (configured, held,
        local): OK; failed: its reason; new: held until this store's rank
        says where, wait_ms at most (``rank``, the one the member takes for
        this store's host, is named when it does not). Answers conn."""
        loop = self.loop
        if len(f) != 3 or not f[0].endswith(b"/") or len(f[0]) > MAX_PREFIX \
                or not f[1].isdigit() or len(f[1]) > 15 or not f[2].isdigit() \
                or len(f[2]) > 10:
            loop.answer(conn, proto.ERROR, [b"a relay is a prefix ending with '/' (at most "
                                            b"%d bytes), the wait in ms and the rank "
                                            b"hosting this store" % MAX_PREFIX])
            return
        prefix = f[0]
        if prefix in self.failed:
            loop.answer(conn, proto.ERROR, [self.failed[prefix]])
            return
        if prefix in self.prefixes or prefix in self.held or prefix in self.local:
            loop.answer(conn, proto.OK, [])
            return
        why = self._room(prefix)
        if why:
            loop.answer(conn, proto.ERROR, [why])
            return
        wait_s = min(int(f[1]), proto.MAX_WAIT_MS) / 1000.0
        self.held[prefix] = _Held(time.monotonic() + wait_s, int(f[2]))
        loop.answer(conn, proto.OK, [])

    def _room(self, prefix: bytes) -> bytes:
        """Why ``prefix`` cannot be relayed here (b"" when it can)."""
        known: List[bytes] = [*self.prefixes, *self.held, *self.local, *self.failed]
        for other in known:
            if other.startswith(prefix) or prefix.startswith(other):
                return b"'%s' overlaps '%s', relayed already" % (prefix[:200], other[:200])
        if self._count() >= MAX_RELAYS:
            return b"this store relays %d prefixes already, its most (MAX_RELAYS)" \
                % self._count()
        return b""

    # -- its rank's word, through the pipe -----------------------------------

    def command_bytes(self, data: bytes) -> None:
        """What the store's rank wrote on its pipe: whole lines are
        commands (:meth:`command`); a line longer than MAX_COMMAND is
        dropped, and said."""
        self.commands += data
        while True:
            end = self.commands.find(b"\n")
            if end < 0:
                if len(self.commands) > MAX_COMMAND:
                    self.commands = bytearray()
                    raise ValueError("a command line of over %d bytes" % MAX_COMMAND)
                return
            line = bytes(self.commands[:end])
            del self.commands[:end + 1]
            self.command(line)

    def command(self, line: bytes) -> None:
        """One command of the store's rank (ValueError when it is none):

        ``relay PREFIX HOST PORT SECRET RANK FURTHER TIMEOUT_MS``
            forward the prefix's requests to the store at HOST:PORT, of
            rank RANK, proven with SECRET; FURTHER (1 or 0): that store
            relays them further (a link tells it so, to wait for its own
            rank's word up to TIMEOUT_MS);
        ``local PREFIX``
            serve the prefix's requests here (the way up failed: the rank
            reports why here, to its slice);
        ``fail PREFIX REASON``
            answer the prefix's requests with REASON.

        PREFIX, SECRET and REASON in hex."""
        parts = line.split(b" ")
        try:
            prefix = bytes.fromhex(parts[1].decode("ascii"))
        except (IndexError, ValueError, UnicodeDecodeError):
            raise ValueError("a command without a prefix in hex") from None
        if not prefix.endswith(b"/") or len(prefix) > MAX_PREFIX:
            raise ValueError("a command's prefix is not one")
        if parts[0] == b"relay" and len(parts) == 8:
            host = parts[2].decode("ascii", "replace")
            secret = bytes.fromhex(parts[4].decode("ascii"))
            if not proto.valid_host(host) or not parts[3].isdigit() or \
                    not 0 < int(parts[3]) < 65536 or len(secret) != proto.SECRET_BYTES or \
                    not parts[5].isdigit() or parts[6] not in (b"0", b"1") or \
                    not parts[7].isdigit():
                raise ValueError("a relay command that is not HOST PORT SECRET RANK "
                                 "FURTHER TIMEOUT_MS")
            hop = (host, int(parts[3]), secret, int(parts[5]))
            known = self.prefixes.get(prefix)
            if known is not None:
                if known.hop != hop:
                    raise ValueError("'%s' is relayed to another store already"
                                     % prefix[:200].decode("utf-8", "replace"))
                return
            self._settle(prefix)
            wait_s = min(int(parts[7]), proto.MAX_WAIT_MS) / 1000.0
            self.prefixes[prefix] = _Up(hop, parts[6] == b"1", time.monotonic() + wait_s)
            self._release(prefix)
        elif parts[0] == b"local" and len(parts) == 2:
            if prefix not in self.local:
                self._settle(prefix)
                self.local.add(prefix)
                self._release(prefix)
        elif parts[0] == b"fail" and len(parts) == 3:
            reason = bytes.fromhex(parts[2].decode("ascii"))[:4000]
            if prefix not in self.failed:
                self._settle(prefix)
                self.failed[prefix] = reason
                self._release(prefix)
        else:
            raise ValueError("an unknown command")

    def _settle(self, prefix: bytes) -> None:
        """Checks that the rank's word on ``prefix`` is its first (what a
        member named is held, not decided) and that there is room."""
        if prefix in self.prefixes or prefix in self.local or prefix in self.failed:
            raise ValueError("'%s' was decided already"
                             % prefix[:200].decode("utf-8", "replace"))
        if prefix not in self.held:
            why = self._room(prefix)
            if why:
                raise ValueError(why.decode("utf-8", "replace"))

    def _release(self, prefix: bytes) -> None:
        """Handles the requests held for ``prefix``, now that its rank said
        what becomes of them, in the order they came."""
        held = self.held.pop(prefix, None)
        if held is None:
            return
        loop = self.loop
        for conn, tag, op, f in held.requests:
            conn.forwarded -= 1
            if conn not in loop.conns:
                continue  # gone meanwhile
            if tag is None:
                conn.blocked = None
            loop.guard(self._again_for(tag, op, f), conn)

    def _again_for(self, tag: Optional[bytes], op: int,
                   f: List[bytes]) -> Callable[[Conn], None]:
        """A held request's handling, for the loop to guard."""
        return lambda conn: self._again(conn, tag, op, f)

    def _again(self, conn: Conn, tag: Optional[bytes], op: int, f: List[bytes]) -> None:
        """Handles a held request as if it had just come (its tag restored
        for the answer); an untagged one answered at once frees what its
        connection sent after it."""
        loop = self.loop
        loop.tag = tag
        try:
            loop.handle(conn, op, f)
        finally:
            loop.tag = None
        if tag is None and conn.blocked is None:
            loop.later(conn)  # answered already: what it sent next

    # -- forwarding ------------------------------------------------------------

    def _prefix_of(self, key: bytes) -> Optional[bytes]:
        i = key.find(b"/")
        while i >= 0:
            head = key[:i + 1]
            if head in self.prefixes or head in self.held or head in self.failed:
                return head
            i = key.find(b"/", i + 1)
        return None

    def forward(self, conn: Conn, tag: Optional[bytes], op: int, f: List[bytes],
                keys: List[bytes]) -> bool:
        """Forwards the request if its keys are relayed (True), after
        which its answer comes from upstream (or is held until this store's
        rank says where); False: served here."""
        loop = self.loop
        found = {self._prefix_of(k) for k in keys}
        if found == {None}:
            return False
        if len(found) > 1:
            loop.answer(conn, proto.ERROR, [b"a request on keys of two stores: relayed "
                                            b"and not, or relayed to two"])
            return True
        prefix = found.pop()
        assert prefix is not None
        if prefix in self.failed:
            loop.answer(conn, proto.ERROR, [self.failed[prefix]])
            return True
        if conn.forwarded >= proto.MAX_TAGGED:
            # A peer that pipelines without reading answers would grow
            # the link's buffer while the store up there is slow.
            loop.answer(conn, proto.ERROR, [b"%d requests of this connection wait for "
                                            b"the store up the relay; at most %d "
                                            b"(MAX_TAGGED)" % (conn.forwarded, proto.MAX_TAGGED)])
            return True
        if op in (proto.ADD, proto.MADD) and not _numbers(f[1::2]):
            # Never into a batch: the store up there would refuse the
            # batch, and with it every other member's adds in it.
            loop.answer(conn, proto.ERROR, [b"an amount of these adds is not a number"])
            return True
        held = self.held.get(prefix)
        if held is not None:
            held.requests.append((conn, tag, op, f))
            conn.forwarded += 1
            if tag is None:
                conn.blocked = held  # its client sends nothing more before
            return True
        up = self.prefixes[prefix]
        link = self.links.get(up.hop)
        if link is None:
            if len(self.links) >= MAX_LINKS:
                loop.answer(conn, proto.ERROR, [b"this store holds %d links up already, "
                                                b"its most (MAX_LINKS)" % len(self.links)])
                return True
            link = self.links[up.hop] = Link(self, up.hop)
            try:
                link.connect()
            except OSError as exc:
                del self.links[up.hop]
                loop.answer(conn, proto.ERROR, [
                    ("hcg.torch's store could not relay to the store at %s: %s"
                     % (link.where(), exc)).encode()])
                return True
        self.forwarded += 1
        conn.forwarded += 1
        is_wait = op in proto.WAITS
        fwd = (_Forward(conn, tag, op, tuple(f[1:]),
                        time.monotonic() + _ms(f[0]) / 1000.0)
               if is_wait else _Forward(conn, tag))
        if tag is None:
            conn.blocked = fwd
        if up.further and prefix not in link.announced:
            # The next store up relays further, where its own rank says:
            # tell it the prefix is relayed there, first.
            link.announced.add(prefix)
            ms = max(0, int((up.deadline - time.monotonic()) * 1000))
            link.request(proto.RELAY, [prefix, b"%d" % ms, b"%d" % up.hop[3]], None)
        if is_wait:
            link.wait(fwd)
        elif op in (proto.ADD, proto.MADD):
            fwd.op, fwd.keys = op, tuple(f[:1])
            link.add(prefix, _Adds(fwd, f))
        else:
            link.request(op, f, fwd)
        return True

    def answer(self, fwd: _Forward, status: int, out: Sequence[bytes]) -> None:
        """Hands an answer from upstream to the member that asked."""
        loop, conn = self.loop, fwd.conn
        conn.forwarded -= 1
        if conn not in loop.conns:
            return  # gone meanwhile
        loop.reply(conn, fwd.tag, status, out)
        if fwd.tag is None and conn.blocked is fwd:
            loop.unblock(conn)

    # -- the loop's hooks -------------------------------------------------

    def event(self, link: Link, mask: int) -> None:
        try:
            link.event(mask)
        except (OSError, ValueError) as exc:
            self._drop(link, str(exc))
        except Exception as exc:  # pylint: disable=broad-except
            self.loop.report(exc)
            self._drop(link, "%s: %s" % (type(exc).__name__, exc))

    def _drop(self, link: Link, reason: str) -> None:
        if self.links.get(link.hop) is link:
            del self.links[link.hop]
        link.fail(reason)

    def next_retry(self) -> float:
        """When the loop must wake next for a link (a retry, or a link's
        time to connect running out) or for held requests whose wait for
        this store's rank ends."""
        wake = float("inf")
        for link in self.links.values():
            if link.state == "new":
                wake = min(wake, link.retry_at)
            if link.state != "ready":
                wake = min(wake, link.started + CONNECT_S)
        for held in self.held.values():
            wake = min(wake, held.deadline)
        return wake

    def retry(self, now: float) -> None:
        """Connects links whose pause ended, drops those that took too
        long, and fails the held prefixes whose wait ended."""
        for link in list(self.links.values()):
            if link.state != "ready" and now >= link.started + CONNECT_S:
                self._drop(link, "it did not take the link within %g s" % CONNECT_S)
            elif link.state == "new" and now >= link.retry_at:
                try:
                    link.connect()
                except OSError as exc:
                    self._drop(link, str(exc))
        for prefix, held in list(self.held.items()):
            if now >= held.deadline:
                # Its rank never said where: it has not reached this group
                # (it is late, stuck, or makes other groups than its members).
                self.failed[prefix] = (
                    "hcg.torch's store of rank %d holds the requests on '%s' for "
                    "the store up its group's route, but rank %d, which hosts it "
                    "and heads their slice, did not say where before their wait "
                    "ended (has it reached this group? is it making the same "
                    "groups?)" % (held.rank, prefix[:200].decode("utf-8", "replace"),
                                  held.rank)).encode()
                self._release(prefix)

    def close(self) -> None:
        for link in list(self.links.values()):
            link._close_sock()
        self.links.clear()


def _numbers(fields: Sequence[bytes]) -> bool:
    """Whether every field is an integer as the server reads one."""
    try:
        for field in fields:
            int(field)
    except ValueError:
        return False
    return True


def _ms(field: bytes) -> int:
    """A wait's length in ms as the server reads it (0 when unreadable:
    the store up says what is wrong with it)."""
    text = field.strip()
    if text.startswith(b"-") or not text.isdigit():
        return 0
    return int(text[:15]) if len(text) <= 15 else 10 ** 15
