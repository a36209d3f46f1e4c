"""The job store's server: the process every rank starts to host its
store (store.Server starts it, _store_main.py is its entry point), and
its event loop.

A process of its own, a child of the rank that hosts the store, so that
serving the rank's groups (and, through relays, their slices) never takes
that rank's interpreter lock while it trains. Its standard input brings
one start line (_store_proto.start_line: the address, the limits, the
rank's pid and the secret, which never appears in the environment or
command line); the server checks every field again and refuses a line
that is anything else. Then standard input stays open, and brings its
rank's word on the prefixes it relays, a line each (``relay``, ``local``,
``fail``: _store_relay.Relays.command): where a group's keys go is said
through this pipe, never the network. The server ends when the pipe
closes (its rank closed the store) or when its rank, the process PID,
ends: a child that the rank forked (a DataLoader worker) inherits the
pipe's write end, so the pipe alone would keep the server alive after
its rank's death. It answers on standard output with one line, ``PORT``
it listens on, or ``ERROR reason``. Only the standard library: the
process imports neither torch nor hcg.

What goes over a connection is _store_proto.py's: a connection says
nothing to one that does not prove the secret (closed at once, or after
HANDSHAKE_MS when it says nothing), and a request that waits for keys is
parked until they exist or its deadline passes. ``RELAY`` tells the store
that a prefix's keys are relayed from it (_store_relay.py: how a large
group meets through its slices' heads).

Bounds. Everything a connection can make the server hold is bounded
(the constants here and in _store_proto.py say by how much, and why),
and one connection's failure (a request the server cannot handle) ends
that connection, or gets it an error answer, never the server.
"""

from __future__ import annotations

import collections
import errno
import heapq
import hmac
import os
import selectors
import signal
import socket
import struct
import sys
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

from . import _store_proto as proto
from ._store_conn import Conn, Wait
from ._store_relay import Link, Relays

#: Connections still proving themselves at once. Past it the server takes
#: no more from the kernel's backlog (they wait there, unread and unlost)
#: unless the oldest unproven one is older than SHED_AGE_S: then that one is
#: shed (told BUSY) to make room. Every rank of a job proves itself in one
#: round trip, so 1024 at a time admits any number of ranks in turn.
MAX_UNPROVEN = 1024
#: How old an unproven connection must be before a newer one may take its
#: place. A client answers the challenge one round trip after the greeting
#: (well under a second even on a busy node); one that has said nothing
#: for this long is most likely not a client, and a client shed anyway
#: retries. Someone who reaches the port but lacks the secret can thus
#: keep at most MAX_UNPROVEN connections, each for about this long, while
#: new ones keep coming: they cannot keep a rank out (doc/security.md).
SHED_AGE_S = 1.0
#: Connections taken from the backlog per turn of the loop, so that the
#: answers of those already greeted are read between batches: a burst of
#: thousands of ranks is admitted in order instead of all greeted and none
#: read.
ACCEPT_BATCH = 64
#: How long the listener is left alone when accept() finds no descriptor
#: free (EMFILE, ENFILE) and no connection can be shed: the listener stays
#: readable, so polling it again at once would spin.
ACCEPT_PAUSE_S = 0.1

#: Bytes a connection may have waiting to be sent before the server stops
#: reading its requests (until its peer reads): a peer that sends requests
#: and never reads their answers holds at most this, plus one answer.
MAX_BUFFERED_OUT = 1 << 20
#: Bytes a proven connection may have read and not yet handled: one whole
#: request of the largest size (its length field included).
MAX_BUFFERED_IN = proto.MAX_REQUEST + 4
#: What a key costs beyond its bytes: Python's dict slot and two bytes
#: objects (measured: about 100 bytes on 64-bit CPython).
ENTRY_COST = 128
#: Longest the loop sleeps: it has nothing to do, but epoll cannot wait
#: more than 2**31 ms, and where the server polls for its rank's death
#: (no pidfd) it looks once a second.
MAX_SLEEP_S = 60.0
POLL_PARENT_S = 1.0
#: How much of a proven connection's stream one read takes.
READ_CHUNK = 1 << 16
#: Unexpected failures written to standard error (its rank's), at most.
MAX_REPORTS = 20


