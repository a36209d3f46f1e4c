"""Where the members of a step meet before torch connects them, and where a
member that fails tells the others.

A step is the default group (hcg.torch.init) or one process group. Its
members check in under the step's store prefix and wait until all have:
only then does torch connect them (gloo's full mesh, which would otherwise
wait for a missing or failed member until its timeout without saying who).
A member that fails before or while connecting writes its failure there,
and every member still waiting learns it at once, with the rank and its
reason: a :class:`hcg.PeerError`. Where a step meets through slices'
heads, a failure travels as doc/architecture.md ("How a failure
travels") writes once for hcg.torch and libhcg's agreement alike; this
module is its keys and its waits.

Keys under the step's prefix (a ``PrefixStore``):

``hcg_in/I``
    member I (its index in the step) checked in (names the absent ones);
``hcg_arrived``
    how many members checked in;
``hcg_go``
    ``ok`` once every member checked in, or the first failure reported
    before that; the first value written stays (``compare_set``);
``hcg_decided``
    set right after ``hcg_go``: what the members wait for (torch 1.13's
    store does not wake a waiter for a key ``compare_set`` wrote);
``hcg_failed``, ``hcg_nfailed``
    the first failure reported at any time, and how many were (a counter,
    so that reading whether there is one never waits);
``hcg_settled``
    where asked (the default group): how many members are done with the
    step, having read its outcome or reported their own failure. The store's
    host waits for them all before it leaves a failed step, so that none
    finds the store gone instead of the reason;
``hcg_left``
    where asked (a group's meeting): how many of the members that checked
    in left the step without its ``ok`` (timed out, read a failure), each
    after it read what it needed; the store's host waits for them (see
    :func:`outlast`).

A failure is ``"RANK CODE MESSAGE"``: the failed rank, its hcg status
number and its error message.
"""

from __future__ import annotations

import datetime
import re
import time
from typing import Any, Callable, List, Optional, Sequence, Tuple

from ..errors import (HcgError, HcgRuntimeError, HcgTimeoutError,
                      HcgValueError, PeerError, Status, status_name)
from ._base import Store

_IN = "hcg_in/%d"
_ARRIVED = "hcg_arrived"
_GO = "hcg_go"
_DECIDED = "hcg_decided"
_FAILED = "hcg_failed"
_NFAILED = "hcg_nfailed"
_SETTLED = "hcg_settled"
_LEFT = "hcg_left"
_OK = "ok"
#: Longest reason written to the store (a message, not a log).
_REASON_MAX = 2000


class Cancelled(Exception):
    """The step's wait ended on a failure this rank reported itself (it
    failed in another step first); that other failure is the one to raise."""


