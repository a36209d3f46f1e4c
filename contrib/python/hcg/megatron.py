"""Megatron-LM's parallel arguments and hcg layouts, both ways. Needs no
torch.

* :func:`megatron_layout` is ``hcg layout --megatron``: the layout Megatron
  builds from its arguments, computed by libhcg (hcg_megatron.h), so that
  the command and Python share one model of them.
* :func:`megatron_args` reads the task's layout (what ``srun
  --hcg-layout="$(hcg layout --megatron "$ARGS" -n N)"`` gave it) back into
  the sizes of Megatron's parallel arguments (libhcg's hcg_megatron_values,
  over the same table), and :func:`check_megatron_args`
  compares them with a training script's parsed arguments, refusing to start
  (naming each dim) when they disagree.
* :func:`arguments` lists the arguments hcg reads, from the library's table:
  each one's argparse name, option, what it is in a layout, and default.

hcg.torch re-exports megatron_args, check_megatron_args, MegatronArgs and
MegatronError; ``hcg.torch.megatron`` holds Megatron's collections and MIMO
topology. Megatron-LM main as of d98e8a6 is the reference; see doc/torch.md.
"""

from __future__ import annotations

import ctypes
import functools
import warnings
from typing import (Any, Dict, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

from . import _lib
from ._source import Source, resolve_source
from .errors import HcgValueError, Status, error
from .layout import Layout, _cint

#: Megatron's name of the language module (MIMO_LANGUAGE_MODULE_KEY).
LANGUAGE = "language"
EXPERT = "expert"

#: enum hcg_megatron_kind: how an argument is written.
INT, FLAG, INTS, DERIVED = 0, 1, 2, 3
#: enum hcg_megatron_scope: one model and MIMO alike, one model only (the
#: MIMO arguments replace it), or Megatron's examples/mimo only.
ANY, SINGLE, MIMO = 0, 1, 2


class Argument(NamedTuple):
    """One of Megatron's arguments, as libhcg's table has it."""

    #: argparse's name, e.g. ``tensor_model_parallel_size``
    dest: str
    #: its option, e.g. ``--tensor-model-parallel-size``; None when
    #: Megatron derives the value (``data_parallel_size``, ``world_size``)
    option: Optional[str]
    #: what it is in a layout, for messages: ``tp``, ``tp*gtp_remat``
    dim: str
    #: INT, FLAG, INTS or DERIVED
    kind: int
    #: ANY, SINGLE or MIMO
    scope: int
    #: the smallest value accepted
    minimum: int
    #: the value when not given (0: none of its own)
    default: int


@functools.lru_cache(maxsize=None)
def arguments() -> Tuple[Argument, ...]:
    """Megatron's arguments that hcg reads, in the library's order.

    Returns:
        A tuple of :class:`Argument`.

    Raises:
        OSError: libhcg cannot be loaded.
    """
    lib = _lib.lib()
    out = []
    for i in range(lib.hcg_megatron_arg_count()):
        a = lib.hcg_megatron_arg_at(i).contents
        out.append(Argument(_lib.text(a.dest), _lib.text(a.option) or None,
                            _lib.text(a.dim), a.kind, a.scope, a.min, a.dflt))
    return tuple(out)


@functools.lru_cache(maxsize=None)
def _by_dest() -> Dict[str, Argument]:
    """:func:`arguments` by argparse name, built once."""
    return {a.dest: a for a in arguments()}


class MegatronWarning(UserWarning):
    """An argument hcg reads but does not honour (``hcg layout`` prints the
    same text after ``hcg: warning:``)."""


class MegatronError(HcgValueError):
    """A layout Megatron cannot build, arguments that disagree with the
    launcher's layout, or MIMO specs Megatron's topology refuses."""


# ---------------------------------------------------------------------------
# Sizes of a layout, as Megatron's arguments: libhcg's hcg_megatron_values
# and hcg_megatron_grid_sizes, the inverse of hcg_megatron_layout.

class ModuleSizes(NamedTuple):
    """One grid's sizes, named as Megatron's ModuleGridSpec (dims a grid
    lacks are 1). ``expert`` is False when the grid has no expert view
    (then the expert sizes are None). ``pp_before_dp``: whether the grid
    orders pp before dp (Megatron's --use-tp-pp-dp-mapping), None when that
    changes no group (pp or dp of size 1)."""

    name: str
    rank_offset: int
    num_ranks: int
    tp: int
    gtp_remat: int
    cp: int
    dp: int
    pp: int
    expert: bool
    ep: Optional[int]
    expt_tp: Optional[int]
    expt_gtp_remat: Optional[int]
    expt_dp: Optional[int]
    pp_before_dp: Optional[bool]


def _refused(rc: int, err: _lib.Error) -> None:
    """Raises the library's refusal of a layout (rc != 0)."""
    if rc != 0:
        raise MegatronError(rc, _lib.text(err.message), err.line, err.column)


def _module_sizes(layout: Layout, grid: int) -> ModuleSizes:
    """hcg_megatron_grid_sizes of one grid, as a :class:`ModuleSizes`."""
    s, err = _lib.MegatronSizes(), _lib.Error()
    _refused(_lib.lib().hcg_megatron_grid_sizes(
        layout._p(), grid, ctypes.byref(s), ctypes.byref(err)), err)
    g = layout.grids[grid]

    def expert(size: int) -> Optional[int]:
        return size if s.expert else None

    return ModuleSizes(g.name, g.offset, g.size, s.tp, s.gtp_remat, s.cp,
                       s.dp, s.pp, bool(s.expert), expert(s.ep),
                       expert(s.expt_tp), expert(s.expt_gtp_remat),
                       expert(s.expt_dp),
                       None if s.pp_before_dp < 0 else bool(s.pp_before_dp))


class MegatronArgs:
    """The sizes of Megatron's parallel arguments that a layout stands for.

    Attributes:
        layout: the layout's canonical text.
        world_size: its ranks.
        mimo: whether it is Megatron's MIMO topology (a grid named
            ``language``) rather than one model.
        modules: grid name -> :class:`ModuleSizes`, in layout order.
        values: Megatron's argument (argparse dest) -> the value the layout
            stands for; an argument the layout does not determine is absent
            (e.g. the expert sizes without an expert view, the order when pp
            or dp is 1, the encoder's sizes with several encoders).
        grid_of: argument -> the grid it describes.

    ``args.tensor_model_parallel_size`` reads ``values``.
    """

    def __init__(self, layout: Layout) -> None:
        self.layout = layout.text
        self.world_size = layout.world_size
        table = arguments()
        out = (_lib.MegatronValue * len(table))()
        count, err = ctypes.c_int(), _lib.Error()
        _refused(_lib.lib().hcg_megatron_values(
            layout._p(), out, len(table), ctypes.byref(count),
            ctypes.byref(err)), err)
        grids = layout.grids
        self.modules: Dict[str, ModuleSizes] = {
            g.name: _module_sizes(layout, i) for i, g in enumerate(grids)}
        self.mimo = LANGUAGE in self.modules
        self.values: Dict[str, Any] = {}
        self.grid_of: Dict[str, str] = {}
        for v in out[:count.value]:
            arg = table[v.arg]
            self.values[arg.dest] = (bool(v.value) if arg.kind == FLAG
                                     else v.value)
            self.grid_of[arg.dest] = grids[v.grid].name

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("values", {})
        if name in values:
            return values[name]
        raise AttributeError("the layout does not determine Megatron's "
                             "argument '%s'" % name)

    def __repr__(self) -> str:
        return "MegatronArgs(%s)" % ", ".join(
            "%s=%r" % kv for kv in self.values.items())

    def argv(self) -> List[str]:
        """Megatron's command-line options for these sizes: ``hcg layout
        --megatron`` maps them back to this layout."""
        out: List[str] = []
        scope = MIMO if self.mimo else SINGLE
        for arg in arguments():
            if arg.scope != scope or arg.option is None or \
                    arg.dest not in self.values:
                continue
            value, option = self.values[arg.dest], arg.option
            if isinstance(value, bool):
                if value:
                    out.append(option)
            else:
                out += [option, str(value)]
        for name in ("tensor_parallel_num_weight_shards",
                     "expert_tensor_parallel_num_weight_shards"):
            remat = ("gtp_weight_remat_size" if name.startswith("tensor")
                     else "expert_gtp_weight_remat_size")
            if self.values.get(remat, 1) > 1:
                shards = _by_dest()[name].option
                assert shards is not None
                out += [shards, str(self.values[name])]
        return out

    def mismatches(self, args: Any) -> List[str]:
        """Each disagreement of ``args`` (an argparse Namespace, or any
        object or mapping with Megatron's argument names) with the layout:
        one line naming the argument, its value and the layout's dim.
        Arguments ``args`` lacks or leaves None are not compared; with the
        MIMO example's arguments present, the single-model ones are not."""
        def get(name: str) -> Any:
            if isinstance(args, Mapping):
                return args.get(name)
            return getattr(args, name, None)

        table = _by_dest()
        mimo_args = any(get(a.dest) is not None for a in table.values()
                        if a.scope == MIMO)
        out = []
        for name, want in self.values.items():
            arg = table[name]
            if arg.scope == (SINGLE if mimo_args else MIMO):
                continue
            have = get(name)
            if have is None and name == "expert_tensor_parallel_size":
                have = get("tensor_model_parallel_size")  # Megatron's default
            if have is None and name == "llm_expt_tp":
                have = 1  # the MIMO example's default
            if have is None:
                continue
            if isinstance(want, bool):
                if bool(have) != want:
                    out.append("%s is %s, but grid '%s' %s" % (
                        arg.option, "given" if have else "not given",
                        self.grid_of[name], _flag_text(name, want)))
            elif have != want:
                out.append("%s is %r, but grid '%s' has %s=%d" % (
                    arg.option or name, have, self.grid_of[name],
                    arg.dim, want))
        return out

    def check(self, args: Any) -> "MegatronArgs":
        """Raises :class:`MegatronError` (EMISMATCH) naming every
        disagreement of ``args`` with the layout; returns self when they
        agree."""
        bad = self.mismatches(args)
        if bad:
            raise MegatronError(Status.EMISMATCH, "Megatron's arguments do "
                                "not match the launcher's layout (%s):\n  %s"
                                % (self.layout, "\n  ".join(bad)))
        return self


def _flag_text(name: str, want: bool) -> str:
    if name == "use_tp_pp_dp_mapping":
        return "orders pp %s dp" % ("before" if want else "after")
    if name == "llm_only":
        return "has %s encoder grid" % ("no" if want else "an")
    return "wants it %s" % ("set" if want else "not set")


def megatron_args(source: Source = None) -> MegatronArgs:
    """The sizes of Megatron's parallel arguments that the task's layout
    stands for: the inverse of ``hcg layout --megatron``.

    Args:
        source: None (the layout ``hcg.torch.init()`` recorded, else the
            task's HCG_* environment), an :class:`hcg.Layout`, a
            :class:`hcg.env.TaskEnv` or layout text. Needs no torch.

    Returns:
        A :class:`MegatronArgs`.

    Raises:
        MegatronError: a layout Megatron cannot build (an unknown dim, dims
            in another order, a view that does not share pp, several grids
            without one named ``language``). Also a ValueError.
        hcg.HcgTypeError: a source of another type.
        hcg.HcgError: no layout (EENV).
    """
    found = resolve_source(source)
    try:
        return MegatronArgs(found.layout)
    finally:
        if found.owned:
            found.layout.close()


def check_megatron_args(args: Any, source: Source = None) -> MegatronArgs:
    """Refuses to start when Megatron's parsed arguments disagree with the
    launcher's layout.

    Args:
        args: Megatron's arguments (the argparse Namespace of
            ``megatron.training.get_args()``, or any object or mapping with
            its argument names); arguments it lacks or leaves None are not
            compared. With the MIMO example's arguments (``llm_tp``, ...)
            those are compared instead of the single-model ones.
        source: as for :func:`megatron_args`.

    Returns:
        The layout's :class:`MegatronArgs` when they agree.

    Raises:
        MegatronError: (EMISMATCH, also a ValueError) naming each argument,
            its value and the layout's dim that differ.
    """
    return megatron_args(source).check(args)


def megatron_layout(args: Union[str, Sequence[str]], world_size: int, *,
                    encoder_name: str = "encoder") -> Layout:
    """The layout Megatron-LM builds from its parallel arguments: what ``hcg
    layout --megatron ARGS -n WORLD_SIZE`` prints, from the same code.

    Args:
        args: Megatron's command line, one string split at white space, or
            its words (joined with spaces); words that are not its parallel
            arguments are skipped.
        world_size: ranks in the job (dp and expt_dp are what it leaves).
        encoder_name: the MIMO encoder's grid.

    Returns:
        The :class:`hcg.Layout` (canonical) for ``world_size`` ranks.

    Raises:
        MegatronError: arguments Megatron or hcg refuses (also a ValueError;
            for a bad word, its column in ``args`` and a caret).
        OSError: libhcg cannot be loaded.

    Warns:
        MegatronWarning: an argument read but not honoured.
    """
    text = args if isinstance(args, str) else " ".join(args)
    raw, name = text.encode("utf-8"), encoder_name.encode("utf-8")
    if b"\0" in raw or b"\0" in name:
        raise MegatronError(Status.EINVAL, "megatron arguments: a NUL byte in "
                            "%s" % ("the arguments" if b"\0" in raw
                                    else "encoder_name"))
    lib = _lib.lib()
    cfg = _lib.MegatronConfig()
    cfg.world_size = _cint(world_size, "world_size")
    cfg.encoder_name = name
    said: List[str] = []

    def heard(_arg: Any, message: Optional[bytes]) -> None:
        said.append(_lib.text(message))

    cfg.warn = _lib.WARN_FN(heard)
    out = ctypes.c_void_p()
    err = _lib.Error()
    rc = lib.hcg_megatron_layout(raw, ctypes.byref(cfg), ctypes.byref(out),
                                 ctypes.byref(err))
    for message in said:
        warnings.warn(message, MegatronWarning, stacklevel=2)
    if rc != 0:
        message = _lib.text(err.message)
        if rc == Status.ENOMEM:
            raise error(rc, message)
        raise MegatronError(rc, message, err.line, err.column)
    assert out.value  # HCG_OK hands out a layout
    return Layout._adopt(out.value)