def _deadline_ms(field: bytes) -> int:
    """A wait's length in ms, clamped to [0, MAX_WAIT_MS]."""
    text = field.strip()
    negative = text.startswith(b"-")
    digits = text[1:] if negative else text
    if not digits.isdigit():
        raise _NotProtocol("a deadline that is not a number")
    if negative:
        return 0
    if len(digits) > 15:  # over 30,000 years: never int() a huge number
        return proto.MAX_WAIT_MS
    return min(int(digits), proto.MAX_WAIT_MS)


class _NotProtocol(Exception):
    """A request that is not of this protocol: a client's bug, its
    connection is closed."""


def _cost(key: bytes, value: bytes) -> int:
    return len(key) + len(value) + ENTRY_COST


Entry = Tuple[float, int, Wait]


class Loop:
    """The server's state and event loop (one thread). ``control`` is a
    descriptor whose end of file stops it; ``parent`` its rank's pid, whose
    death stops it too (watched through ``parent_fd``, a pidfd, where there
    is one, else by polling getppid())."""

    def __init__(self, listener: socket.socket, secret: bytes,
                 handshake_s: float, control: int, parent: int = 0,
                 parent_fd: Optional[int] = None,
                 max_stored: int = proto.MAX_STORED) -> None:
        self.listener = listener
        self.secret = secret
        self.handshake_s = handshake_s
        self.control = control
        self.parent = parent
        self.parent_fd = parent_fd
        self.max_stored = max_stored
        self.data: Dict[bytes, bytes] = {}
        self.stored = 0  # what data costs (see _cost)
        self.waiting: Dict[bytes, Set[Wait]] = {}
        self.conns: Set[Conn] = set()
        # Unproven connections, oldest first: whom to shed, whom to expire.
        self.fresh: "collections.OrderedDict[Conn, None]" = collections.OrderedDict()
        # Parked waits' deadlines: (deadline, sequence, wait). A wait
        # answered early leaves its entry behind (a heap cannot remove one
        # cheaply): it is skipped when it comes up, and the heap is rebuilt
        # without such entries when they outnumber the live ones.
        self.dues: List[Entry] = []
        self.nparked = 0
        self.seq = 0
        # Connections with requests to serve, woken by another's write:
        # served by the loop, one after another, never from inside the
        # write (a chain of waits each woken by the previous one's
        # pipelined set would otherwise recurse as deep as it is long).
        self.work: Deque[Conn] = collections.deque()
        self.dirty: Set[Conn] = set()  # whose watched events may change
        self.listening = True
        self.paused_until = 0.0
        self.reports = 0
        # Over the server's life: connections proven, requests handled
        # (what it served, for the tests and benchmarks of its load).
        self.proven = 0
        self.requests = 0
        # The tag of the request being handled (TAGGED), for its answer.
        self.tag: Optional[bytes] = None
        self.relays = Relays(self)
        self.sel: selectors.BaseSelector = selectors.DefaultSelector()
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, "accept")
        self.sel.register(control, selectors.EVENT_READ, "control")
        if parent_fd is not None:
            self.sel.register(parent_fd, selectors.EVENT_READ, "parent")

    def run(self) -> None:
        try:
            while True:
                for key, mask in self.sel.select(self._sleep(time.monotonic())):
                    if key.data == "accept":
                        try:
                            self._accept()
                        except Exception as exc:  # pylint: disable=broad-except
                            self.report(exc)  # a bug: pause, as out of descriptors
                            self.paused_until = time.monotonic() + ACCEPT_PAUSE_S
                    elif key.data == "control":
                        data = os.read(self.control, 4096)
                        if not data:
                            return  # its rank closed the store, or died
                        try:
                            self.relays.command_bytes(data)
                        except ValueError as exc:
                            # Its own rank's bug: said, and the store goes on.
                            self.report(exc)
                        self._drain()
                    elif key.data == "parent":
                        return  # its rank died (a child of it may hold the pipe)
                    elif isinstance(key.data, Link):
                        self.relays.event(key.data, mask)
                    else:
                        self.guard(self._event, key.data, mask)
                self._drain()
                self._expire(time.monotonic())
                self.relays.retry(time.monotonic())
                self._drain()
                if self.parent_fd is None and self.parent and os.getppid() != self.parent:
                    return  # its rank died: this process has another parent now
                self._update(time.monotonic())
        finally:
            for conn in list(self.conns):
                self._drop(conn)
            self.relays.close()
            self.sel.close()
            self.listener.close()

    # -- the loop's bookkeeping ------------------------------------------

    def _sleep(self, now: float) -> float:
        """How long select may wait: until the next deadline, handshake
        limit or end of a pause, and never over the bounds above."""
        wake = now + (POLL_PARENT_S if self.parent_fd is None else MAX_SLEEP_S)
        if self.dues:
            wake = min(wake, self.dues[0][0])
        wake = min(wake, self.relays.next_retry())
        if self.fresh:
            born = next(iter(self.fresh)).born
            wake = min(wake, born + self.handshake_s)
            if not self.listening:
                wake = min(wake, born + SHED_AGE_S)
        if not self.listening and self.paused_until > now:
            wake = min(wake, self.paused_until)
        return max(0.0, wake - now)

    def guard(self, fn: Callable[..., Any], conn: Conn, *args: Any) -> None:
        """fn(conn, *args); an exception it raises ends that connection,
        not the server (and is reported: it is a bug)."""
        try:
            fn(conn, *args)
        except Exception as exc:  # pylint: disable=broad-except
            self.report(exc)
            self._drop(conn)

    def report(self, exc: BaseException) -> None:
        self.reports += 1
        if self.reports <= MAX_REPORTS:
            try:
                sys.stderr.write("hcg.torch store: unexpected %s: %s (the store goes on)\n"
                                 % (type(exc).__name__, exc))
                sys.stderr.flush()
            except (OSError, ValueError):
                pass

    def _update(self, now: float) -> None:
        """Watches what each changed connection and the listener need."""
        for conn in self.dirty:
            if conn in self.conns:
                self.guard(self._watch, conn)
        self.dirty.clear()
        want = now >= self.paused_until and (
            len(self.fresh) < MAX_UNPROVEN
            or now - next(iter(self.fresh)).born >= SHED_AGE_S)
        if want != self.listening:
            if want:
                self.sel.register(self.listener, selectors.EVENT_READ, "accept")
            else:
                self.sel.unregister(self.listener)
            self.listening = want

    def _watch(self, conn: Conn) -> None:
        """Reads from a connection only while what it has sent and what
        waits for it to read stay within bounds; writes while there is
        something to send."""
        want = 0
        if not conn.proven or (len(conn.outbuf) <= MAX_BUFFERED_OUT
                               and len(conn.inbuf) < MAX_BUFFERED_IN):
            want |= selectors.EVENT_READ
        if conn.outbuf:
            want |= selectors.EVENT_WRITE
        if want == conn.mask:
            return
        if conn.mask == 0:
            self.sel.register(conn.sock, want, conn)
        elif want == 0:
            self.sel.unregister(conn.sock)
        else:
            self.sel.modify(conn.sock, want, conn)
        conn.mask = want

    def later(self, conn: Conn) -> None:
        """Serves conn's buffered requests from the loop, soon."""
        if conn.inbuf and not conn.queued:
            conn.queued = True
            self.work.append(conn)

    def _drain(self) -> None:
        while self.work:
            conn = self.work.popleft()
            conn.queued = False
            if conn in self.conns:
                self.guard(self._serve, conn)

    # -- connections ------------------------------------------------------

    def _accept(self) -> None:
        now = time.monotonic()
        for i in range(ACCEPT_BATCH):
            if len(self.fresh) >= MAX_UNPROVEN:
                # Full: a newer connection takes the place of the oldest
                # silent one, else the rest wait in the backlog.
                if i > 0 or not self._shed(now):
                    return
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
                    if self._shed(now):
                        continue  # a descriptor is free again
                    self.paused_until = now + ACCEPT_PAUSE_S
                    return
                if exc.errno == errno.ECONNABORTED:
                    continue  # gone before it was taken
                self.paused_until = now + ACCEPT_PAUSE_S
                return
            conn = Conn(sock, now)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            self.conns.add(conn)
            self.fresh[conn] = None
            self.guard(self._send, conn, proto.HELLO + conn.nonce)
            self.dirty.add(conn)

    def _shed(self, now: float) -> bool:
        """Frees the place of the oldest unproven connection if it is old
        enough: it proves itself if its answer is already there, else it is
        told proto.BUSY and closed. Whether a place was freed."""
        if not self.fresh:
            return False
        conn = next(iter(self.fresh))
        if now - conn.born < SHED_AGE_S:
            return False
        self.guard(self._read, conn)
        if conn in self.fresh:
            try:
                conn.sock.send(bytes(conn.outbuf) + proto.BUSY)
            except OSError:
                pass
            self._drop(conn)
        return True

    def _drop(self, conn: Conn) -> None:
        if conn not in self.conns:
            return
        self.conns.discard(conn)
        self.fresh.pop(conn, None)
        for wait in list(conn.waits):
            self._unpark(wait)
        conn.blocked = None
        if conn.mask:
            try:
                self.sel.unregister(conn.sock)
            except (KeyError, ValueError):
                pass
            conn.mask = 0
        conn.sock.close()
        conn.inbuf = bytearray()
        conn.outbuf = bytearray()

    def _event(self, conn: Conn, mask: int) -> None:
        if mask & selectors.EVENT_READ:
            self._read(conn)
        if mask & selectors.EVENT_WRITE and conn in self.conns:
            self._flush(conn)

    def _send(self, conn: Conn, data: bytes) -> None:
        conn.outbuf += data
        self._flush(conn)

    def _flush(self, conn: Conn) -> None:
        if not conn.outbuf:
            return
        try:
            sent = conn.sock.send(conn.outbuf)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._drop(conn)
            return
        del conn.outbuf[:sent]
        self.dirty.add(conn)
        if len(conn.outbuf) <= MAX_BUFFERED_OUT and conn.blocked is None:
            self.later(conn)  # requests held back while it did not read

    def _read(self, conn: Conn) -> None:
        if conn.proven:
            want = min(READ_CHUNK, MAX_BUFFERED_IN - len(conn.inbuf))
        else:
            want = proto.PROOF - len(conn.inbuf)  # not a byte past the proof
        if want <= 0:
            return
        try:
            data = conn.sock.recv(want)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        conn.inbuf += data
        self.dirty.add(conn)
        if not conn.proven:
            if len(conn.inbuf) < proto.PROOF:
                return
            if not self._prove(conn):
                self._drop(conn)  # says nothing to who cannot prove
                return
        self._serve(conn)

    def _prove(self, conn: Conn) -> bool:
        answer = bytes(conn.inbuf[:proto.PROOF])
        del conn.inbuf[:proto.PROOF]
        client_nonce = answer[len(proto.ANSWER):len(proto.ANSWER) + proto.NONCE]
        want = proto.mac(self.secret, b"client", conn.nonce, client_nonce)
        if answer[:len(proto.ANSWER)] != proto.ANSWER or \
                not hmac.compare_digest(answer[len(proto.ANSWER) + proto.NONCE:], want):
            return False
        conn.proven = True
        self.proven += 1
        self.fresh.pop(conn, None)
        self._send(conn, proto.mac(self.secret, b"server", conn.nonce, client_nonce))
        return True

    # -- requests ---------------------------------------------------------

    def _serve(self, conn: Conn) -> None:
        """Handles the whole requests in the connection's buffer, up to one
        that waits (its client sends nothing more before the answer), or
        until its peer has too much to read."""
        while conn in self.conns and conn.proven and conn.blocked is None \
                and len(conn.outbuf) <= MAX_BUFFERED_OUT and len(conn.inbuf) >= 4:
            (n,) = struct.unpack_from(">I", conn.inbuf, 0)
            if n == 0 or n > proto.MAX_REQUEST:
                self.answer(conn, proto.ERROR, [b"a request of %d bytes: the store takes at "
                                                b"most %d (MAX_REQUEST)" % (n, proto.MAX_REQUEST)])
                self._drop(conn)  # what follows cannot be read as frames
                return
            if len(conn.inbuf) < 4 + n:
                return
            body = bytes(conn.inbuf[4:4 + n])
            del conn.inbuf[:4 + n]
            self.dirty.add(conn)
            self.requests += 1
            answered = conn.answers
            self.tag = None
            try:
                op, f = proto.fields(body)
                if op == proto.TAGGED:
                    if len(f) < 2 or not 0 < len(f[0]) <= proto.MAX_TAG or len(f[1]) != 1 \
                            or f[1][0] == proto.TAGGED:
                        raise _NotProtocol("a tagged request that is not one")
                    self.tag = f[0]
                    op, f = f[1][0], f[2:]
                self.handle(conn, op, f)
            except (ValueError, IndexError, _NotProtocol):
                self._drop(conn)  # not this protocol: a client's bug
                return
            except Exception as exc:  # pylint: disable=broad-except
                # The server's own failure on this request: this connection
                # is told (or closed, when it was answered already, or
                # waits), the store goes on.
                self.report(exc)
                if conn.answers != answered or conn.blocked is not None:
                    self._drop(conn)
                    return
                self.answer(conn, proto.ERROR, [b"the store failed to serve this request "
                                                b"(%s)" % type(exc).__name__.encode()])
            finally:
                self.tag = None

    def handle(self, conn: Conn, op: int, f: List[bytes]) -> None:
        data = self.data
        if op == proto.RELAY:
            self.relays.register(conn, f)
            return
        if self.relays.active():
            keys = proto.keys_of(op, f)
            if keys:
                if not proto.well_formed(op, f):
                    # Never up a link: the store there would close it, and
                    # with it every other member's requests on it.
                    raise _NotProtocol("a request of the wrong fields")
                if self.relays.forward(conn, self.tag, op, f, keys):
                    return  # keys of the leader's store: its answer will come
        if op == proto.SET and len(f) == 2:
            if self._room(conn, [(f[0], f[1])]):
                self._put(f[0], f[1])
                self.answer(conn, proto.OK, [])
                self._changed([f[0]])
        elif op in proto.WAITS and len(f) >= 2 and (op != proto.GET or len(f) == 2):
            self._park(conn, op, f[1:],
                       time.monotonic() + _deadline_ms(f[0]) / 1000.0)
        elif op == proto.ADD and len(f) == 2:
            try:
                now = int(data.get(f[0], b"0")) + int(f[1])
            except ValueError:
                self.answer(conn, proto.ERROR, [b"the value of key '%s' is not a number"
                                                % f[0][:200]])
                return
            value = b"%d" % now
            if self._room(conn, [(f[0], value)]):
                self._put(f[0], value)
                self.answer(conn, proto.OK, [value])
                self._changed([f[0]])
        elif op == proto.MADD and f and len(f) % 2 == 0:
            # Each add its own: a key whose value is no number gets an
            # empty field and is left as it is, the others are made (a
            # relay's batch holds many members' adds).
            try:
                amounts = [int(a) for a in f[1::2]]
            except ValueError:
                self.answer(conn, proto.ERROR, [b"an amount of these adds is not a number"])
                return
            values: Dict[bytes, Optional[int]] = {}
            out = []
            for k, a in zip(f[0::2], amounts):
                if k not in values:
                    try:
                        values[k] = int(data.get(k, b"0"))
                    except ValueError:
                        values[k] = None
                held = values[k]
                if held is None:
                    out.append(b"")
                    continue
                values[k] = held + a
                out.append(b"%d" % (held + a))
            writes = [(k, b"%d" % v) for k, v in values.items() if v is not None]
            if self._room(conn, writes):
                for k, v in writes:
                    self._put(k, v)
                self.answer(conn, proto.OK, out)
                self._changed(list(values))
        elif op == proto.CHECK:
            self.answer(conn, proto.OK, [b"1" if all(k in data for k in f) else b"0"])
        elif op == proto.CAS and len(f) == 3:
            self._compare_set(conn, f[0], f[1], f[2])
        elif op == proto.DELETE and len(f) == 1:
            old = data.pop(f[0], None)
            if old is not None:
                self.stored -= _cost(f[0], old)
            self.answer(conn, proto.OK, [b"1" if old is not None else b"0"])
        elif op == proto.NUM and not f:
            self.answer(conn, proto.OK, [b"%d" % len(data)])
        elif op == proto.APPEND and len(f) == 2:
            value = data.get(f[0], b"") + f[1]
            if self._room(conn, [(f[0], value)]):
                self._put(f[0], value)
                self.answer(conn, proto.OK, [])
                self._changed([f[0]])
        elif op == proto.MSET and len(f) % 2 == 0:
            pairs = dict(zip(f[0::2], f[1::2]))  # the last of a key wins
            if self._room(conn, list(pairs.items())):
                for k, v in pairs.items():
                    self._put(k, v)
                self.answer(conn, proto.OK, [])
                self._changed(list(pairs))
        elif op == proto.STATS and not f:
            self.answer(conn, proto.OK, self._stats())
        else:
            raise _NotProtocol("unknown request")

    def _room(self, conn: Conn, writes: Sequence[Tuple[bytes, bytes]]) -> bool:
        """Whether the store may take these writes, within proto.MAX_VALUE and
        its limit on what it holds; if not, conn is told which limit."""
        grow = 0
        for k, v in writes:
            if len(v) > proto.MAX_VALUE:
                self.answer(conn, proto.ERROR, [
                    b"a value of %d bytes for key '%s': the store holds values of at "
                    b"most %d bytes (MAX_VALUE)" % (len(v), k[:200], proto.MAX_VALUE)])
                return False
            old = self.data.get(k)
            grow += _cost(k, v) - (_cost(k, old) if old is not None else 0)
        if grow > 0 and self.stored + grow > self.max_stored:
            self.answer(conn, proto.ERROR, [b"the store is full: it holds %d bytes of keys "
                                            b"and values, this write needs %d more, and its "
                                            b"limit is %d bytes (MAX_STORED)"
                                            % (self.stored, grow, self.max_stored)])
            return False
        return True

    def _put(self, key: bytes, value: bytes) -> None:
        old = self.data.get(key)
        if old is not None:
            self.stored -= _cost(key, old)
        self.data[key] = value
        self.stored += _cost(key, value)

    def _compare_set(self, conn: Conn, key: bytes, expected: bytes, desired: bytes) -> None:
        """As torch's stores: a missing key is set when ``expected`` is
        empty; a key holding ``expected`` gets ``desired``; the answer is
        the value now (``expected`` for a key still missing)."""
        current = self.data.get(key)
        if (current is None and expected == b"") or current == expected:
            if self._room(conn, [(key, desired)]):
                self._put(key, desired)
                self.answer(conn, proto.OK, [desired])
                self._changed([key])
        else:
            self.answer(conn, proto.OK, [expected if current is None else current])

    def _stats(self) -> List[bytes]:
        return [b"%s=%d" % (name.encode(), value) for name, value in (
            ("connections", len(self.conns)), ("unproven", len(self.fresh)),
            ("parked", self.nparked), ("deadlines", len(self.dues)),
            ("relayed", len(self.relays.prefixes)), ("held", len(self.relays.held)),
            ("links", len(self.relays.links)),
            ("forwarded", self.relays.forwarded), ("upstream", self.relays.upstream),
            ("keys", len(self.data)), ("stored", self.stored),
            ("max_stored", self.max_stored),
            ("buffered_in", sum(len(c.inbuf) for c in self.conns)),
            ("buffered_out", sum(len(c.outbuf) for c in self.conns)),
            ("listening", int(self.listening)),
            ("proven", self.proven), ("requests", self.requests))]

    def answer(self, conn: Conn, status: int, out: Sequence[bytes]) -> None:
        """Answers the request being handled (with its tag, if it has one)."""
        self.reply(conn, self.tag, status, out)

    def reply(self, conn: Conn, tag: Optional[bytes], status: int,
              out: Sequence[bytes]) -> None:
        """Answers a request of conn: a tagged one with its tag first."""
        conn.answers += 1
        self._send(conn, proto.frame(status, out if tag is None else [tag] + list(out)))

    def unblock(self, conn: Conn) -> None:
        """conn's untagged request was answered: serve what follows it."""
        conn.blocked = None
        self.later(conn)

    def _answer_wait(self, wait: Wait) -> None:
        """Answers a wait whose keys all exist."""
        conn, op, keys = wait.conn, wait.op, wait.keys
        if op == proto.WAIT:
            self.reply(conn, wait.tag, proto.OK, [])
            return
        values = [self.data[k] for k in keys]
        size = 1 + sum(4 + len(v) for v in values)
        if size > proto.MAX_ANSWER:
            self.reply(conn, wait.tag, proto.ERROR, [
                b"an answer of %d bytes: the store sends at most %d (MAX_ANSWER); "
                b"get fewer keys at once" % (size, proto.MAX_ANSWER)])
        else:
            self.reply(conn, wait.tag, proto.OK, values)

    def _park(self, conn: Conn, op: int, keys: List[bytes], deadline: float) -> None:
        wait = Wait(conn, self.tag, op, keys)
        if all(k in self.data for k in keys):
            self._answer_wait(wait)
            return
        if wait.tag is not None and len(conn.waits) >= proto.MAX_TAGGED:
            self.answer(conn, proto.ERROR, [b"%d tagged waits at once on one connection: "
                                            b"the store parks at most %d (MAX_TAGGED)"
                                            % (len(conn.waits), proto.MAX_TAGGED)])
            return
        if wait.tag is None:
            conn.blocked = wait
        conn.waits.add(wait)
        self.nparked += 1
        for k in keys:
            if k not in self.data:
                self.waiting.setdefault(k, set()).add(wait)
        self.seq += 1
        heapq.heappush(self.dues, (deadline, self.seq, wait))
        if len(self.dues) > 2 * self.nparked + 64:
            self.dues = [e for e in self.dues if e[2].active]
            heapq.heapify(self.dues)

    def _unpark(self, wait: Wait) -> None:
        if not wait.active:
            return
        wait.active = False
        for k in wait.keys:
            waiters = self.waiting.get(k)
            if waiters is not None:
                waiters.discard(wait)
                if not waiters:
                    del self.waiting[k]
        wait.conn.waits.discard(wait)
        if wait.conn.blocked is wait:
            wait.conn.blocked = None
        self.nparked -= 1

    def _wake(self, conn: Conn, wait: Wait) -> None:
        """Answers a parked wait if its keys all exist now; its connection's
        next requests are served from the loop (see ``work``)."""
        if not wait.active:
            return
        if all(k in self.data for k in wait.keys):
            self._unpark(wait)
            self._answer_wait(wait)
            self.later(conn)

    def _changed(self, keys: Sequence[bytes]) -> None:
        for k in keys:
            for wait in list(self.waiting.get(k, ())):
                self.guard(self._wake, wait.conn, wait)

    def _timeout(self, conn: Conn, wait: Wait) -> None:
        self._unpark(wait)
        self.reply(conn, wait.tag, proto.TIMEOUT, [])
        self.later(conn)

    def _expire(self, now: float) -> None:
        while self.dues and self.dues[0][0] <= now:
            wait = heapq.heappop(self.dues)[2]
            if wait.active and wait.conn in self.conns:
                self.guard(self._timeout, wait.conn, wait)
        while self.fresh:
            conn = next(iter(self.fresh))
            if conn.born + self.handshake_s > now:
                break
            self.guard(self._read, conn)  # an answer that came meanwhile
            if conn in self.fresh:
                self._drop(conn)  # never proved itself


