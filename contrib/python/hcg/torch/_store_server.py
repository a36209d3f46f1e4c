"""The job store's server and its protocol (see store.py, which starts it
and holds the client).

Runs as a process of its own, a child of rank 0, so that serving the
whole job never takes rank 0's interpreter lock while it trains:

    python3 -I -S _store_server.py

Its standard input brings one line, ``HOST PORT HANDSHAKE_S SECRET_HEX``
(the secret never appears in its environment or command line), then stays
open: the server ends when it closes, which is when rank 0 closes the
store or dies. It answers on standard output with one line, ``PORT`` it
listens on, or ``ERROR reason``. Only the standard library: the process
imports neither torch nor hcg.

The protocol. On a new connection the server sends ``HCGS`` and a random
32-byte challenge; the client sends ``HCGC``, a challenge of its own and
HMAC-SHA256(secret, "hcg-store client" + both challenges); the server
checks it in constant time and answers HMAC-SHA256(secret, "hcg-store
server" + both challenges). Nothing else is read from a connection before
that: one that answers wrongly is closed at once, one that does not answer
after HANDSHAKE_S seconds. Then a request is a frame, a 4-byte big-endian
length and a body: an operation byte and fields, each a 4-byte length and
its bytes; an answer is a status byte and fields, in a frame. A request
that waits for keys is parked until they all exist or its deadline
passes, and answered either way.
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import os
import selectors
import signal
import socket
import struct
import sys
import time
from typing import Dict, List, Optional, Sequence, Set, Tuple

HELLO = b"HCGS"
ANSWER = b"HCGC"
NONCE = 32
MAC = 32
#: Bytes a client sends before it is trusted (nothing more is read).
PROOF = len(ANSWER) + NONCE + MAC
#: Connections still proving themselves; more are closed at once.
MAX_UNPROVEN = 1024
#: Largest request or answer (values are addresses and ids, small).
MAX_FRAME = 64 << 20

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


class _Conn:
    """One connection the server holds."""

    __slots__ = ("sock", "inbuf", "outbuf", "writing", "proven", "nonce",
                 "parked", "parks")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.writing = False  # registered for EVENT_WRITE
        self.proven = False
        self.nonce = os.urandom(NONCE)
        # The request waiting for keys: (op, keys, deadline).
        self.parked: Optional[Tuple[int, List[bytes], float]] = None
        self.parks = 0  # requests parked so far: tells a stale deadline


class Loop:
    """The server's state and event loop (one thread). ``control`` is a
    descriptor whose end of file stops it."""

    def __init__(self, listener: socket.socket, secret: bytes,
                 handshake_s: float, control: int) -> None:
        self.listener = listener
        self.secret = secret
        self.handshake_s = handshake_s
        self.control = control
        self.data: Dict[bytes, bytes] = {}
        self.waiting: Dict[bytes, Set[_Conn]] = {}
        self.conns: Set[_Conn] = set()
        self.unproven = 0
        # (deadline, sequence, conn, parks or -1 for the handshake)
        self.dues: List[Tuple[float, int, _Conn, int]] = []
        self.seq = 0
        self.sel = selectors.DefaultSelector()
        listener.setblocking(False)
        self.sel.register(listener, selectors.EVENT_READ, "accept")
        self.sel.register(control, selectors.EVENT_READ, "control")

    def run(self) -> None:
        try:
            while True:
                wait = None
                if self.dues:
                    wait = max(0.0, self.dues[0][0] - time.monotonic())
                for key, mask in self.sel.select(wait):
                    if key.data == "accept":
                        self._accept()
                    elif key.data == "control":
                        if not os.read(self.control, 4096):
                            return  # rank 0 closed the store, or died
                    else:
                        conn = key.data
                        if mask & selectors.EVENT_READ:
                            self._read(conn)
                        if mask & selectors.EVENT_WRITE and conn in self.conns:
                            self._flush(conn)
                self._expire(time.monotonic())
        finally:
            for conn in list(self.conns):
                self._drop(conn)
            self.sel.close()
            self.listener.close()

    def _due(self, when: float, conn: _Conn, parks: int) -> None:
        self.seq += 1
        heapq.heappush(self.dues, (when, self.seq, conn, parks))

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # out of descriptors: the next event tries again
            if self.unproven >= MAX_UNPROVEN:
                sock.close()
                continue
            sock.setblocking(False)
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
            conn = _Conn(sock)
            self.conns.add(conn)
            self.unproven += 1
            self._due(time.monotonic() + self.handshake_s, conn, -1)
            self.sel.register(sock, selectors.EVENT_READ, conn)
            self._send(conn, HELLO + conn.nonce)

    def _drop(self, conn: _Conn) -> None:
        if conn not in self.conns:
            return
        self.conns.discard(conn)
        if not conn.proven:
            self.unproven -= 1
        self._unpark(conn)
        try:
            self.sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()

    def _send(self, conn: _Conn, data: bytes) -> None:
        conn.outbuf += data
        self._flush(conn)
        if conn in self.conns and conn.outbuf and not conn.writing:
            conn.writing = True
            self.sel.modify(conn.sock, selectors.EVENT_READ | selectors.EVENT_WRITE, conn)

    def _flush(self, conn: _Conn) -> None:
        try:
            sent = conn.sock.send(conn.outbuf)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._drop(conn)
            return
        del conn.outbuf[:sent]
        if not conn.outbuf and conn.writing:
            conn.writing = False
            self.sel.modify(conn.sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Conn) -> None:
        try:
            data = conn.sock.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(conn)
            return
        conn.inbuf += data
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
        self.unproven -= 1
        self._send(conn, mac(self.secret, b"server", conn.nonce, client_nonce))
        return True

    def _serve(self, conn: _Conn) -> None:
        """Handles the whole requests in the connection's buffer, up to one
        that waits (its client sends nothing more before the answer)."""
        while conn in self.conns and conn.parked is None and len(conn.inbuf) >= 4:
            (n,) = struct.unpack_from(">I", conn.inbuf, 0)
            if n == 0 or n > MAX_FRAME:
                self._drop(conn)
                return
            if len(conn.inbuf) < 4 + n:
                return
            body = bytes(conn.inbuf[4:4 + n])
            del conn.inbuf[:4 + n]
            try:
                op, f = fields(body)
                self._handle(conn, op, f)
            except (ValueError, IndexError):
                self._drop(conn)  # not this protocol: a client's bug
                return

    def _handle(self, conn: _Conn, op: int, f: List[bytes]) -> None:
        data = self.data
        if op == SET and len(f) == 2:
            data[f[0]] = f[1]
            self._answer(conn, OK, [])
            self._changed([f[0]])
        elif op in (GET, WAIT, MGET) and len(f) >= 2 and (op != GET or len(f) == 2):
            self._park(conn, op, f[1:], time.monotonic() + int(f[0]) / 1000.0)
        elif op == ADD and len(f) == 2:
            try:
                now = int(data.get(f[0], b"0")) + int(f[1])
            except ValueError:
                self._answer(conn, ERROR, [b"the value of key '%s' is not a number"
                                           % f[0][:200]])
                return
            data[f[0]] = b"%d" % now
            self._answer(conn, OK, [data[f[0]]])
            self._changed([f[0]])
        elif op == CHECK:
            self._answer(conn, OK, [b"1" if all(k in data for k in f) else b"0"])
        elif op == CAS and len(f) == 3:
            self._compare_set(conn, f[0], f[1], f[2])
        elif op == DELETE and len(f) == 1:
            self._answer(conn, OK, [b"1" if data.pop(f[0], None) is not None else b"0"])
        elif op == NUM and not f:
            self._answer(conn, OK, [b"%d" % len(data)])
        elif op == APPEND and len(f) == 2:
            data[f[0]] = data.get(f[0], b"") + f[1]
            self._answer(conn, OK, [])
            self._changed([f[0]])
        elif op == MSET and len(f) % 2 == 0:
            for i in range(0, len(f), 2):
                data[f[i]] = f[i + 1]
            self._answer(conn, OK, [])
            self._changed(f[0::2])
        else:
            raise ValueError("unknown request")

    def _compare_set(self, conn: _Conn, key: bytes, expected: bytes, desired: bytes) -> None:
        """As torch's stores: a missing key is set when ``expected`` is
        empty; a key holding ``expected`` gets ``desired``; the answer is
        the value now (``expected`` for a key still missing)."""
        current = self.data.get(key)
        if (current is None and expected == b"") or current == expected:
            self.data[key] = desired
            self._answer(conn, OK, [desired])
            self._changed([key])
        else:
            self._answer(conn, OK, [expected if current is None else current])

    def _answer(self, conn: _Conn, status: int, out: Sequence[bytes]) -> None:
        self._send(conn, frame(status, out))

    def _ready(self, conn: _Conn) -> bool:
        """Answers a parked request whose keys all exist now."""
        assert conn.parked is not None
        op, keys, _ = conn.parked
        if not all(k in self.data for k in keys):
            return False
        self._unpark(conn)
        self._answer(conn, OK, [self.data[k] for k in keys] if op != WAIT else [])
        return True

    def _park(self, conn: _Conn, op: int, keys: List[bytes], deadline: float) -> None:
        conn.parked = (op, keys, deadline)
        conn.parks += 1
        if self._ready(conn):
            return
        for k in keys:
            if k not in self.data:
                self.waiting.setdefault(k, set()).add(conn)
        self._due(deadline, conn, conn.parks)

    def _unpark(self, conn: _Conn) -> None:
        if conn.parked is None:
            return
        for k in conn.parked[1]:
            waiters = self.waiting.get(k)
            if waiters is not None:
                waiters.discard(conn)
                if not waiters:
                    del self.waiting[k]
        conn.parked = None

    def _changed(self, keys: Sequence[bytes]) -> None:
        for k in keys:
            for conn in list(self.waiting.get(k, ())):
                if conn.parked is not None and self._ready(conn) and conn.inbuf:
                    self._serve(conn)

    def _expire(self, now: float) -> None:
        while self.dues and self.dues[0][0] <= now:
            _, _, conn, parks = heapq.heappop(self.dues)
            if conn not in self.conns:
                continue
            if parks < 0:
                if not conn.proven:
                    self._drop(conn)  # never proved itself
            elif conn.parked is not None and conn.parks == parks:
                self._unpark(conn)
                self._answer(conn, TIMEOUT, [])
                if conn.inbuf:
                    self._serve(conn)


def main() -> int:
    # A Ctrl-C reaches the whole step: rank 0 decides, and closes the store.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    line = sys.stdin.buffer.readline().decode("ascii", "replace").split()
    try:
        host, port, handshake_s, secret = line[0], int(line[1]), float(line[2]), \
            bytes.fromhex(line[3])
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
    Loop(listener, secret, handshake_s, sys.stdin.fileno()).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
