"""The task environment: what `srun --hcg-layout=...` gave this process.

The hcg SPANK plugin exports HCG_VERSION, HCG_LAYOUT (canonical), HCG_RANK,
HCG_WORLD_SIZE, HCG_GRIDS, HCG_LANGUAGE and HCG_<GRID>[_<VIEW>]_<DIM>_RANK /
_SIZE to every task. :func:`from_environ` reads them back into a
:class:`Layout` and a rank, with the checks libhcg's hcg_ctx_init makes
(without PMIx): the version, the integers, the layout, and that every
per-rank variable present agrees with what the layout gives this rank.
"""

from __future__ import annotations

import os
import re
from typing import Dict, List, Mapping, Optional, Tuple, Union

from . import _lib
from .errors import HcgError, HcgRuntimeError, HcgValueError, Status
from .layout import (GridRef, Group, Layout, Spec, Stage, ViewRef)

_INT = re.compile(r"[0-9]{1,10}\Z")


def in_task(environ: Optional[Mapping[str, str]] = None) -> bool:
    """Whether the environment looks like an hcg task's.

    Args:
        environ: the environment; default os.environ.

    Returns:
        True when HCG_VERSION or HCG_LAYOUT is set.
    """
    env = os.environ if environ is None else environ
    return "HCG_VERSION" in env or "HCG_LAYOUT" in env


def _int(env: Mapping[str, str], name: str, lo: int, hi: int) -> int:
    value = env.get(name)
    if value is None:
        raise HcgRuntimeError(Status.EENV, "%s is not set: the task was not started "
                              "by srun --hcg-layout (the hcg SPANK plugin exports "
                              "it)" % name)
    if not _INT.match(value) or not lo <= int(value) <= hi:
        raise HcgRuntimeError(Status.EENV, "%s=%r is not an integer in [%d, %d]"
                              % (name, value[:64], lo, hi))
    return int(value)


class TaskEnv:
    """This task's layout and rank, with shortcuts for its own groups.

    Owns its :class:`Layout`: close it (or use a ``with`` block) to free the
    C memory early.
    """

    def __init__(self, layout: Layout, rank: int,
                 node_local: Optional[Mapping[str, bool]] = None,
                 domain_local: Optional[Mapping[str, bool]] = None) -> None:
        self.layout = layout
        self.rank = rank
        #: The plugin's placement verdicts (HCG_<GRID>[_<VIEW>]_<DIM>_LOCAL):
        #: "GRID:DIM" or "GRID/VIEW:DIM" -> whether this rank's group along
        #: that dim lies inside one node. Only the dims the plugin checked
        #: (its intra_node_dims list); empty with placement=off.
        self.node_local: Dict[str, bool] = dict(node_local or {})
        #: The same for the step's NVLink domains (a topology/block block, a
        #: topology/tree leaf switch; HCG_..._DOMAIN_LOCAL): only the dims of
        #: the site's intra_domain_dims list, and only where the plugin
        #: learnt the domains; empty otherwise.
        self.domain_local: Dict[str, bool] = dict(domain_local or {})

    @property
    def world_size(self) -> int:
        return self.layout.world_size

    @property
    def grids(self) -> List[str]:
        """The grids holding this rank, in layout order (HCG_GRIDS)."""
        return self.layout.grids_of_rank(self.rank)

    @property
    def language(self) -> str:
        return self.layout.language

    def close(self) -> None:
        self.layout.close()

    def __enter__(self) -> "TaskEnv":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<hcg.TaskEnv rank %d of %d, %s>" % (
            self.rank, self.world_size, self.layout.text)

    def default_grid(self) -> str:
        """The grid meant when none is named.

        Returns:
            The only grid holding this rank, else (colocated modules) the
            language module.

        Raises:
            HcgValueError: the rank is in several grids, none the language one.
        """
        mine = self.grids
        if len(mine) == 1:
            return mine[0]
        if self.language in mine:
            return self.language
        raise HcgValueError(Status.EINVAL, "rank %d is in grids %s: name one"
                            % (self.rank, ", ".join(mine)))

    def _g(self, grid: GridRef) -> GridRef:
        return self.default_grid() if grid is None else grid

    def coords(self, grid: GridRef = None, view: ViewRef = None) -> Dict[str, int]:
        """This rank's coordinates in a grid's view.

        Args:
            grid: the grid; default :meth:`default_grid`.
            view: a view by name or index; None: the base.

        Returns:
            dim name -> coordinate (see :meth:`hcg.Layout.coords`).
        """
        return self.layout.coords(self.rank, self._g(grid), view)

    def group(self, spec: Spec) -> Group:
        """This rank's group of a spec.

        Args:
            spec: ``"GRID[/VIEW]:DIMS"`` or a :class:`hcg.Request`.

        Returns:
            ``Group(members, index, key)``.

        Raises:
            As :meth:`hcg.Layout.group_of_rank`.
        """
        return self.layout.group_of_rank(spec, self.rank)

    def collection(self, grid: GridRef = None) -> Dict[str, Optional[Group]]:
        """This rank's group of every collection field of a grid.

        Args:
            grid: the grid; default :meth:`default_grid`.

        Returns:
            field name -> :class:`hcg.Group`, None for a field the grid lacks.
        """
        return self.layout.collection(self._g(grid), self.rank)

    def stage(self, grid: GridRef = None) -> Stage:
        """Whether this rank holds the first and the last pipeline stage.

        Args:
            grid: the grid; default :meth:`default_grid`.

        Returns:
            ``Stage(first, last)``.
        """
        return self.layout.stage(self.rank, self._g(grid))

    def embedding_group(self, kind: Union[str, int] = "embd") -> Optional[List[int]]:
        """This rank's embedding group of a kind.

        Args:
            kind: 'embd' or 'pos_embd' (see :meth:`hcg.Layout.embedding_groups`).

        Returns:
            Its members, or None when the rank is in none.
        """
        return self.layout.embedding_group(self.rank, kind)