def _raise_nofile() -> None:
    """Raises this process's soft limit on open files to its hard one: a
    job of more ranks than the soft limit (often 1024) would otherwise not
    form, its last ranks' connections left in the backlog."""
    try:
        import resource
    except ImportError:
        return
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        target = hard
        if hard == resource.RLIM_INFINITY:
            try:
                with open("/proc/sys/fs/nr_open", "rb") as f:
                    target = int(f.read())
            except (OSError, ValueError):
                target = 1 << 20
        if soft != resource.RLIM_INFINITY and soft < target:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    except (OSError, ValueError):
        pass  # not allowed: the limit stays, and EMFILE is handled


def _watch_parent(pid: int) -> Optional[int]:
    """A pidfd of the store's rank (readable once it ends), or None where
    the kernel or Python has none (then the loop polls getppid())."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(pid))
    except OSError:
        return None


def main() -> int:
    """The store process's life: its start line, its port said, its loop."""
    # A Ctrl-C reaches the whole step: the store's rank decides, and closes it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _raise_nofile()
    line = sys.stdin.buffer.readline(4096)
    try:
        host, port, handshake_s, max_stored, parent, secret = proto.parse_start(line)
        parent_fd = _watch_parent(parent)
        if os.getppid() != parent:  # checked after pidfd_open: no pid reuse
            raise ValueError("the process that started the store (%d) is gone" % parent)
        family, kind, protocol, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, protocol)
        try:
            listener.bind(address)
            listener.listen(65535)  # the kernel's somaxconn caps it
        except OSError:
            listener.close()
            raise
    except (OSError, IndexError, ValueError) as exc:
        print("ERROR %s" % exc, flush=True)
        return 1
    print(listener.getsockname()[1], flush=True)
    sys.stdout.close()
    Loop(listener, secret, handshake_s, sys.stdin.fileno(), parent, parent_fd,
         max_stored).run()
    return 0

