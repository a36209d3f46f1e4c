"""HcgError and the status codes of hcg.h."""

from __future__ import annotations

import enum
from typing import Any, Optional, Union


class Status(enum.IntEnum):
    """enum hcg_status of hcg.h (the values are part of the stable ABI)."""

    OK = 0
    EINVAL = 1
    ENOMEM = 2
    ESYNTAX = 3
    ELAYOUT = 4
    ELIMIT = 5
    ENOTFOUND = 6
    ENOTMEMBER = 7
    ENOTPROVIDED = 8
    EIO = 9
    EENV = 10
    EPMIX = 11
    ETIMEOUT = 12
    ENCCL = 13
    ECUDA = 14
    ENOTSUP = 15
    EEXIST = 16
    EMISMATCH = 17
    ERANGE = 18
    EBRIDGE = 19


def _status(code: int) -> Union[Status, int]:
    try:
        return Status(code)
    except ValueError:  # a code newer than this binding
        return code


class HcgError(Exception):
    """A failure reported by libhcg (or by this binding on its behalf).

    Attributes:
        code: the hcg status (a :class:`Status` when known, else an int).
        message: the whole text to show a person. For layout errors it is
            three lines: what and where (with the column), the offending line
            of layout text, and a caret under the offending column.
        line, column: 1-based position in the layout text, or 0 when the
            error is not about a place in the text.

    ``str(err)`` is the message, so ``print(err)`` shows the caret.
    """

    def __init__(self, code: int, message: str, line: int = 0,
                 column: int = 0) -> None:
        super().__init__(code, message)
        self.code: Union[Status, int] = _status(code)
        self.message = message
        self.line = line
        self.column = column

    @property
    def name(self) -> str:
        """Symbolic name of the code, e.g. 'ELAYOUT'."""
        return self.code.name if isinstance(self.code, Status) else str(self.code)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "HcgError(%s, %r)" % (self.name, self.message)


class PeerError(HcgError):
    """Another rank failed first, and said so before this rank waited in
    vain: this rank's part of the same step ends at once instead of at its
    timeout.

    Attributes (besides HcgError's):
        rank: the rank that failed.
        reason: that rank's own error message.

    ``code`` is the failed rank's status (ETIMEOUT when it timed out waiting
    for a third rank, EIO when it could not open its store, ...), and the
    message names the step, the rank and its reason.
    """

    def __init__(self, code: int, message: str, rank: int, reason: str) -> None:
        super().__init__(code, message)
        self.rank = rank
        self.reason = reason

    def __repr__(self) -> str:
        return "PeerError(%s, rank=%d, %r)" % (self.name, self.rank, self.message)


def from_c(err: Any, fallback: Optional[str] = None) -> HcgError:
    """An HcgError from a filled struct hcg_error."""
    message = err.message.decode("utf-8", "replace")
    if not message:
        message = fallback or strerror(err.code)
    return HcgError(err.code, message, err.line, err.column)


def strerror(code: int) -> str:
    """libhcg's short description of a status code."""
    from . import _lib

    return _lib.text(_lib.lib().hcg_strerror(int(code)))


def fail(code: int, what: str) -> HcgError:
    """An HcgError for a call that returns only a code: the binding's own
    description of what was asked, then the library's name for the code."""
    return HcgError(code, "%s: %s" % (what, strerror(code)))