def from_environ(environ: Optional[Mapping[str, str]] = None) -> TaskEnv:
    """Reads the HCG_* variables (of ``environ``, default os.environ).

    Checks, in this order, raising HcgError(EENV) with the variable's name:
    HCG_VERSION is set and is the environment version this binding reads;
    HCG_WORLD_SIZE and HCG_RANK are integers with 0 <= rank < world;
    HCG_LAYOUT is set and parses for that world with HCG_LANGUAGE as the
    language module. Then every other variable the plugin would export to
    this rank that is set must have the expected value, else
    HcgError(EMISMATCH) naming both values (a changed HCG_RANK, or variables
    mixed from two jobs).
    """
    env = os.environ if environ is None else environ
    version = env.get("HCG_VERSION")
    text = env.get("HCG_LAYOUT")
    if version is None and text is None:
        raise HcgRuntimeError(Status.EENV, "no HCG_* environment (HCG_VERSION and "
                              "HCG_LAYOUT are not set): start the job with srun "
                              "--hcg-layout=LAYOUT (the hcg SPANK plugin)")
    if version is None:
        raise HcgRuntimeError(Status.EENV, "HCG_VERSION is not set although "
                              "HCG_LAYOUT is: the environment was not made by the "
                              "hcg SPANK plugin")
    if not _INT.match(version) or int(version) != _lib.ENV_VERSION:
        raise HcgRuntimeError(Status.EENV, "HCG_VERSION=%r but this binding reads "
                              "version %d of the environment: upgrade the plugin or "
                              "the hcg Python package so that they match"
                              % (version[:32], _lib.ENV_VERSION))
    world = _int(env, "HCG_WORLD_SIZE", 1, _lib.MAX_WORLD)
    rank = _int(env, "HCG_RANK", 0, world - 1)
    if text is None:
        raise HcgRuntimeError(Status.EENV, "HCG_LAYOUT is not set: the task was not "
                              "started by srun --hcg-layout")
    language = env.get("HCG_LANGUAGE") or None
    try:
        layout = Layout(text, world, language)
    except HcgError as exc:
        raise HcgRuntimeError(Status.EENV, "HCG_LAYOUT is not a valid layout for "
                              "HCG_WORLD_SIZE=%d: %s" % (world, exc.message),
                              exc.line, exc.column) from None
    try:
        _check_consistent(env, layout, rank)
        local = node_local_of(env, layout, rank)
        domain = domain_local_of(env, layout, rank)
    except BaseException:
        layout.close()
        raise
    return TaskEnv(layout, rank, local, domain)


def node_local_of(env: Mapping[str, str], layout: Layout,
                  rank: int) -> Dict[str, bool]:
    """The HCG_*_LOCAL verdicts of ``env`` for ``rank`` (see
    TaskEnv.node_local).

    Args:
        env: the environment to read.
        layout: the task's layout.
        rank: the task's rank.

    Returns:
        "GRID[/VIEW]:DIM" -> whether this rank's group along that dim lies
        inside one node (only the dims set in ``env``).

    Raises:
        HcgRuntimeError: a value other than 0 or 1 (EENV).
    """
    return _verdicts_of(env, layout, rank, "_LOCAL")


def domain_local_of(env: Mapping[str, str], layout: Layout,
                    rank: int) -> Dict[str, bool]:
    """The HCG_*_DOMAIN_LOCAL verdicts of ``env`` for ``rank`` (see
    TaskEnv.domain_local).

    Args:
        env: the environment to read.
        layout: the task's layout.
        rank: the task's rank.

    Returns:
        "GRID[/VIEW]:DIM" -> whether this rank's group along that dim lies
        inside one NVLink domain (only the dims set in ``env``).

    Raises:
        HcgRuntimeError: a value other than 0 or 1 (EENV).
    """
    return _verdicts_of(env, layout, rank, "_DOMAIN_LOCAL")


def _verdicts_of(env: Mapping[str, str], layout: Layout, rank: int,
                 suffix: str) -> Dict[str, bool]:
    out: Dict[str, bool] = {}
    for g in layout.grids:
        if not g.contains(rank):
            continue
        for v in g.views:
            for d in v.dims:
                if d.shared:
                    continue
                stem = g.name if v.index == 0 else "%s_%s" % (g.name, v.name)
                name = "HCG_%s_%s%s" % (stem.upper(), d.name.upper(), suffix)
                value = env.get(name)
                if value is None:
                    continue
                if value not in ("0", "1"):
                    raise HcgRuntimeError(Status.EENV, "%s=%r, not 0 or 1"
                                          % (name, value[:32]))
                key = g.name if v.index == 0 else "%s/%s" % (g.name, v.name)
                out["%s:%s" % (key, d.name)] = value == "1"
    return out


# Read and checked above: the others are compared with the layout's answer.
_PARSED: Tuple[str, ...] = ("HCG_VERSION", "HCG_LAYOUT", "HCG_RANK",
                            "HCG_WORLD_SIZE")


def _check_consistent(env: Mapping[str, str], layout: Layout, rank: int) -> None:
    for name, want in layout.env(rank).items():
        if name in _PARSED:
            continue
        have = env.get(name)
        if have is not None and have != want:
            raise HcgRuntimeError(Status.EMISMATCH, "%s=%r but HCG_RANK=%d and "
                                  "HCG_LAYOUT give %r: the HCG_* variables disagree "
                                  "(was HCG_RANK changed after launch?)"
                                  % (name, have[:128], rank, want))
