"""A store that relays: what lets a group of more members than one store
should serve meet at its leader's store through the stores of its slices'
heads (hcg.torch.groups, doc/scaling.md), as libhcg's relays bound what
one process serves in its PMIx exchange.

A member of such a group tells the store of its slice's head, first thing
on its connection, ``RELAY prefix HOST PORT SECRET ...``: the stores from
that head's parent up to the leader's (more than one where the slices'
heads meet in slices again). From then on the store forwards every
request on a key under the prefix to the first of them, over one link
that the store itself opens and proves with that store's secret, and
answers the member with what came back: the leader's store alone holds the
group's keys, so every member reads and writes the same ones, and counters
and compare-and-set stay exact. Waits go up tagged (``TAGGED``), so that
none holds up another on the link, and the same wait of many members at
once (the meeting's decision, an NCCL id) goes up once and is answered to
all of them; members' ADDs (the meeting's counters) go up together, those
that come while a batch is up in the next one (``MADD``), and a store
below's batch joins this store's. So the leader's store serves its own
slice and one link per other slice, whatever the group's size, and a link
asks it a few times per step, not once a member.

Only the standard library: the server's process imports this file beside
_store_server.py, which hands it its protocol (``proto``).
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
from typing import Any, Deque, Dict, List, Optional, Sequence, Set, Tuple

#: Prefixes one store relays at most (each a group this rank heads a
#: slice of: a few dozen at most).
MAX_RELAYS = 4096
#: Longest prefix (hcg's are a group's name).
MAX_PREFIX = 1024
#: Stores a chain names at most: the tree's depth. A fan-in of 2 over
#: 2**20 ranks is 20 deep.
MAX_HOPS = 32
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

Hop = Tuple[str, int, bytes]  # host, port, secret


class _Forward:
    """A member's request waiting for the answer from upstream; for a wait,
    what it waits for and until when (a shared wait that timed out upstream
    before this member's deadline is asked again for it)."""

    __slots__ = ("conn", "tag", "op", "keys", "deadline")

    def __init__(self, conn: Any, tag: Optional[bytes], op: int = 0,
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
        return "%s:%d" % (self.hop[0], self.hop[1])

    # -- connecting -------------------------------------------------------

    def connect(self) -> None:
        host, port, _ = self.hop
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
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
        p = self.relays.proto
        if self.state == "connecting":
            assert self.sock is not None
            err = self.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                raise OSError(err, os.strerror(err))
            self.state = "hello"
            self._watch(selectors.EVENT_READ)
            return
        if mask & selectors.EVENT_READ:
            self._read(p)
        if mask & selectors.EVENT_WRITE and self.state == "ready":
            self._flush()

    def _read(self, p: Any) -> None:
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
                if self.state == "hello" or bytes(self.inbuf).startswith(p.BUSY):
                    self.busy(time.monotonic())
                    return
                raise ConnectionError("it refused this store's proof (not the "
                                      "secret this member gave for it?)")
            raise ConnectionError("it closed the link")
        self.inbuf += data
        if self.state == "hello":
            need = len(p.HELLO) + p.NONCE
            if len(self.inbuf) < need:
                return
            if bytes(self.inbuf[:len(p.HELLO)]) != p.HELLO:
                raise ConnectionError("it did not greet as hcg's store does")
            server_nonce = bytes(self.inbuf[len(p.HELLO):need])
            del self.inbuf[:need]
            self.nonce = os.urandom(p.NONCE)
            self.state = "proving"
            self._send_now(p.ANSWER + self.nonce +
                           p.mac(self.hop[2], b"client", server_nonce, self.nonce))
            self.server_nonce = server_nonce
            return
        if self.state == "proving":
            if len(self.inbuf) < p.MAC:
                return
            proof = bytes(self.inbuf[:p.MAC])
            del self.inbuf[:p.MAC]
            if not hmac.compare_digest(proof, p.mac(self.hop[2], b"server",
                                                    self.server_nonce, self.nonce)):
                raise ConnectionError("it did not prove it is the store this member named")
            self.state = "ready"
            self.pause = RETRY_FIRST_S
            self._flush()
        self._answers(p)

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

    def _answers(self, p: Any) -> None:
        while len(self.inbuf) >= 4:
            (n,) = struct.unpack_from(">I", self.inbuf, 0)
            if n == 0 or n > p.MAX_ANSWER + 4 + p.MAX_TAG:
                raise ConnectionError("it sent a frame of %d bytes" % n)
            if len(self.inbuf) < 4 + n:
                return
            status, out = p.fields(bytes(self.inbuf[4:4 + n]))
            del self.inbuf[:4 + n]
            if not out:
                raise ConnectionError("it answered without the request's tag")
            tag = out[0]
            waiting = self.pending.pop(tag, None)
            if waiting is None:
                raise ConnectionError("it answered a request never sent")
            if not waiting and status != p.OK:  # a RELAY it was told
                raise ConnectionError("it refused to relay further: %s" % b"".join(
                    out[1:2]).decode("utf-8", "replace"))
            read = self.read_of.pop(tag, None)
            if read is not None and self.reads.get(read, (b"",))[0] == tag:
                del self.reads[read]  # not when a later wait took its place
            if tag in self.adds_up:
                prefix, counts = self.adds_up.pop(tag)
                self.prefixes_up.discard(prefix)
                self._added(p, waiting, counts, status, out[1:])
                if self.adds.get(prefix):
                    self._send_adds(prefix)
                continue
            now = time.monotonic()
            again: List[_Forward] = []
            for fwd in waiting:
                if status == p.TIMEOUT and fwd.deadline > now + 0.01:
                    again.append(fwd)  # joined a wait that ended before its own
                else:
                    self.relays.answer(fwd, status, out[1:])
            for fwd in again:
                self.wait(fwd)

    # -- requests ---------------------------------------------------------

    def request(self, op: int, fields: Sequence[bytes], fwd: Optional[_Forward],
                read: Optional[Tuple[int, Tuple[bytes, ...]]] = None,
                deadline: float = 0.0) -> None:
        p = self.relays.proto
        self.next_tag += 1
        tag = struct.pack(">Q", self.next_tag)
        self.pending[tag] = [fwd] if fwd is not None else []
        if read is not None:
            self.reads[read] = (tag, deadline)
            self.read_of[tag] = read
        self.outbuf += p.frame(p.TAGGED, [tag, bytes([op])] + list(fields))
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
        p = self.relays.proto
        queue = self.adds[prefix]
        batch: List[_Adds] = []
        size = 0
        while queue and (not batch or size + queue[0].size <= p.MAX_REQUEST // 2):
            batch.append(queue.popleft())
            size += batch[-1].size
        if not queue:
            del self.adds[prefix]
        self.request(p.MADD, [x for adds in batch for x in adds.fields], None)
        tag = struct.pack(">Q", self.next_tag)
        self.adds_up[tag] = (prefix, [len(adds.fields) // 2 for adds in batch])
        self.prefixes_up.add(prefix)
        self.pending[tag] = [adds.fwd for adds in batch]

    def _added(self, p: Any, waiting: List[_Forward], counts: List[int], status: int,
               values: List[bytes]) -> None:
        """Hands a batch's answer to the requests in it, each its own
        values: for a member's ADD one (an error where its key's value is
        no number), for a store below's MADD its values as they came."""
        if status != p.OK:  # the whole batch (a store up there refused it)
            for fwd in waiting:
                self.relays.answer(fwd, status, values[:1])
            return
        if len(values) != sum(counts):
            raise ConnectionError("it answered %d adds with %d values"
                                  % (sum(counts), len(values)))
        at = 0
        for fwd, n in zip(waiting, counts):
            mine, at = values[at:at + n], at + n
            if fwd.op == p.MADD or mine[0]:
                self.relays.answer(fwd, p.OK, mine)
            else:
                self.relays.answer(fwd, p.ERROR, [b"the value of key '%s' is not a "
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
                self.relays.answer(fwd, self.relays.proto.ERROR, [msg.encode()])


class Relays:
    """The prefixes a store relays and its links up."""

    def __init__(self, loop: Any, proto: Any) -> None:
        self.loop = loop
        self.proto = proto
        self.prefixes: Dict[bytes, Tuple[Hop, ...]] = {}
        self.links: Dict[Hop, Link] = {}
        self.forwarded = 0  # members' requests forwarded
        self.upstream = 0  # requests sent up (members' waits shared)

    # -- RELAY ------------------------------------------------------------

    def register(self, conn: Any, f: List[bytes]) -> None:
        p, loop = self.proto, self.loop
        why = self._check(f)
        if why:
            loop._answer(conn, p.ERROR, [why.encode()])
            return
        prefix = f[0]
        chain = tuple((f[i].decode("ascii"), int(f[i + 1]), f[i + 2])
                      for i in range(1, len(f), 3))
        old = self.prefixes.get(prefix)
        if old is not None:
            if old == chain:
                loop._answer(conn, p.OK, [])
            else:
                loop._answer(conn, p.ERROR, [b"keys under '%s' are relayed to another "
                                             b"store already" % prefix[:200]])
            return
        for other in self.prefixes:
            if other.startswith(prefix) or prefix.startswith(other):
                loop._answer(conn, p.ERROR, [b"'%s' overlaps '%s', relayed already"
                                             % (prefix[:200], other[:200])])
                return
        if len(self.prefixes) >= MAX_RELAYS:
            loop._answer(conn, p.ERROR, [b"this store relays %d prefixes already, its "
                                         b"most (MAX_RELAYS)" % len(self.prefixes)])
            return
        self.prefixes[prefix] = chain
        loop._answer(conn, p.OK, [])

    def _check(self, f: List[bytes]) -> str:
        p = self.proto
        if len(f) < 4 or (len(f) - 1) % 3 or len(f) > 1 + 3 * MAX_HOPS:
            return "a relay is a prefix, then HOST PORT SECRET of each store up the " \
                   "chain (at most %d)" % MAX_HOPS
        prefix = f[0]
        if not prefix.endswith(b"/") or len(prefix) > MAX_PREFIX:
            return "a relayed prefix ends with '/' and has at most %d bytes" % MAX_PREFIX
        for n, i in enumerate(range(1, len(f), 3)):
            host = f[i].decode("ascii", "replace")
            port, secret = f[i + 1], f[i + 2]
            if not p.valid_host(host) or not port.isdigit() or len(port) > 5 \
                    or not 0 < int(port) < 65536 or len(secret) != p.SECRET_BYTES:
                return "store %d of the chain is not HOST PORT SECRET" % (n + 1)
        return ""

    # -- forwarding -------------------------------------------------------

    def _prefix_of(self, key: bytes) -> Optional[bytes]:
        i = key.find(b"/")
        while i >= 0:
            if key[:i + 1] in self.prefixes:
                return key[:i + 1]
            i = key.find(b"/", i + 1)
        return None

    def forward(self, conn: Any, tag: Optional[bytes], op: int, f: List[bytes],
                keys: List[bytes]) -> bool:
        """Forwards the request if its keys are relayed (True), after
        which its answer comes from upstream; False: served here."""
        p, loop = self.proto, self.loop
        found = {self._prefix_of(k) for k in keys}
        if found == {None}:
            return False
        if len(found) > 1:
            loop._answer(conn, p.ERROR, [b"a request on keys of two stores: relayed "
                                         b"and not, or relayed to two"])
            return True
        prefix = found.pop()
        assert prefix is not None
        chain = self.prefixes[prefix]
        link = self.links.get(chain[0])
        if link is None:
            if len(self.links) >= MAX_LINKS:
                loop._answer(conn, p.ERROR, [b"this store holds %d links up already, "
                                             b"its most (MAX_LINKS)" % len(self.links)])
                return True
            link = self.links[chain[0]] = Link(self, chain[0])
            try:
                link.connect()
            except OSError as exc:
                del self.links[chain[0]]
                loop._answer(conn, p.ERROR, [
                    ("hcg.torch's store could not relay to the store at %s: %s"
                     % (link.where(), exc)).encode()])
                return True
        if conn.forwarded >= p.MAX_TAGGED:
            # A peer that pipelines without reading answers would grow
            # the link's buffer while the store up there is slow.
            loop._answer(conn, p.ERROR, [b"%d requests of this connection wait for "
                                         b"the store up the relay; at most %d "
                                         b"(MAX_TAGGED)" % (conn.forwarded, p.MAX_TAGGED)])
            return True
        if op in (p.ADD, p.MADD) and not _numbers(f[1::2]):
            # Never into a batch: the store up there would refuse the
            # batch, and with it every other member's adds in it.
            loop._answer(conn, p.ERROR, [b"an amount of these adds is not a number"])
            return True
        self.forwarded += 1
        conn.forwarded += 1
        is_wait = op in (p.GET, p.WAIT, p.MGET)
        fwd = (_Forward(conn, tag, op, tuple(f[1:]),
                        time.monotonic() + _ms(f[0]) / 1000.0)
               if is_wait else _Forward(conn, tag))
        if tag is None:
            conn.blocked = fwd
        if len(chain) > 1 and prefix not in link.announced:
            # The next store up relays further: tell it where, first.
            link.announced.add(prefix)
            link.request(p.RELAY, [prefix] + [x for hop in chain[1:] for x in
                                              (hop[0].encode(), b"%d" % hop[1], hop[2])],
                         None)
        if is_wait:
            link.wait(fwd)
        elif op in (p.ADD, p.MADD):
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
            self.loop._report(exc)
            self._drop(link, "%s: %s" % (type(exc).__name__, exc))

    def _drop(self, link: Link, reason: str) -> None:
        if self.links.get(link.hop) is link:
            del self.links[link.hop]
        link.fail(reason)

    def next_retry(self) -> float:
        """When the loop must wake next for a link: a retry, or a link's
        time to connect running out."""
        wake = float("inf")
        for link in self.links.values():
            if link.state == "new":
                wake = min(wake, link.retry_at)
            if link.state != "ready":
                wake = min(wake, link.started + CONNECT_S)
        return wake

    def retry(self, now: float) -> None:
        for link in list(self.links.values()):
            if link.state != "ready" and now >= link.started + CONNECT_S:
                self._drop(link, "it did not take the link within %g s" % CONNECT_S)
            elif link.state == "new" and now >= link.retry_at:
                try:
                    link.connect()
                except OSError as exc:
                    self._drop(link, str(exc))

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
