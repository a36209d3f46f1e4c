"""The job store's server and its protocol (see store.py, which starts it
and holds the client).

Runs as a process of its own, a child of rank 0, so that serving the
whole job never takes rank 0's interpreter lock while it trains:

    python3 -I -S _store_server.py

Its standard input brings one line (:func:`start_line`), seven fields
separated by one space each:

    hcg-store-1 HOST PORT HANDSHAKE_MS MAX_STORED PID SECRET

SECRET is exactly 32 hex digits (128 bits; it never appears in the
environment or command line), PID is rank 0's, and HOST must be one IP
address or host name: the server checks every field again and refuses a
line that is anything else. Then standard input stays open, and brings
rank 0's word on the prefixes it relays, a line each (``relay``, ``local``,
``fail``: _store_relay.Relays.command): where a group's keys go is said
through this pipe, never the network. The server ends when it closes (rank 0 closed the store) or when rank 0, the process
PID, ends: a child that rank 0 forked (a DataLoader worker) inherits the
pipe's write end, so the pipe alone would keep the server alive after rank
0's death. It answers on standard output with one line, ``PORT`` it
listens on, or ``ERROR reason``. Only the standard library: the process
imports neither torch nor hcg.

The protocol. On a new connection the server sends ``HCGS`` and a random
32-byte challenge; the client sends ``HCGC``, a challenge of its own and
HMAC-SHA256(secret, "hcg-store client" + both challenges); the server
checks it in constant time and answers HMAC-SHA256(secret, "hcg-store
server" + both challenges). Nothing else is read from a connection before
that: one that answers wrongly is closed at once, without a word, one
that does not answer after HANDSHAKE_MS. A connection the server sheds to
make room for newer ones (too many unproven at once, or no descriptor
left) gets ``HCGB`` (busy) before it is closed: its client tries again.
Then a request is a frame, a 4-byte big-endian length and a body: an
operation byte and fields, each a 4-byte length and its bytes; an answer
is a status byte and fields, in a frame. A request that waits for keys is
parked until they all exist or its deadline passes, and answered either
way. A request may come tagged (``TAGGED``: a tag, the operation, its
fields): its answer starts with the tag and may come before those of
earlier requests, so that a tagged wait holds nothing up. ``RELAY`` tells
the store that a prefix's keys are relayed from it, to the store its own
rank names through its pipe (_store_relay.py: how a large group meets
through its slices' heads); it carries no address and no key.

Bounds. Everything a connection can make the server hold is bounded
(the constants below say by how much, and why), and one connection's
failure (a request the server cannot handle) ends that connection, or
gets it an error answer, never the server.
"""

from __future__ import annotations

import collections
import errno
import hashlib
import heapq
import hmac
import ipaddress
import os
import selectors
import signal
import socket
import struct
import sys
import time
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Set, Tuple

try:
    from . import _store_relay
except ImportError:  # run as a script (python3 -I -S _store_server.py): its
    # sibling by its path, sys.path left as -I made it (the standard library)
    import importlib.util

    _spec = importlib.util.spec_from_file_location(
        "_store_relay", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                     "_store_relay.py"))
    assert _spec is not None and _spec.loader is not None
    _store_relay = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_store_relay)

HELLO = b"HCGS"
ANSWER = b"HCGC"
#: Sent instead of the server's proof to a connection shed for room: its
#: client retries, where a wrong secret gets a close without a word.
BUSY = b"HCGB"
NONCE = 32
MAC = 32
#: Bytes a client sends before it is trusted (nothing more is read).
PROOF = len(ANSWER) + NONCE + MAC
#: The job's secret: 128 random bits (hcg.torch.rendezvous draws them).
SECRET_BYTES = 16
#: The first field of the start line: this protocol's version, so that a
#: line of another version is refused rather than misread.
START = "hcg-store-1"
#: The longest host name (RFC 1035: 253 characters written out).
MAX_HOST = 253

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

