"""HcgError, its Python kinds, and the status codes of hcg.h.

Every error hcg raises is an :class:`HcgError` carrying libhcg's status,
and also the built-in exception a torch user would expect for it: a bad
argument is a ``ValueError`` (or ``TypeError``), a name that is not there
a ``KeyError``, a timeout a ``TimeoutError``, anything else a
``RuntimeError``. ``except HcgError`` and ``except ValueError`` both catch
``HcgValueError``. Which kind a status gets unless the caller knows better
is :data:`KIND`, the one table of it.
"""

from __future__ import annotations

import enum
from typing import Dict, Optional, Type, Union

from . import _lib


class Status(enum.IntEnum):
    """enum hcg_status of hcg.h (the values are part of the stable ABI).

    Retyped from runtime/hcg_base.h, which libhcg cannot list at run time;
    tests/test_errors.py parses the header and fails when the two differ.
    """

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


def status_name(code: int) -> str:
    """The symbolic name of a status code, e.g. 'ELAYOUT' (the number as
    text for a code newer than this binding)."""
    status = _status(code)
    return status.name if isinstance(status, Status) else str(status)


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
        return status_name(self.code)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%s, %r)" % (type(self).__name__, self.name, self.message)


class HcgValueError(HcgError, ValueError):
    """A bad argument: a layout that does not parse or fit the world, a
    rank outside the grid, a value out of range, grids that cannot be
    bridged."""


class HcgTypeError(HcgError, TypeError):
    """An argument of the wrong type (a layout source that is none)."""


class HcgKeyError(HcgError, KeyError):
    """A name that is not there: no such grid, view, dim or field."""

    def __str__(self) -> str:  # KeyError's own would quote the message
        return HcgError.__str__(self)


class HcgTimeoutError(HcgError, TimeoutError):
    """A peer, a store or a collective step did not answer in time."""


class HcgRuntimeError(HcgError, RuntimeError):
    """Anything else: the environment, PMIx, NCCL, CUDA, a store, a
    feature this build or this PyTorch lacks."""


#: The kind of error each status is, when the code that raises it has
#: nothing more precise to say (libhcg's own errors always get this one).
KIND: Dict[Status, Type[HcgError]] = {
    Status.EINVAL: HcgValueError,
    Status.ENOMEM: HcgRuntimeError,
    Status.ESYNTAX: HcgValueError,
    Status.ELAYOUT: HcgValueError,
    Status.ELIMIT: HcgValueError,
    Status.ENOTFOUND: HcgKeyError,
    Status.ENOTMEMBER: HcgValueError,
    Status.ENOTPROVIDED: HcgKeyError,
    Status.EIO: HcgRuntimeError,
    Status.EENV: HcgRuntimeError,
    Status.EPMIX: HcgRuntimeError,
    Status.ETIMEOUT: HcgTimeoutError,
    Status.ENCCL: HcgRuntimeError,
    Status.ECUDA: HcgRuntimeError,
    Status.ENOTSUP: HcgRuntimeError,
    Status.EEXIST: HcgRuntimeError,
    Status.EMISMATCH: HcgRuntimeError,
    Status.ERANGE: HcgValueError,
    Status.EBRIDGE: HcgValueError,
}


def error(code: int, message: str, line: int = 0,
          column: int = 0) -> HcgError:
    """The error of its status's kind (:data:`KIND`; a code newer than this
    binding is an :class:`HcgRuntimeError`).

    Args:
        code: an hcg status.
        message: the whole text to show.
        line, column: 1-based place in the layout text, 0 when none.

    Returns:
        An instance of a subclass of :class:`HcgError`, not raised.
    """
    status = _status(code)
    kind: Type[HcgError] = HcgRuntimeError
    if isinstance(status, Status):
        kind = KIND.get(status, HcgRuntimeError)
    return kind(code, message, line, column)


class PeerError(HcgRuntimeError):
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


def from_c(err: _lib.Error, fallback: Optional[str] = None) -> HcgError:
    """The error of a filled struct hcg_error, of its status's kind.

    Args:
        err: what libhcg filled in.
        fallback: the message when libhcg left it empty (default: the
            library's name for the code).

    Returns:
        An :class:`HcgError` subclass instance (see :func:`error`).
    """
    message = err.message.decode("utf-8", "replace")
    if not message:
        message = fallback or strerror(err.code)
    return error(err.code, message, err.line, err.column)


def strerror(code: int) -> str:
    """libhcg's short description of a status code."""
    return _lib.text(_lib.lib().hcg_strerror(int(code)))


def fail(code: int, what: str) -> HcgError:
    """The error of a libhcg call that returns only a code: the binding's
    own description of what was asked, then the library's name for the
    code; of the status's kind (see :func:`error`)."""
    return error(code, "%s: %s" % (what, strerror(code)))
