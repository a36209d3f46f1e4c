"""The job store's wire protocol, the one description that the client
(store.py, _store_client.py, _store_dial.py), the server (_store_server.py)
and the server's links up a relay (_store_relay.py) all import.

The handshake. On a new connection the server sends ``HELLO`` and a
random challenge of NONCE bytes; the client sends ``ANSWER``, a challenge
of its own and :func:`mac` (the client's); the server checks it in
constant time and answers with its own :func:`mac`. Nothing else is read
from a connection before that. A connection the server sheds to make room
for newer ones gets ``BUSY`` instead, before it is closed: its client
tries again, where a wrong secret gets a close without a word.

The requests. A request is a frame (:func:`frame`: a 4-byte big-endian
length and a body): an operation byte and fields, each a 4-byte length
and its bytes; an answer is a status byte and fields, in a frame
(:func:`fields` reads either). A request that waits for keys is parked
until they all exist or its deadline passes, and answered either way. A
request may come tagged (``TAGGED``: a tag, the operation, its fields): its
answer starts with the tag and may come before those of earlier requests,
so that a tagged wait holds nothing up.

The start line (:func:`start_line`, :func:`parse_start`) is what the rank
writes first on its store process's standard input.

Only the standard library: the store's process imports this module too,
with neither torch nor hcg.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import struct
from typing import Callable, Dict, Final, List, NamedTuple, Sequence, Tuple, Union

HELLO: Final = b"HCGS"
ANSWER: Final = b"HCGC"
#: Sent instead of the server's proof to a connection shed for room.
BUSY: Final = b"HCGB"
NONCE: Final = 32
MAC: Final = 32
#: Bytes a client sends before it is trusted (nothing more is read).
PROOF: Final = len(ANSWER) + NONCE + MAC
#: The job's secret: 128 random bits (hcg.torch.rendezvous draws them).
SECRET_BYTES: Final = 16
#: The first field of the start line: this protocol's version, so that a
#: line of another version is refused rather than misread.
START: Final = "hcg-store-1"
#: The longest host name (RFC 1035: 253 characters written out).
MAX_HOST: Final = 253

#: Largest request frame the server reads. torch and hcg store keys and
#: values of a few hundred bytes (addresses, NCCL unique ids of 128 bytes,
#: counters, hcg's failure reports of a few KiB); a megabyte leaves room
#: for thousands of them in one multi_set. A longer frame ends its
#: connection (the client refuses to send one).
MAX_REQUEST: Final = 1 << 20
#: Largest value a key may hold (append grows one): as large as a request.
MAX_VALUE: Final = MAX_REQUEST
#: Largest answer: a multi_get of many values. The client refuses a frame
#: longer than this; the server answers an error instead of one.
MAX_ANSWER: Final = 16 << 20
#: Default bound on what a store holds, which the start line carries: the
#: length of every key and value plus the server's cost of each entry. A
#: job of 16384 ranks that makes 30 groups each writes some 500,000 keys of
#: a few hundred bytes, about 200 MB with their cost; 512 MiB leaves room
#: for that and stops a program that writes without end before it takes
#: its store's node's memory. A write past it is answered with an error
#: that names the limit.
MAX_STORED: Final = 512 << 20
#: Longest wait a request may ask for: a year. Longer ones (torch's
#: timedelta.max, a deadline of 400 digits) are clamped to it.
MAX_WAIT_MS: Final = 366 * 86400 * 1000
#: Longest tag of a TAGGED request (a relay's are 8 bytes).
MAX_TAG: Final = 16
#: Tagged waits one connection may have parked at once, and requests it
#: may have forwarded up a relay's link unanswered: a relay's link carries
#: the requests of the members it serves (a slice, at most libhcg's
#: fan-in), each of which waits for one answer at a time.
MAX_TAGGED: Final = 4096

# Operations: the fields they take -> what they answer.
SET: Final = 1  # key, value -> ()
GET: Final = 2  # deadline_ms, key -> value (waits)
ADD: Final = 3  # key, amount -> new value, as decimal text
CHECK: Final = 4  # keys... -> b"1" when all exist, else b"0"
WAIT: Final = 5  # deadline_ms, keys... -> () (waits)
CAS: Final = 6  # key, expected, desired -> the value now (as torch's stores)
DELETE: Final = 7  # key -> b"1" when it existed, else b"0"
NUM: Final = 8  # () -> how many keys, as decimal text
APPEND: Final = 9  # key, value -> ()
MGET: Final = 10  # deadline_ms, keys... -> values (waits)
MSET: Final = 11  # key, value, key, value... -> ()
STATS: Final = 12  # () -> b"name=number" fields: what the server holds (tests)
# tag, op, op's fields... -> tag, the op's answer. The answer may come out
# of order: a tagged wait holds nothing up (a relay's link).
TAGGED: Final = 13
# prefix, wait_ms, rank -> (): the prefix's keys are relayed from this
# store, to the store its rank (``rank``, for messages) names through its
# pipe; until it does, their requests wait there, wait_ms at most
# (_store_relay.py). It carries no address and no key.
RELAY: Final = 14
# key, amount, key, amount... -> each one's new value, in order, or an
# empty field where the key's value is no number (that add not made): ADDs
# a relay's link sends up together (a key twice is added to twice, in turn).
MADD: Final = 15
# Statuses.
OK: Final = 0
TIMEOUT: Final = 1
ERROR: Final = 2


class Shape(NamedTuple):
    """What an operation on keys takes: where its keys are among its
    fields, and which numbers of fields it accepts."""

    keys: slice
    takes: Callable[[int], bool]


#: The operations that name keys (a relay forwards them by their keys);
#: those absent (NUM, STATS, TAGGED, RELAY) name none.
SHAPES: Final[Dict[int, Shape]] = {
    SET: Shape(slice(0, 1), lambda n: n == 2),
    GET: Shape(slice(1, None), lambda n: n == 2),
    ADD: Shape(slice(0, 1), lambda n: n == 2),
    CHECK: Shape(slice(0, None), lambda n: True),
    WAIT: Shape(slice(1, None), lambda n: n >= 2),
    CAS: Shape(slice(0, 1), lambda n: n == 3),
    DELETE: Shape(slice(0, 1), lambda n: n == 1),
    APPEND: Shape(slice(0, 1), lambda n: n == 2),
    MGET: Shape(slice(1, None), lambda n: n >= 2),
    MSET: Shape(slice(0, None, 2), lambda n: n % 2 == 0),
    MADD: Shape(slice(0, None, 2), lambda n: n >= 2 and n % 2 == 0),
}
#: The operations that wait for their keys (their first field a deadline).
WAITS: Final = (GET, WAIT, MGET)


def keys_of(op: int, f: List[bytes]) -> List[bytes]:
    """The keys a request names (none for an operation on no key)."""
    shape = SHAPES.get(op)
    return f[shape.keys] if shape is not None else []


def well_formed(op: int, f: List[bytes]) -> bool:
    """Whether a request on keys has the fields its operation takes."""
    shape = SHAPES.get(op)
    return shape is not None and shape.takes(len(f))


def encode(value: Union[str, bytes, bytearray, Sequence[int]]) -> bytes:
    """A key or value as it goes on the wire: str as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return bytes(value)


def mac(secret: bytes, who: bytes, server_nonce: bytes, client_nonce: bytes) -> bytes:
    """What ``who`` (b"client" or b"server") proves with:
    HMAC-SHA256(secret, "hcg-store WHO" + both challenges)."""
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
    """The line that starts a server, seven fields separated by one space
    each: ``START HOST PORT HANDSHAKE_MS MAX_STORED PID SECRET``, SECRET in
    32 hex digits, PID the rank's that hosts the store (ValueError when a
    field cannot be written unambiguously)."""
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