def first_line(exc: BaseException) -> str:
    """The first line of an exception's text, or its type's name."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def span(members: Sequence[int]) -> str:
    """Members for a message: all of them up to 8, else the first 6 and
    the count."""
    if len(members) > 8:
        return "%s, ... %d in all" % (", ".join(map(str, members[:6])),
                                      len(members))
    return ", ".join(map(str, members))


def _text(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _parse(value: Any) -> Optional[PeerError]:
    """A PeerError (without the step's words yet) from a failure value."""
    parts = _text(value).split(" ", 2)
    if len(parts) < 3 or not parts[0].isdigit() or not parts[1].isdigit():
        return None
    return PeerError(int(parts[1]), parts[2], int(parts[0]), parts[2])


def _peer_error(what: str, failure: PeerError) -> PeerError:
    code = status_name(failure.code)
    return PeerError(failure.code, "%s cannot form: rank %d failed: %s: %s"
                     % (what, failure.rank, code, failure.reason),
                     failure.rank, failure.reason)


def missing(store: Store, members: Sequence[int]) -> List[int]:
    """The members that never checked in; [] when the store cannot tell."""
    out = []
    for i, m in enumerate(members):
        try:
            # add(key, 0) reads a counter without waiting (torch 1.13's
            # Python stores have no check()).
            if store.add(_IN % i, 0) == 0:
                out.append(m)
        except Exception:  # pylint: disable=broad-except
            return []
    return out


def failure(store: Store) -> Optional[PeerError]:
    """The first failure a member reported on this step, if any (never
    waits; None when the store cannot tell)."""
    try:
        if store.add(_NFAILED, 0) == 0:
            return None
        return _parse(store.get(_FAILED))
    except Exception:  # pylint: disable=broad-except
        return None


def describe_exception(exc: BaseException) -> str:
    """An exception hcg did not expect, for a message: its type's name and
    the first line of its text (``ZeroDivisionError: division by zero``)."""
    text = str(exc).strip()
    name = type(exc).__name__
    return "%s: %s" % (name, text.splitlines()[0]) if text else name


def report(store: Store, rank: int, exc: BaseException, settle: int = 0) -> bool:
    """Tells the step's members that ``rank`` failed with ``exc``: members
    still waiting to meet raise a PeerError now. Best effort: a store that
    is gone is left alone (the others then time out naming this rank).
    ``settle``: how many members to count as done with the step (see
    linger): True (1) for this one; more where it answers for others that
    learnt its failure elsewhere (a slice's head: its publication).
    Returns whether the store took the report."""
    message = (exc.message if isinstance(exc, HcgError)
               else describe_exception(exc))
    code = int(exc.code) if isinstance(exc, HcgError) else int(Status.EIO)
    value = "%d %d %s" % (rank, code, message[:_REASON_MAX])
    try:
        store.compare_set(_GO, "", value)
        store.set(_DECIDED, "1")
        store.compare_set(_FAILED, "", value)
        store.add(_NFAILED, 1)
        if settle:
            store.add(_SETTLED, int(settle))
    except Exception:  # pylint: disable=broad-except
        return False
    return True


def _poll(done: Callable[[], bool], deadline: float) -> None:
    """Asks ``done()`` every 50 ms until it says so, ``deadline`` (a
    ``time.monotonic()`` value) passes, or it raises (a store that is
    gone: nobody is left to wait for)."""
    while time.monotonic() < deadline:
        try:
            if done():
                return
        except Exception:  # pylint: disable=broad-except
            return
        time.sleep(0.05)


def linger(store: Store, size: int, deadline: float) -> None:
    """Waits (polling, until ``deadline``) until all ``size`` members are
    done with a failed step (``settle=True`` in meet and report): the
    member hosting the store calls it before it leaves, so that no other
    member finds the store gone instead of the failure."""
    _poll(lambda: bool(store.add(_SETTLED, 0) >= size), deadline)


def _bump(store: Store, key: str) -> None:
    """Adds one to the counter ``key``; best effort (a store that is gone
    has nobody left to tell)."""
    try:
        store.add(key, 1)
    except Exception:  # pylint: disable=broad-except
        pass


def outlast(store: Store, size: int, deadline: float) -> None:
    """Waits (polling, until ``deadline``) until every member that checked
    in to a failed step of ``size`` members (``leave=True`` in meet) has
    left it: the member hosting the store calls it before it leaves, so
    that no member still naming the absent ones finds the store gone
    instead. Returns at once for a step that went well (everyone came
    and nobody failed)."""
    def done() -> bool:
        arrived = store.add(_ARRIVED, 0)
        return bool(store.add(_LEFT, 0) >= arrived or (
            arrived >= size and store.add(_NFAILED, 0) == 0))

    _poll(done, deadline)


#: Adds a check-in makes in one request: (key, amount) pairs under the
#: step's prefix -> each key's new value.
CheckIn = Callable[[Sequence[Tuple[str, int]]], List[int]]


def check_in_by(client: Any, prefix: str) -> Optional[CheckIn]:
    """A member's check-in adds in one request, where ``client`` (the
    store under the step's ``PrefixStore(prefix, client)``) is hcg's job
    store: one request instead of two, and through a relay one entry each
    of the link's batch. None for any other store (torch's TCPStore)."""
    add_many: Optional[Callable[[List[Tuple[str, int]]], List[int]]] = \
        getattr(client, "add_many", None)
    if add_many is None:
        return None
    adder = add_many
    return lambda adds: list(adder([(prefix + "/" + key, amount) for key, amount in adds]))


def meet(store: Store, index: int, members: Sequence[int], rank: int,
         deadline: float, what: str, timeout_s: float,
         settle: bool = False, leave: bool = False,
         check_in: Optional[CheckIn] = None) -> None:
    """Checks in as member ``index`` of ``members`` and waits until every
    member has (returns), one reports a failure (:class:`hcg.PeerError`;
    :class:`Cancelled` when that was this rank itself) or ``deadline`` (a
    ``time.monotonic()`` value) passes (``HcgError(ETIMEOUT)`` naming the
    members that never arrived). ``what`` names the step in messages;
    ``timeout_s`` is the timeout they quote. ``settle``: once it read a
    failure, count this member as done with the step (see linger).
    ``leave``: once this member leaves the step without its ``ok``, having
    read all it needed, count it in ``hcg_left`` (see outlast).
    ``check_in``: how to make the check-in's two adds in one request
    (:func:`check_in_by`); None: one ``store.add`` each."""
    size = len(members)
    if size <= 1:
        return
    try:
        if check_in is not None:
            arrived = check_in([(_IN % index, 1), (_ARRIVED, 1)])[1]
        else:
            store.add(_IN % index, 1)
            arrived = store.add(_ARRIVED, 1)
        if arrived == size:
            store.compare_set(_GO, "", _OK)
            store.set(_DECIDED, "1")
    except Exception as exc:  # pylint: disable=broad-except
        raise HcgRuntimeError(Status.EIO, "%s: cannot check in at hcg.torch's store: "
                              "%s" % (what, first_line(exc))
                              ) from None
    start = time.monotonic()
    left = max(deadline - start, 0.001)
    try:
        store.wait([_DECIDED], datetime.timedelta(seconds=left))
        value = _text(store.get(_GO))
    except Exception as exc:  # pylint: disable=broad-except
        if not timed_out(exc) or time.monotonic() - start < 0.9 * left:
            # Not the timeout: the store went away (the process of the
            # rank that hosts it ended), or the connection to it broke.
            # Which store, and its rank, the client's own error says.
            raise HcgRuntimeError(Status.EIO, "%s: lost the hcg.torch store it meets "
                                  "at while waiting for its members: %s"
                                  % (what, first_line(exc))) from None
        absent = missing(store, members)
        if leave:
            _bump(store, _LEFT)  # read: the host may go now
        who = ("ranks %s never arrived" % span(absent) if absent else
               "its members did not all arrive")
        raise HcgTimeoutError(Status.ETIMEOUT, "%s did not form within %g s: %s"
                              % (what, timeout_s, who)) from None
    if value == _OK:
        return
    if settle:
        _bump(store, _SETTLED)
    if leave:
        _bump(store, _LEFT)
    failed = _parse(value)
    if failed is None:
        raise HcgRuntimeError(Status.EIO, "%s: unreadable value %r under %s in the "
                              "store" % (what, value[:80], _GO))
    if failed.rank == rank:
        raise Cancelled()
    raise _peer_error(what, failed)


def connected(d: Any, pg: Any, backend: str) -> None:
    """Returns once every member of the gloo group ``pg`` has finished
    connecting it (a barrier over it); other backends return at once.
    gloo's full mesh returns on a member as soon as its own pairs are up,
    while a peer may still be reading the last handshake: a member that
    went on and ended (a check that refuses right after init(), a short
    program) closed a socket under that peer, which then failed with
    "Connection closed by peer" instead of reaching its own outcome. The
    barrier is gloo's dissemination barrier: log2(members) messages each,
    on the connections the group just made."""
    if str(backend) == "gloo":
        d.barrier(group=pg)


#: How torch's timeouts read: "Socket Timeout", "Timed out after 300
#: seconds", "wait timeout after 5000ms", gloo's "Timed out waiting ...".
_TIMEOUT_TEXT = re.compile(r"\btime[sd]?[ _-]?out", re.IGNORECASE)


def timed_out(exc: BaseException) -> bool:
    """Whether torch's exception is a timeout: a TimeoutError, or one whose
    text says so. torch raises its timeouts as RuntimeErrors (DistStoreError,
    DistBackendError) like every other failure, so the kind alone cannot
    tell; the time it took cannot either (a peer that died near the
    deadline is no timeout)."""
    return isinstance(exc, TimeoutError) or bool(_TIMEOUT_TEXT.search(str(exc)))


def formation_error(what: str, timeout_s: float, store: Store,
                    exc: BaseException, elapsed: float,
                    prefix: str = "") -> HcgError:
    """The error for a step whose members all arrived but whose connection
    failed in torch (``exc``, after ``elapsed`` seconds): a member's own
    report when there is one, else torch's reason in hcg's words, naming
    the store prefix the members met under (``prefix``, when given), which
    tells one life of a group from another when the members' messages
    are read side by side."""
    under = "; the members met under '%s'" % prefix if prefix else ""
    if isinstance(exc, HcgError):
        return exc
    reported = failure(store) if store is not None else None
    if reported is not None:
        return _peer_error(what, reported)
    if isinstance(exc, (ValueError, TypeError)):
        return HcgValueError(Status.EINVAL, "%s: torch refused it: %s"
                             % (what, first_line(exc)))
    if timed_out(exc):
        return HcgTimeoutError(Status.ETIMEOUT, "%s did not form within %g s: its "
                               "members did not all connect (torch: %s%s)"
                               % (what, timeout_s, first_line(exc), under))
    return HcgRuntimeError(Status.EIO, "%s: connecting its members failed after "
                           "%.1f s (torch: %s%s)" % (what, elapsed, first_line(exc),
                                                     under))
