"""What the job store's server holds for each connection (a :class:`Conn`)
and each request parked until its keys exist (a :class:`Wait`): the state
that the server's loop (_store_server.py) and its relays
(_store_relay.py) both read and change, in a module below both of them.

Only the standard library (the store's process imports it).
"""

from __future__ import annotations

import os
import socket
from typing import List, Optional, Set

from . import _store_proto as proto


class Conn:
    """One connection the server holds."""

    __slots__ = ("sock", "inbuf", "outbuf", "mask", "proven", "nonce", "born",
                 "blocked", "waits", "forwarded", "answers", "queued")

    def __init__(self, sock: socket.socket, now: float) -> None:
        self.sock = sock
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.mask = 0  # the events the selector watches for it (0: none)
        self.proven = False
        self.nonce = os.urandom(proto.NONCE)
        self.born = now
        # The untagged request it awaits the answer of (a Wait, or a
        # request forwarded to a relay's upstream): its client sends
        # nothing more before that answer, and nothing more is served.
        self.blocked: Optional[object] = None
        self.waits: Set[Wait] = set()  # its parked waits, tagged or not
        self.forwarded = 0  # its requests sent up a relay's link, unanswered
        self.answers = 0  # answers sent so far: tells one already answered
        self.queued = False  # in the loop's work queue


class Wait:
    """A request parked until its keys all exist or its deadline passes."""

    __slots__ = ("conn", "tag", "op", "keys", "active")

    def __init__(self, conn: Conn, tag: Optional[bytes], op: int,
                 keys: List[bytes]) -> None:
        self.conn, self.tag, self.op, self.keys = conn, tag, op, keys
        self.active = True