#: Largest request frame the server reads. torch and hcg store keys and
#: values of a few hundred bytes (addresses, NCCL unique ids of 128 bytes,
#: counters, hcg's failure reports of a few KiB); a megabyte leaves room
#: for thousands of them in one multi_set. A longer frame ends its
#: connection (the client refuses to send one: store.py).
MAX_REQUEST = 1 << 20
#: Largest value a key may hold (append grows one): as large as a request.
MAX_VALUE = MAX_REQUEST
#: Largest answer: a multi_get of many values. The client refuses a frame
#: longer than this; the server answers an error instead of one.
MAX_ANSWER = 16 << 20
#: Bytes a connection may have waiting to be sent before the server stops
#: reading its requests (until its peer reads): a peer that sends requests
#: and never reads their answers holds at most this, plus one answer.
MAX_BUFFERED_OUT = 1 << 20
#: Bytes a proven connection may have read and not yet handled: one whole
#: request of the largest size (its length field included).
MAX_BUFFERED_IN = MAX_REQUEST + 4
#: Default bound on what the store holds: the length of every key and
#: value plus ENTRY_COST each. A job of 16384 ranks that makes 30 groups
#: each writes some 500,000 keys of a few hundred bytes, about 200 MB with
#: their cost; 512 MiB leaves room for that and stops a program that
#: writes without end before it takes rank 0's node's memory. A write past
#: it is answered with an error that names the limit.
MAX_STORED = 512 << 20
#: What a key costs beyond its bytes: Python's dict slot and two bytes
#: objects (measured: about 100 bytes on 64-bit CPython).
ENTRY_COST = 128
#: Longest wait a request may ask for: a year. Longer ones (torch's
#: timedelta.max, a deadline of 400 digits) are clamped to it.
MAX_WAIT_MS = 366 * 86400 * 1000
#: Longest the loop sleeps: it has nothing to do, but epoll cannot wait
#: more than 2**31 ms, and where the server polls for rank 0's death
#: (no pidfd) it looks once a second.
MAX_SLEEP_S = 60.0
POLL_PARENT_S = 1.0
#: How much of a proven connection's stream one read takes.
READ_CHUNK = 1 << 16
#: Unexpected failures written to standard error (rank 0's), at most.
MAX_REPORTS = 20
#: Longest tag of a TAGGED request (a relay's are 8 bytes).
MAX_TAG = 16
#: Tagged waits one connection may have parked at once, and requests it
#: may have forwarded up a relay's link unanswered: a relay's link carries
#: the requests of the members it serves (a slice, at most libhcg's
#: fan-in), each of which waits for one answer at a time.
MAX_TAGGED = 4096

# Operations: the fields they take -> what they answer.
SET = 1  # key, value -> ()
GET = 2  # deadline_ms, key -> value (waits)
ADD = 3  # key, amount -> new value, as decimal text
CHECK = 4  # keys... -> b"1" when all exist, else b"0"
WAIT = 5  # deadline_ms, keys... -> () (waits)
CAS = 6  # key, expected, desired -> the value now (see _compare_set)
DELETE = 7  # key -> b"1" when it existed, else b"0"
NUM = 8  # () -> how many keys, as decimal text
APPEND = 9  # key, value -> ()
MGET = 10  # deadline_ms, keys... -> values (waits)
MSET = 11  # key, value, key, value... -> ()
STATS = 12  # () -> b"name=number" fields: what the server holds (tests)
# tag, op, op's fields... -> tag, the op's answer. The answer may come out
# of order: a tagged wait holds nothing up (a relay's link, below).
TAGGED = 13
# prefix, wait_ms, rank -> (): the prefix's keys are relayed from this
# store, to the store its rank (``rank``, for messages) names through its
# pipe; until it does, their requests wait here, wait_ms at most (see
# _store_relay.py).
RELAY = 14
# key, amount, key, amount... -> each one's new value, in order, or an
# empty field where the key's value is no number (that add not made): ADDs
# a relay's link sends up together (a key twice is added to twice, in turn).
MADD = 15
# Statuses.
OK, TIMEOUT, ERROR = 0, 1, 2


