"""hcg: Megatron-LM's HyperCommGrid layouts from Python, through libhcg.

Pure Python (ctypes, standard library only). Every group, key and
coordinate comes from libhcg, so it is exactly what the hcg SPANK plugin
exports, what ``hcg enum``/``hcg explain`` print and what Megatron computes.

    >>> import hcg
    >>> with hcg.Layout("tp=2,cp=3,dp=4", 24) as L:
    ...     L.enumerate("dp,tp")[0]
    [0, 1, 6, 7, 12, 13, 18, 19]

In a task started by ``srun --hcg-layout=...``::

    task = hcg.env.from_environ()
    members, index, key = task.group("llm:dp,cp")

Every error is an :class:`HcgError` carrying libhcg's status, and also the
built-in a torch user expects: ``HcgValueError`` (a ValueError) for a bad
argument, ``HcgTypeError``, ``HcgKeyError`` for a name that is not there,
``HcgTimeoutError``, and ``HcgRuntimeError`` for the rest (hcg.errors).

PyTorch process groups: :mod:`hcg.torch` (imported on demand). Megatron-LM's
parallel arguments to a layout and back: :mod:`hcg.megatron` (no torch).

The library is found as libhcg.so.1 through the dynamic loader, or at the
path in $HCG_LIBRARY.
"""

from __future__ import annotations

from . import env
from .errors import (HcgError, HcgKeyError, HcgRuntimeError, HcgTimeoutError,
                     HcgTypeError, HcgValueError, PeerError, Status)
from .layout import (EMBEDDINGS, FIELDS, Bridge, Dim, Grid, Group, Groups,
                     Layout, Request, Stage, View)

__all__ = [
    "Bridge", "Dim", "EMBEDDINGS", "FIELDS", "Grid", "Group", "Groups",
    "HcgError", "HcgKeyError", "HcgRuntimeError", "HcgTimeoutError",
    "HcgTypeError", "HcgValueError", "Layout", "PeerError", "Request", "Stage", "Status", "View",
    "env", "library_version",
]

__version__ = "0.1.0"


def library_version() -> str:
    """The version of the loaded libhcg.

    Returns:
        Its version, e.g. '0.1.0'.

    Raises:
        OSError: libhcg cannot be loaded (the message says where it was
            looked for).
    """
    from . import _lib

    return _lib.text(_lib.lib().hcg_version())
