"""Where a call finds its layout (private): the one resolution of every
``source`` argument of hcg and hcg.torch, and the task hcg.torch.init()
recorded for the calls after it. Needs no torch."""

from __future__ import annotations

from typing import NamedTuple, Optional, Union

from .env import TaskEnv, from_environ
from .errors import HcgRuntimeError, HcgTypeError, Status
from .layout import Layout


#: The task hcg.torch.init() read (one per process), None before.
_task: Optional[TaskEnv] = None


def record_task(task: Optional[TaskEnv]) -> None:
    """Makes ``task`` what a None source means from now on (hcg.torch.init
    calls it; None forgets it)."""
    global _task
    _task = task


def recorded_task() -> Optional[TaskEnv]:
    """The task :func:`record_task` was last given, or None."""
    return _task


#: Where a call finds its layout: an :class:`hcg.Layout`, a
#: :class:`hcg.env.TaskEnv`, layout text, or None for the task's (what
#: hcg.torch.init() recorded, else the HCG_* environment).
Source = Union[Layout, TaskEnv, str, None]


class Resolved(NamedTuple):
    """A layout source, resolved (see :func:`resolve_source`)."""

    layout: Layout
    #: the task given or found; None for a Layout or layout text
    task: Optional[TaskEnv]
    #: whether the layout was read here: its caller closes it
    owned: bool


def resolve_source(source: Source, *, world: int = 0,
                   text: bool = True, environ: bool = True) -> Resolved:
    """The layout a call was given: the one resolution of every ``source``
    argument of hcg and hcg.torch. Needs no torch.

    Args:
        source: an :class:`hcg.Layout` (used as it is), a
            :class:`hcg.env.TaskEnv` (its layout), layout text (parsed
            here) or None: the task hcg.torch.init() recorded, else the
            task's HCG_* environment (read here).
        world: the world size layout text is parsed for (0: the
            smallest the text fits, as :class:`hcg.Layout`'s).
        text: whether layout text is accepted (a bridge, which never
            closes a layout, takes none).
        environ: whether None without init() reads the environment (a
            bridge instead refuses it).

    Returns:
        A :class:`Resolved`.

    Raises:
        hcg.HcgTypeError: a source of another type (EINVAL).
        hcg.HcgRuntimeError: None with neither init() nor ``environ``
            (EINVAL); no layout in the environment (EENV).
        hcg.HcgValueError: layout text that does not parse or fit.
    """
    if source is None:
        task = _task
        if task is not None:
            return Resolved(task.layout, task, False)
        if not environ:
            raise HcgRuntimeError(Status.EINVAL, "no layout: call hcg.torch.init() "
                                  "first or pass source=Layout/TaskEnv")
        task = from_environ()
        return Resolved(task.layout, task, True)
    if isinstance(source, TaskEnv):
        return Resolved(source.layout, source, False)
    if isinstance(source, Layout):
        return Resolved(source, None, False)
    if isinstance(source, str) and text:
        return Resolved(Layout(source, world), None, True)
    kinds = "an hcg.Layout, a TaskEnv, layout text or None" if text else \
        "an hcg.Layout, a TaskEnv or None"
    raise HcgTypeError(Status.EINVAL, "a layout source is %s, not %s"
                       % (kinds, type(source).__name__))