def mac(secret: bytes, who: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    """What ``who`` (b"client" or b"server") proves with."""
    return hmac.new(secret, b"hcg-store " + who + server_nonce + client_nonce,
                    hashlib.sha256).digest()


def frame(head: int, fields: Sequence[bytes]) -> bytes:
    """A frame of a head byte (operation or status) and fields."""
    parts = [bytes([head])]
    for f in fields:
        parts.append(struct.pack(">I", len(f)))
        parts.append(f)
    body = b"".join(parts)
    return struct.pack(">I", len(body)) + body


def fields(body: bytes) -> Tuple[int, List[bytes]]:
    """The head byte and fields of a frame's body (ValueError when it is
    not one)."""
    if not body:
        raise ValueError("empty frame")
    out, i = [], 1
    while i < len(body):
        if i + 4 > len(body):
            raise ValueError("truncated field length")
        (n,) = struct.unpack_from(">I", body, i)
        i += 4
        if i + n > len(body):
            raise ValueError("truncated field")
        out.append(body[i:i + n])
        i += n
    return body[0], out


def valid_host(host: str) -> bool:
    """Whether ``host`` is one IP address or host name and nothing else:
    printable ASCII without a space, at most MAX_HOST characters."""
    if not 0 < len(host) <= MAX_HOST or not all(33 <= ord(c) < 127 for c in host):
        return False
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        pass
    labels = (host[:-1] if host.endswith(".") else host).split(".")
    return all(0 < len(label) <= 63 and not label.startswith("-")
               and all(c.isalnum() or c in "-_" for c in label) for label in labels)


def start_line(host: str, port: int, handshake_s: float, max_stored: int,
               pid: int, secret: bytes) -> bytes:
    """The line that starts a server (ValueError when a field cannot be
    written unambiguously)."""
    if not valid_host(host):
        raise ValueError("%r is not one IP address or host name" % host)
    if len(secret) != SECRET_BYTES:
        raise ValueError("the secret has %d bytes, not %d" % (len(secret), SECRET_BYTES))
    handshake_ms = int(round(handshake_s * 1000))
    if not 0 <= port < 65536 or not 0 < handshake_ms <= 3600 * 1000 \
            or max_stored <= 0 or pid <= 0:
        raise ValueError("a field out of range")
    return ("%s %s %d %d %d %d %s\n" % (START, host, port, handshake_ms, max_stored,
                                        pid, secret.hex())).encode("ascii")


def parse_start(line: bytes) -> Tuple[str, int, float, int, int, bytes]:
    """host, port, handshake_s, max_stored, pid, secret of a start line
    (ValueError, saying which field, when it is not one)."""
    parts = line[:-1].split(b" ") if line.endswith(b"\n") else []
    if len(parts) != 7 or parts[0] != START.encode():
        raise ValueError("the start line is not '%s' and six fields" % START)
    host = parts[1].decode("ascii", "replace")
    if not valid_host(host):
        raise ValueError("%r is not one IP address or host name" % host)
    numbers = []
    for name, field in zip(("port", "handshake", "max_stored", "pid"), parts[2:6]):
        if not field.isdigit() or len(field) > 18:
            raise ValueError("the %s field is not a number" % name)
        numbers.append(int(field))
    port, handshake_ms, max_stored, pid = numbers
    if port > 65535 or handshake_ms == 0 or max_stored == 0 or pid == 0:
        raise ValueError("a field out of range")
    secret_hex = parts[6].decode("ascii", "replace")
    if len(secret_hex) != 2 * SECRET_BYTES or \
            not all(c in "0123456789abcdef" for c in secret_hex):
        raise ValueError("the secret is not %d hex digits" % (2 * SECRET_BYTES))
    return host, port, handshake_ms / 1000.0, max_stored, pid, bytes.fromhex(secret_hex)


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
        return MAX_WAIT_MS
    return min(int(digits), MAX_WAIT_MS)


class _NotProtocol(Exception):
    """A request that is not of this protocol: a client's bug, its
    connection is closed."""


def _cost(key: bytes, value: bytes) -> int:
    return len(key) + len(value) + ENTRY_COST


class _Conn:
    """One connection the server holds."""

    __slots__ = ("sock", "inbuf", "outbuf", "mask", "proven", "nonce", "born",
                 "blocked", "waits", "forwarded", "answers", "queued")

    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.mask = 0  # the events the selector watches for it (0: none)
        self.proven = False
        self.nonce = os.urandom(NONCE)
        self.born = now
        # The untagged request it awaits the answer of (a _Wait, or a
        # request forwarded to a relay's upstream): its client sends
        # nothing more before that answer, and nothing more is served.
        self.blocked: Optional[object] = None
        self.waits: Set["_Wait"] = set()  # its parked waits, tagged or not
        self.forwarded = 0  # its requests sent up a relay's link, unanswered
        self.answers = 0  # answers sent so far: tells one already answered
        self.queued = False  # in the loop's work queue


class _Wait:
    """A request parked until its keys all exist or its deadline passes."""

    __slots__ = ("conn", "tag", "op", "keys", "active")

    def __init__(self, conn: _Conn, tag: Optional[bytes], op: int,
                 keys: List[bytes]) -> None:
        self.conn, self.tag, self.op, self.keys = conn, tag, op, keys
        self.active = True


Entry = Tuple[float, int, _Wait]


class Loop:
    """The server's state and event loop (one thread). ``control`` is a
    descriptor whose end of file stops it; ``parent`` rank 0's pid, whose
    death stops it too (watched through ``parent_fd``, a pidfd, where there
    is one, else by polling getppid())."""

    def __init__(self, listener: socket.socket, secret: bytes,
                 handshake_s: float, control: int, parent: int = 0,
                 parent_fd: Optional[int] = None, max_stored: int = MAX_STORED) -> None:
        self.listener = listener
        self.secret = secret
        self.handshake_s = handshake_s
        self.control = control
        self.parent = parent
        self.parent_fd = parent_fd
        self.max_stored = max_stored
        self.data: Dict[bytes, bytes] = {}
        self.stored = 0  # what data costs (see _cost)
        self.waiting: Dict[bytes, Set[_Wait]] = {}
        self.conns: Set[_Conn] = set()
        # Unproven connections, oldest first: whom to shed, whom to expire.
        self.fresh: "collections.OrderedDict[_Conn, None]" = collections.OrderedDict()
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
        self.work: Deque[_Conn] = collections.deque()
        self.dirty: Set[_Conn] = set()  # whose watched events may change
        self.listening = True
        self.paused_until = 0.0
        self.reports = 0
        # Over the server's life: connections proven, requests handled
        # (what it served, for the tests and benchmarks of its load).
        self.proven = 0
        self.requests = 0
        # The tag of the request being handled (TAGGED), for its answer.
        self.tag: Optional[bytes] = None
        self.relays = _store_relay.Relays(self, sys.modules[__name__])
        self.sel = selectors.DefaultSelector()
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
                            self._report(exc)  # a bug: pause, as out of descriptors
                            self.paused_until = time.monotonic() + ACCEPT_PAUSE_S
                    elif key.data == "control":
                        data = os.read(self.control, 4096)
                        if not data:
                            return  # rank 0 closed the store, or died
                        try:
                            self.relays.command_bytes(data)
                        except ValueError as exc:
                            # Its own rank's bug: said, and the store goes on.
                            self._report(exc)
                        self._drain()
                    elif key.data == "parent":
                        return  # rank 0 died (a child of it may hold the pipe)
                    elif isinstance(key.data, _store_relay.Link):
                        self.relays.event(key.data, mask)
                    else:
                        self._guard(self._event, key.data, mask)
                self._drain()
                self._expire(time.monotonic())
                self.relays.retry(time.monotonic())
                self._drain()
                if self.parent_fd is None and self.parent and os.getppid() != self.parent:
                    return  # rank 0 died: this process has another parent now
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

    def _guard(self, fn: Callable[..., Any], conn: _Conn, *args: Any) -> None:
        """fn(conn, *args); an exception it raises ends that connection,
        not the server (and is reported: it is a bug)."""
        try:
            fn(conn, *args)
        except Exception as exc:  # pylint: disable=broad-except
            self._report(exc)
            self._drop(conn)

    def _report(self, exc: BaseException) -> None:
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
                self._guard(self._watch, conn)
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

    def _watch(self, conn: _Conn) -> None:
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

    def _later(self, conn: _Conn) -> None:
        """Serves conn's buffered requests from the loop, soon."""
        if conn.inbuf and not conn.queued:
            conn.queued = True
            self.work.append(conn)

    def _drain(self) -> None:
        while self.work:
            conn = self.work.popleft()
            conn.queued = False
            if conn in self.conns:
                self._guard(self._serve, conn)

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
            conn = _Conn(sock, now)
            try:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            self.conns.add(conn)
            self.fresh[conn] = None
            self._guard(self._send, conn, HELLO + conn.nonce)
            self.dirty.add(conn)

    def _shed(self, now: float) -> bool:
        """Frees the place of the oldest unproven connection if it is old
        enough: it proves itself if its answer is already there, else it is
        told BUSY and closed. Whether a place was freed."""
        if not self.fresh:
            return False
        conn = next(iter(self.fresh))
        if now - conn.born < SHED_AGE_S:
            return False
        self._guard(self._read, conn)
        if conn in self.fresh:
            try:
                conn.sock.send(bytes(conn.outbuf) + BUSY)
            except OSError:
                pass
            self._drop(conn)
        return True

    def _drop(self, conn: _Conn) -> None:
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

    def _event(self, conn: _Conn, mask: int) -> None:
        if mask & selectors.EVENT_READ:
            self._read(conn)
        if mask & selectors.EVENT_WRITE and conn in self.conns:
            self._flush(conn)

    def _send(self, conn: _Conn, data: bytes) -> None:
        conn.outbuf += data
        self._flush(conn)

    def _flush(self, conn: _Conn) -> None:
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
            self._later(conn)  # requests held back while it did not read

    def _read(self, conn: _Conn) -> None:
        if conn.proven:
            want = min(READ_CHUNK, MAX_BUFFERED_IN - len(conn.inbuf))
        else:
            want = PROOF - len(conn.inbuf)  # not a byte past the proof
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
            if len(conn.inbuf) < PROOF:
                return
            if not self._prove(conn):
                self._drop(conn)  # says nothing to who cannot prove
                return
        self._serve(conn)

    def _prove(self, conn: _Conn) -> bool:
        answer = bytes(conn.inbuf[:PROOF])
        del conn.inbuf[:PROOF]
        client_nonce = answer[len(ANSWER):len(ANSWER) + NONCE]
        want = mac(self.secret, b"client", conn.nonce, client_nonce)
        if answer[:len(ANSWER)] != ANSWER or \
                not hmac.compare_digest(answer[len(ANSWER) + NONCE:], want):
            return False
        conn.proven = True
        self.proven += 1
        self.fresh.pop(conn, None)
        self._send(conn, mac(self.secret, b"server", conn.nonce, client_nonce))
        return True

    # -- requests ---------------------------------------------------------

    def _serve(self, conn: _Conn) -> None:
        """Handles the whole requests in the connection's buffer, up to one
        that waits (its client sends nothing more before the answer), or
        until its peer has too much to read."""
        while conn in self.conns and conn.proven and conn.blocked is None \
                and len(conn.outbuf) <= MAX_BUFFERED_OUT and len(conn.inbuf) >= 4:
            (n,) = struct.unpack_from(">I", conn.inbuf, 0)
            if n == 0 or n > MAX_REQUEST:
                self._answer(conn, ERROR, [b"a request of %d bytes: the store takes at "
                                           b"most %d (MAX_REQUEST)" % (n, MAX_REQUEST)])
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
                op, f = fields(body)
                if op == TAGGED:
                    if len(f) < 2 or not 0 < len(f[0]) <= MAX_TAG or len(f[1]) != 1 \
                            or f[1][0] == TAGGED:
                        raise _NotProtocol("a tagged request that is not one")
                    self.tag = f[0]
                    op, f = f[1][0], f[2:]
                self._handle(conn, op, f)
            except (ValueError, IndexError, _NotProtocol):
                self._drop(conn)  # not this protocol: a client's bug
                return
            except Exception as exc:  # pylint: disable=broad-except
                # The server's own failure on this request: this connection
                # is told (or closed, when it was answered already, or
                # waits), the store goes on.
                self._report(exc)
                if conn.answers != answered or conn.blocked is not None:
                    self._drop(conn)
                    return
                self._answer(conn, ERROR, [b"the store failed to serve this request "
                                           b"(%s)" % type(exc).__name__.encode()])
            finally:
                self.tag = None

    def _handle(self, conn: _Conn, op: int, f: List[bytes]) -> None:
        data = self.data
        if op == RELAY:
            self.relays.register(conn, f)
            return
        if self.relays.active():
            keys = _keys_of(op, f)
            if keys:
                if not _well_formed(op, f):
                    # Never up a link: the store there would close it, and
                    # with it every other member's requests on it.
                    raise _NotProtocol("a request of the wrong fields")
                if self.relays.forward(conn, self.tag, op, f, keys):
                    return  # keys of the leader's store: its answer will come
        if op == SET and len(f) == 2:
            if self._room(conn, [(f[0], f[1])]):
                self._put(f[0], f[1])
                self._answer(conn, OK, [])
                self._changed([f[0]])
        elif op in (GET, WAIT, MGET) and len(f) >= 2 and (op != GET or len(f) == 2):
            self._park(conn, op, f[1:],
                       time.monotonic() + _deadline_ms(f[0]) / 1000.0)
        elif op == ADD and len(f) == 2:
            try:
                now = int(data.get(f[0], b"0")) + int(f[1])
            except ValueError:
                self._answer(conn, ERROR, [b"the value of key '%s' is not a number"
                                           % f[0][:200]])
                return
            value = b"%d" % now
            if self._room(conn, [(f[0], value)]):
                self._put(f[0], value)
                self._answer(conn, OK, [value])
                self._changed([f[0]])
        elif op == MADD and f and len(f) % 2 == 0:
            # Each add its own: a key whose value is no number gets an
            # empty field and is left as it is, the others are made (a
            # relay's batch holds many members' adds).
            try:
                amounts = [int(a) for a in f[1::2]]
            except ValueError:
                self._answer(conn, ERROR, [b"an amount of these adds is not a number"])
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
                self._answer(conn, OK, out)
                self._changed(list(values))
        elif op == CHECK:
            self._answer(conn, OK, [b"1" if all(k in data for k in f) else b"0"])
        elif op == CAS and len(f) == 3:
            self._compare_set(conn, f[0], f[1], f[2])
        elif op == DELETE and len(f) == 1:
            old = data.pop(f[0], None)
            if old is not None:
                self.stored -= _cost(f[0], old)
            self._answer(conn, OK, [b"1" if old is not None else b"0"])
        elif op == NUM and not f:
            self._answer(conn, OK, [b"%d" % len(data)])
        elif op == APPEND and len(f) == 2:
            value = data.get(f[0], b"") + f[1]
            if self._room(conn, [(f[0], value)]):
                self._put(f[0], value)
                self._answer(conn, OK, [])
                self._changed([f[0]])
        elif op == MSET and len(f) % 2 == 0:
            pairs = dict(zip(f[0::2], f[1::2]))  # the last of a key wins
            if self._room(conn, list(pairs.items())):
                for k, v in pairs.items():
                    self._put(k, v)
                self._answer(conn, OK, [])
                self._changed(list(pairs))
        elif op == STATS and not f:
            self._answer(conn, OK, self._stats())
        else:
            raise _NotProtocol("unknown request")

    def _room(self, conn: _Conn, writes: Sequence[Tuple[bytes, bytes]]) -> bool:
        """Whether the store may take these writes, within MAX_VALUE and
        its limit on what it holds; if not, conn is told which limit."""
        grow = 0
        for k, v in writes:
            if len(v) > MAX_VALUE:
                self._answer(conn, ERROR, [b"a value of %d bytes for key '%s': the "
                                           b"store holds values of at most %d bytes "
                                           b"(MAX_VALUE)" % (len(v), k[:200], MAX_VALUE)])
                return False
            old = self.data.get(k)
            grow += _cost(k, v) - (_cost(k, old) if old is not None else 0)
        if grow > 0 and self.stored + grow > self.max_stored:
            self._answer(conn, ERROR, [b"the store is full: it holds %d bytes of keys "
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

    def _compare_set(self, conn: _Conn, key: bytes, expected: bytes, desired: bytes) -> None:
        """As torch's stores: a missing key is set when ``expected`` is
        empty; a key holding ``expected`` gets ``desired``; the answer is
        the value now (``expected`` for a key still missing)."""
        current = self.data.get(key)
        if (current is None and expected == b"") or current == expected:
            if self._room(conn, [(key, desired)]):
                self._put(key, desired)
                self._answer(conn, OK, [desired])
                self._changed([key])
        else:
            self._answer(conn, OK, [expected if current is None else current])

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

    def _answer(self, conn: _Conn, status: int, out: Sequence[bytes]) -> None:
        """Answers the request being handled (with its tag, if it has one)."""
        self.reply(conn, self.tag, status, out)

    def reply(self, conn: _Conn, tag: Optional[bytes], status: int,
              out: Sequence[bytes]) -> None:
        """Answers a request of conn: a tagged one with its tag first."""
        conn.answers += 1
        self._send(conn, frame(status, out if tag is None else [tag] + list(out)))

    def unblock(self, conn: _Conn) -> None:
        """conn's untagged request was answered: serve what follows it."""
        conn.blocked = None
        self._later(conn)

    def _answer_wait(self, wait: _Wait) -> None:
        """Answers a wait whose keys all exist."""
        conn, op, keys = wait.conn, wait.op, wait.keys
        if op == WAIT:
            self.reply(conn, wait.tag, OK, [])
            return
        values = [self.data[k] for k in keys]
        size = 1 + sum(4 + len(v) for v in values)
        if size > MAX_ANSWER:
            self.reply(conn, wait.tag, ERROR, [
                b"an answer of %d bytes: the store sends at most %d (MAX_ANSWER); "
                b"get fewer keys at once" % (size, MAX_ANSWER)])
        else:
            self.reply(conn, wait.tag, OK, values)

    def _park(self, conn: _Conn, op: int, keys: List[bytes], deadline: float) -> None:
        wait = _Wait(conn, self.tag, op, keys)
        if all(k in self.data for k in keys):
            self._answer_wait(wait)
            return
        if wait.tag is not None and len(conn.waits) >= MAX_TAGGED:
            self._answer(conn, ERROR, [b"%d tagged waits at once on one connection: "
                                       b"the store parks at most %d (MAX_TAGGED)"
                                       % (len(conn.waits), MAX_TAGGED)])
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

    def _unpark(self, wait: _Wait) -> None:
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

    def _wake(self, conn: _Conn, wait: _Wait) -> None:
        """Answers a parked wait if its keys all exist now; its connection's
        next requests are served from the loop (see ``work``)."""
        if not wait.active:
            return
        if all(k in self.data for k in wait.keys):
            self._unpark(wait)
            self._answer_wait(wait)
            self._later(conn)

    def _changed(self, keys: Sequence[bytes]) -> None:
        for k in keys:
            for wait in list(self.waiting.get(k, ())):
                self._guard(self._wake, wait.conn, wait)

    def _timeout(self, conn: _Conn, wait: _Wait) -> None:
        self._unpark(wait)
        self.reply(conn, wait.tag, TIMEOUT, [])
        self._later(conn)

    def _expire(self, now: float) -> None:
        while self.dues and self.dues[0][0] <= now:
            wait = heapq.heappop(self.dues)[2]
            if wait.active and wait.conn in self.conns:
                self._guard(self._timeout, wait.conn, wait)
        while self.fresh:
            conn = next(iter(self.fresh))
            if conn.born + self.handshake_s > now:
                break
            self._guard(self._read, conn)  # an answer that came meanwhile
            if conn in self.fresh:
                self._drop(conn)  # never proved itself


def _well_formed(op: int, f: List[bytes]) -> bool:
    """Whether a request has the fields its operation takes (as _handle
    reads them)."""
    if op in (SET, ADD, APPEND):
        return len(f) == 2
    if op == GET:
        return len(f) == 2
    if op in (WAIT, MGET):
        return len(f) >= 2
    if op == MADD:
        return len(f) >= 2 and len(f) % 2 == 0
    if op == CAS:
        return len(f) == 3
    if op == DELETE:
        return len(f) == 1
    if op == MSET:
        return len(f) % 2 == 0
    return op == CHECK


def _keys_of(op: int, f: List[bytes]) -> List[bytes]:
    """The keys a request names (none for NUM and STATS)."""
    if op in (SET, ADD, CAS, DELETE, APPEND):
        return f[:1]
    if op in (GET, WAIT, MGET):
        return f[1:]
    if op == CHECK:
        return f
    if op in (MSET, MADD):
        return f[0::2]
    return []


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
    """A pidfd of rank 0 (readable once it ends), or None where the kernel
    or Python has none (then the loop polls getppid())."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        return int(pidfd_open(pid))
    except OSError:
        return None


def main() -> int:
    # A Ctrl-C reaches the whole step: rank 0 decides, and closes the store.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _raise_nofile()
    line = sys.stdin.buffer.readline(4096)
    try:
        host, port, handshake_s, max_stored, parent, secret = parse_start(line)
        parent_fd = _watch_parent(parent)
        if os.getppid() != parent:  # checked after pidfd_open: no pid reuse
            raise ValueError("the process that started the store (%d) is gone" % parent)
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM)[0]
        listener = socket.socket(family, kind, proto)
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


if __name__ == "__main__":
    sys.exit(main())
