"""Megatron-LM on hcg: its arguments from a layout, and its MIMO topology.

* :func:`megatron_args` reads the task's layout (what ``srun
  --hcg-layout="$(hcg layout --megatron "$ARGS" -n N)"`` gave it) back into
  the sizes of Megatron's parallel arguments, and :func:`check_megatron_args`
  compares them with a training script's parsed arguments, refusing to start
  (naming each dim) when they disagree. Neither needs torch.
* :func:`create_topology` is Megatron's MIMO topology
  (``examples/mimo/training/topology.py``): from one :class:`ModuleGridSpec`
  per module it builds each module's :class:`~hcg.torch.HyperCommGrid` with
  its expert view, the 20 groups of each module, the language module's
  embedding groups, one ``ProcessGroupCollection`` per module and the
  rank's ``MultiModuleProcessGroupCollection``, with Megatron's validation
  and messages. The groups are made by their members alone, all of a rank's
  groups in one batch.

Megatron-LM main as of d98e8a6 is the reference; see doc/torch.md.
"""

from __future__ import annotations

import dataclasses
from typing import (Any, Callable, Dict, Iterable, Iterator, List, Mapping,
                    NamedTuple, Optional, Sequence, Set, Tuple, cast)

from ..errors import HcgRuntimeError, HcgValueError, Status
from ..layout import Grid, Layout
from . import groups as _groups
from ._base import (STATE, Source, Timeout, dist, group_timeout, require_initialized,
                    resolve_source)
from .grid import HyperCommGrid, _make, _Planned

#: Megatron's name of the language module (MIMO_LANGUAGE_MODULE_KEY).
LANGUAGE = "language"
EXPERT = "expert"

#: Megatron-LM main's ProcessGroupCollection fields, in its order.
PROCESS_GROUP_COLLECTION_FIELDS: Tuple[str, ...] = (
    "tp", "pp", "mp", "embd", "pos_embd", "cp", "tp_cp", "hcp", "ep",
    "expt_tp", "tp_ep", "tp_ep_pp", "tp_ep_pp_with_egtp_remat", "tp_dp_cp",
    "dp", "dp_cp", "dp_cp_gtp_remat", "dp_cp_ag", "gtp_remat",
    "expt_gtp_remat", "expt_dp", "expt_dp_gtp_remat", "expt_dp_ag",
    "intra_dp_cp", "intra_expt_dp", "inter_dist_opt", "intra_dist_opt",
)


class MegatronError(HcgValueError):
    """A layout Megatron cannot build, arguments that disagree with the
    launcher's layout, or MIMO specs Megatron's topology refuses."""


# ---------------------------------------------------------------------------
# Sizes of a layout, as Megatron's arguments

_BASE_ORDERS = (("tp", "gtp_remat", "cp", "dp", "pp"),
                ("tp", "gtp_remat", "cp", "pp", "dp"))
_EXPERT_ORDERS = (("expt_tp", "ep", "expt_gtp_remat", "expt_dp", "pp"),
                  ("expt_tp", "ep", "expt_gtp_remat", "pp", "expt_dp"))


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


def _dims_of(view: Any, known: Sequence[str], what: str) -> Dict[str, int]:
    sizes = {d.name: d.size for d in view.dims}
    extra = [d for d in sizes if d not in known]
    if extra:
        raise MegatronError(Status.ELAYOUT, "%s has dim '%s', which Megatron "
                            "does not have there (its dims: %s)"
                            % (what, extra[0], ", ".join(known)))
    return sizes


def _pp_before_dp(sizes: Dict[str, int], orders: Sequence[Sequence[str]],
                  dp: str, what: str) -> Optional[bool]:
    """Which of Megatron's two orders the dims of size > 1 follow (size-1
    dims change no group wherever they are); None when both do."""
    big = [d for d in sizes if sizes[d] > 1]
    fits = [big == [d for d in order if d in big] for order in orders]
    if not any(fits):
        raise MegatronError(Status.ELAYOUT, "%s orders its dims %s; Megatron "
                            "orders them %s (or %s with --use-tp-pp-dp-mapping)"
                            % (what, ",".join(big), ",".join(orders[0]),
                               ",".join(orders[1])))
    if sizes.get("pp", 1) > 1 and sizes.get(dp, 1) > 1:
        return fits[1]
    return None


def _module_sizes(g: Grid) -> ModuleSizes:
    what = "grid '%s'" % g.name
    base = _dims_of(g.views[0], _BASE_ORDERS[0], what)
    order = _pp_before_dp(base, _BASE_ORDERS, "dp", what)
    size = {d: base.get(d, 1) for d in _BASE_ORDERS[0]}
    views = [v for v in g.views if v.name == EXPERT]
    ep = expt_tp = expt_gtp_remat = expt_dp = None
    if views:
        what = "view '%s/%s'" % (g.name, EXPERT)
        exp = _dims_of(views[0], _EXPERT_ORDERS[0], what)
        if size["pp"] > 1 and not any(d.name == "pp" and d.shared
                                      for d in views[0].dims):
            raise MegatronError(Status.ELAYOUT, "%s does not share pp with "
                                "the base; Megatron's expert grid does" % what)
        # The shared pp enumerates alike in both, so where both orders
        # matter they agree.
        eorder = _pp_before_dp(exp, _EXPERT_ORDERS, "expt_dp", what)
        order = eorder if order is None else order
        ep, expt_tp = exp.get("ep", 1), exp.get("expt_tp", 1)
        expt_gtp_remat, expt_dp = exp.get("expt_gtp_remat", 1), exp.get("expt_dp", 1)
    return ModuleSizes(g.name, g.offset, g.size, size["tp"], size["gtp_remat"],
                       size["cp"], size["dp"], size["pp"], bool(views), ep,
                       expt_tp, expt_gtp_remat, expt_dp, order)


#: Megatron's argument (its argparse dest) -> its command-line option; None
#: for the values Megatron derives (compared when a script has them).
OPTIONS: Dict[str, Optional[str]] = {
    "tensor_model_parallel_size": "--tensor-model-parallel-size",
    "pipeline_model_parallel_size": "--pipeline-model-parallel-size",
    "context_parallel_size": "--context-parallel-size",
    "expert_model_parallel_size": "--expert-model-parallel-size",
    "expert_tensor_parallel_size": "--expert-tensor-parallel-size",
    "tensor_parallel_num_weight_shards": "--tensor-parallel-num-weight-shards",
    "expert_tensor_parallel_num_weight_shards":
        "--expert-tensor-parallel-num-weight-shards",
    "use_tp_pp_dp_mapping": "--use-tp-pp-dp-mapping",
    "encoder_tp": "--encoder-tp",
    "encoder_dp": "--encoder-dp",
    "llm_offset": "--llm-offset",
    "llm_tp": "--llm-tp",
    "llm_cp": "--llm-cp",
    "llm_pp": "--llm-pp",
    "llm_dp": "--llm-dp",
    "llm_ep": "--llm-ep",
    "llm_expt_tp": "--llm-expt-tp",
    "llm_only": "--llm-only",
    "data_parallel_size": None,
    "gtp_weight_remat_size": None,
    "expert_gtp_weight_remat_size": None,
    "world_size": None,
}

#: The MIMO arguments of Megatron's examples/mimo (their presence in a
#: script's arguments selects the MIMO comparison).
MIMO_ARGS = ("encoder_tp", "encoder_dp", "llm_offset", "llm_tp", "llm_cp",
             "llm_pp", "llm_dp", "llm_ep", "llm_expt_tp", "llm_only")

#: Which dim of which grid each argument is, for messages.
_DIM_OF = {
    "tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
    "context_parallel_size": "cp", "expert_model_parallel_size": "ep",
    "expert_tensor_parallel_size": "expt_tp",
    "tensor_parallel_num_weight_shards": "tp*gtp_remat",
    "expert_tensor_parallel_num_weight_shards": "expt_tp*expt_gtp_remat",
    "use_tp_pp_dp_mapping": "the order of pp and dp",
    "encoder_tp": "tp", "encoder_dp": "dp", "llm_offset": "offset",
    "llm_tp": "tp", "llm_cp": "cp", "llm_pp": "pp", "llm_dp": "dp",
    "llm_ep": "ep", "llm_expt_tp": "expt_tp",
    "llm_only": "the encoder grids (none)",
    "data_parallel_size": "dp", "gtp_weight_remat_size": "gtp_remat",
    "expert_gtp_weight_remat_size": "expt_gtp_remat", "world_size": "the world",
}


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
        self.modules: Dict[str, ModuleSizes] = {
            g.name: _module_sizes(g) for g in layout.grids}
        names = [g.name for g in layout.grids]
        self.mimo = LANGUAGE in names
        self.values: Dict[str, Any] = {}
        self.grid_of: Dict[str, str] = {}
        if self.mimo:
            self._mimo(self.modules[LANGUAGE],
                       [m for n, m in self.modules.items() if n != LANGUAGE])
        elif len(names) == 1:
            self._single(self.modules[names[0]])
        else:
            raise MegatronError(Status.ELAYOUT, "a layout of several grids "
                                "is Megatron's MIMO topology only with a grid "
                                "named '%s' (the language module); grids: %s"
                                % (LANGUAGE, ", ".join(names)))

    def _put(self, grid: str, **values: Any) -> None:
        for k, v in values.items():
            if v is not None:
                self.values[k] = v
                self.grid_of[k] = grid

    def _single(self, m: ModuleSizes) -> None:
        if m.rank_offset != 0 or m.num_ranks != self.world_size:
            raise MegatronError(Status.ELAYOUT, "grid '%s' spans [%d, %d) of "
                                "a world of %d: one Megatron model spans them "
                                "all" % (m.name, m.rank_offset,
                                         m.rank_offset + m.num_ranks,
                                         self.world_size))
        self._put(m.name, tensor_model_parallel_size=m.tp,
                  pipeline_model_parallel_size=m.pp,
                  context_parallel_size=m.cp, data_parallel_size=m.dp,
                  tensor_parallel_num_weight_shards=m.tp * m.gtp_remat,
                  gtp_weight_remat_size=m.gtp_remat,
                  world_size=self.world_size,
                  expert_model_parallel_size=m.ep if m.expert else 1)
        if m.expert:
            assert m.expt_tp is not None and m.expt_gtp_remat is not None
            self._put(m.name, expert_tensor_parallel_size=m.expt_tp,
                      expert_tensor_parallel_num_weight_shards=(
                          m.expt_tp * m.expt_gtp_remat),
                      expert_gtp_weight_remat_size=m.expt_gtp_remat)
        if m.pp_before_dp is not None:
            self._put(m.name, use_tp_pp_dp_mapping=m.pp_before_dp)

    def _mimo(self, lang: ModuleSizes, encoders: List[ModuleSizes]) -> None:
        if lang.pp_before_dp:
            raise MegatronError(Status.ELAYOUT, "grid '%s' orders pp before "
                                "dp; Megatron's MIMO topology orders every "
                                "module tp, gtp_remat, cp, dp, pp" % LANGUAGE)
        self._put(LANGUAGE, llm_offset=lang.rank_offset, llm_tp=lang.tp,
                  llm_cp=lang.cp, llm_pp=lang.pp, llm_dp=lang.dp,
                  llm_ep=lang.ep if lang.expert else 1,
                  llm_only=not encoders,
                  tensor_parallel_num_weight_shards=lang.tp * lang.gtp_remat,
                  gtp_weight_remat_size=lang.gtp_remat)
        if lang.expert:
            assert lang.expt_tp is not None and lang.expt_gtp_remat is not None
            self._put(LANGUAGE, llm_expt_tp=lang.expt_tp,
                      expert_tensor_parallel_num_weight_shards=(
                          lang.expt_tp * lang.expt_gtp_remat),
                      expert_gtp_weight_remat_size=lang.expt_gtp_remat)
        if len(encoders) == 1:
            e = encoders[0]
            if (e.rank_offset == 0 and e.cp == e.pp == e.gtp_remat == 1 and
                    (not e.expert or e.ep == e.expt_tp == 1)):
                self._put(e.name, encoder_tp=e.tp, encoder_dp=e.dp)

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
        names = MIMO_ARGS if self.mimo else (
            "tensor_model_parallel_size", "pipeline_model_parallel_size",
            "context_parallel_size", "expert_model_parallel_size",
            "expert_tensor_parallel_size", "use_tp_pp_dp_mapping")
        for name in names:
            if name not in self.values:
                continue
            value, option = self.values[name], OPTIONS[name]
            assert option is not None  # every name above has an option
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
                option = OPTIONS[name]
                assert option is not None
                out += [option, str(self.values[name])]
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

        mimo_args = any(get(k) is not None for k in MIMO_ARGS)
        out = []
        for name, want in self.values.items():
            if name in (_SINGLE_ONLY if mimo_args else MIMO_ARGS):
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
                        OPTIONS[name], "given" if have else "not given",
                        self.grid_of[name], _flag_text(name, want)))
            elif have != want:
                out.append("%s is %r, but grid '%s' has %s=%d" % (
                    OPTIONS[name] or name, have, self.grid_of[name],
                    _DIM_OF[name], want))
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


#: Arguments of one model that the MIMO example replaces with its own.
_SINGLE_ONLY = ("tensor_model_parallel_size", "pipeline_model_parallel_size",
                "context_parallel_size", "expert_model_parallel_size",
                "expert_tensor_parallel_size", "use_tp_pp_dp_mapping",
                "data_parallel_size", "world_size")


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


# ---------------------------------------------------------------------------
# Stand-ins for Megatron's collection classes (without Megatron-LM)

class _Collection:
    """What the stand-in ProcessGroupCollection does besides its fields."""

    def __init__(self, **kwargs: Any) -> None:
        # A dataclass once make_dataclass derived it (below): Any to mypy.
        names = {f.name for f in dataclasses.fields(cast(Any, self))}
        for k, v in kwargs.items():
            if k not in names:
                raise ValueError("Unknown attribute: %s" % k)
            setattr(self, k, v)

    def __getattr__(self, name: str) -> Any:
        # Only called for attributes never set: a declared field reads None.
        if name in PROCESS_GROUP_COLLECTION_FIELDS:
            return None
        raise AttributeError("'ProcessGroupCollection' object has no "
                             "attribute '%s'" % name)

    def __repr__(self) -> str:
        have = [k for k in PROCESS_GROUP_COLLECTION_FIELDS
                if vars(self).get(k) is not None]
        return "ProcessGroupCollection(%s)" % (", ".join(have) or "empty")


#: Megatron-LM's ProcessGroupCollection where Megatron is not importable: a
#: dataclass of its fields (:data:`PROCESS_GROUP_COLLECTION_FIELDS`), made
#: with keywords that must name fields; a declared field never set reads
#: None.
_FIELD_SPECS: List[Any] = [(n, Any, dataclasses.field(init=False))
                            for n in PROCESS_GROUP_COLLECTION_FIELDS]
ProcessGroupCollection = dataclasses.make_dataclass(
    "ProcessGroupCollection",
    _FIELD_SPECS,
    bases=(_Collection,), init=False, repr=False, eq=False,
    namespace={"__module__": __name__})


class MultiModuleProcessGroupCollection:
    """Megatron-LM's MultiModuleProcessGroupCollection where Megatron is
    not importable: module name -> collection, and the language module's
    name (None when this rank holds no part of it)."""

    def __init__(self, module_pgs: Mapping[str, Any],
                 language_model_module_name: Optional[str] = None) -> None:
        if not module_pgs:
            raise ValueError("module_pgs dict cannot be empty")
        if (language_model_module_name is not None and
                language_model_module_name not in module_pgs):
            raise ValueError("language_model_module_name '%s' not found in "
                             "module_pgs keys: %s"
                             % (language_model_module_name, list(module_pgs)))
        self.module_pgs = dict(module_pgs)
        self.language_model_module_name = language_model_module_name

    def get_language_model_collection(self) -> Any:
        if self.language_model_module_name is None:
            raise ValueError("No language model specified for this collection")
        return self.module_pgs[self.language_model_module_name]

    def get_language_model_cp_size(self) -> int:
        size: int = self.get_language_model_collection().cp.size()
        return size

    def has_language_model(self) -> bool:
        return self.language_model_module_name is not None

    def get_module_collection(self, module_name: str) -> Any:
        if module_name not in self.module_pgs:
            raise ValueError("Module '%s' not found in collections. "
                             "Available: %s" % (module_name, list(self.module_pgs)))
        return self.module_pgs[module_name]

    def __len__(self) -> int:
        return len(self.module_pgs)

    def __getitem__(self, module_name: str) -> Any:
        return self.module_pgs[module_name]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.module_pgs.values())

    def keys(self) -> Iterable[str]:
        return self.module_pgs.keys()

    def values(self) -> Iterable[Any]:
        return self.module_pgs.values()

    def items(self) -> Iterable[Tuple[str, Any]]:
        return self.module_pgs.items()

    def __repr__(self) -> str:
        return "MultiModuleProcessGroupCollection(modules=[%s]%s)" % (
            ", ".join(self.module_pgs),
            ", language_model_module_name='%s'" % self.language_model_module_name
            if self.language_model_module_name else "")


def megatron_classes() -> Tuple[type, type]:
    """(ProcessGroupCollection, MultiModuleProcessGroupCollection):
    Megatron-LM's when it is importable, else this module's stand-ins."""
    try:
        from megatron.core.process_groups_config import (
            MultiModuleProcessGroupCollection as Multi,
            ProcessGroupCollection as Collection)
        return Collection, Multi
    except ImportError:
        return ProcessGroupCollection, MultiModuleProcessGroupCollection


# ---------------------------------------------------------------------------
# The MIMO topology

@dataclasses.dataclass
class ModuleGridSpec:
    """One module's grid, as Megatron's ModuleGridSpec: ``num_ranks`` ranks
    from ``rank_offset``, split tp, gtp_remat, cp, dp, pp with ``dp`` what
    is left, and an expert view expt_tp, ep, expt_gtp_remat, expt_dp, pp
    with ``expt_dp`` what is left (experts default to tp 1).

    Raises:
        ValueError: ``num_ranks`` not divisible by tp*gtp_remat*cp*pp or by
            expt_tp*ep*expt_gtp_remat*pp (Megatron's messages).
    """

    name: str
    num_ranks: int
    tp: int = 1
    cp: int = 1
    pp: int = 1
    ep: int = 1
    gtp_remat: int = 1
    rank_offset: int = 0
    expt_tp: int = 1
    expt_gtp_remat: int = 1
    dp: int = dataclasses.field(init=False)
    expt_dp: int = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        self.dp, self.expt_dp = _derived(self)

    @property
    def size(self) -> int:
        """The ranks of the module's grid."""
        return self.num_ranks


def _derived(spec: Any) -> Tuple[int, int]:
    """(dp, expt_dp) of a spec, with Megatron's messages."""
    dense = spec.tp * spec.gtp_remat * spec.cp * spec.pp
    if spec.num_ranks % dense:
        raise MegatronError(Status.ELAYOUT, "num_ranks (%d) must be divisible "
                            "by tp*gtp_remat*cp*pp (%d)" % (spec.num_ranks, dense))
    expert = spec.expt_tp * spec.ep * spec.expt_gtp_remat * spec.pp
    if spec.num_ranks % expert:
        raise MegatronError(Status.ELAYOUT, "num_ranks (%d) must be divisible "
                            "by expt_tp*ep*expt_gtp_remat*pp (%d)"
                            % (spec.num_ranks, expert))
    return spec.num_ranks // dense, spec.num_ranks // expert


_SPEC_FIELDS = ("name", "num_ranks", "tp", "cp", "pp", "ep", "gtp_remat",
                "rank_offset", "expt_tp", "expt_gtp_remat")


def _spec(s: Any) -> ModuleGridSpec:
    """A ModuleGridSpec from Megatron's, ours, or a mapping of its fields."""
    if isinstance(s, ModuleGridSpec):
        return s
    if isinstance(s, Mapping):
        return ModuleGridSpec(**{k: s[k] for k in _SPEC_FIELDS if k in s})
    return ModuleGridSpec(**{k: getattr(s, k) for k in _SPEC_FIELDS
                             if hasattr(s, k)})


#: The module's groups: Megatron's option name of the group (what
#: high_priority_stream_groups lists), its dims and view, in the order
#: Megatron's topology creates them.
TOPOLOGY_GROUPS: Tuple[Tuple[str, Tuple[str, ...], Optional[str]], ...] = (
    ("tp", ("tp",), None),
    ("gtp_remat", ("gtp_remat",), None),
    ("cp", ("cp",), None),
    ("pp", ("pp",), None),
    ("dp", ("dp",), None),
    ("dp_cp", ("dp", "cp"), None),
    ("gtp_remat_dp_cp", ("gtp_remat", "dp", "cp"), None),
    ("tp_cp", ("tp", "cp"), None),
    ("mp", ("tp", "gtp_remat", "pp"), None),
    ("tp_dp", ("tp", "gtp_remat", "dp"), None),
    ("tp_dp_cp", ("tp", "gtp_remat", "dp", "cp"), None),
    ("intra_dist_opt_instance", ("tp", "gtp_remat", "cp", "dp", "pp"), None),
    ("ep", ("ep",), EXPERT),
    ("ep_tp", ("expt_tp",), EXPERT),
    ("expt_gtp_remat", ("expt_gtp_remat",), EXPERT),
    ("ep_dp", ("expt_dp",), EXPERT),
    ("tp_ep_mp", ("expt_tp", "ep"), EXPERT),
    ("tp_ep_pp", ("expt_tp", "ep", "pp"), EXPERT),
    ("tp_ep_gtp_remat_pp", ("expt_tp", "ep", "expt_gtp_remat", "pp"), EXPERT),
    ("ep_gtp_remat_dp", ("expt_gtp_remat", "expt_dp"), EXPERT),
)

#: Collection field -> its group (by option name above), as Megatron's
#: pg_collection_from_grid fills them; embd and pos_embd come apart.
TOPOLOGY_FIELDS: Dict[str, str] = {
    "tp": "tp", "cp": "cp", "pp": "pp", "dp": "dp", "dp_cp": "dp_cp",
    "dp_cp_gtp_remat": "gtp_remat_dp_cp", "intra_dp_cp": "dp_cp",
    "gtp_remat": "gtp_remat", "tp_cp": "tp_cp", "tp_dp": "tp_dp",
    "tp_dp_cp": "tp_dp_cp", "mp": "mp",
    "intra_dist_opt": "intra_dist_opt_instance", "ep": "ep",
    "expt_tp": "ep_tp", "expt_gtp_remat": "expt_gtp_remat",
    "expt_dp": "ep_dp", "expt_dp_gtp_remat": "ep_gtp_remat_dp",
    "intra_expt_dp": "ep_dp", "tp_ep": "tp_ep_mp", "tp_ep_pp": "tp_ep_pp",
    "tp_ep_pp_with_egtp_remat": "tp_ep_gtp_remat_pp",
}


@dataclasses.dataclass
class HeteroTopology:
    """What :func:`create_topology` built (Megatron's HeteroTopology).

    Attributes:
        grids: module name -> its :class:`~hcg.torch.HyperCommGrid`, every
            group of the module created on it.
        module_pgs: module name -> ProcessGroupCollection (groups are None
            on ranks outside the module).
        schedule_pg_collection: the MultiModuleProcessGroupCollection of
            the modules holding this rank.
        embedding: the language module's (embd, pos_embd) groups of this
            rank (None where it is in none).
    """

    grids: Dict[str, HyperCommGrid]
    module_pgs: Dict[str, Any]
    schedule_pg_collection: Any
    embedding: Tuple[Any, Any] = (None, None)

    def destroy(self) -> None:
        """Destroys every group of the topology that holds this rank, each
        once (a group shared with another holder, already destroyed there,
        is skipped)."""
        seen = set()
        pending = [pg for pg in self.embedding if pg is not None]
        if pending:
            d = dist()
            for pg in pending:
                if id(pg) not in seen:
                    seen.add(id(pg))
                    if _groups.alive(pg, d):
                        d.destroy_process_group(pg)
        self.embedding = (None, None)
        for grid in self.grids.values():
            grid.destroy()


OptionsFn = Callable[[str], Any]


def _options_fn(high_priority_stream_groups: Optional[Sequence[str]],
                pg_options_fn: Optional[OptionsFn]) -> OptionsFn:
    """The pg_options of a group by its option name: ``pg_options_fn``'s
    when it gives any, else NCCL options with a high-priority stream for
    the names listed, else None."""
    listed = set(high_priority_stream_groups or ())

    def options(name: str) -> Any:
        if pg_options_fn is not None:
            found = pg_options_fn(name)
            if found is not None:
                return found
        if name not in listed:
            return None
        nccl = getattr(dist(), "ProcessGroupNCCL", None)
        if nccl is None:
            raise HcgRuntimeError(Status.ENOTSUP, "high_priority_stream_groups names "
                                  "'%s', which needs NCCL's options, and this torch "
                                  "has no ProcessGroupNCCL" % name)
        opts = nccl.Options()
        opts.is_high_priority_stream = True
        return opts

    return options


def _spans_check(specs: Sequence[ModuleGridSpec], world: int) -> None:
    spans = {s.name: (s.rank_offset, s.rank_offset + s.num_ranks) for s in specs}
    values = list(spans.values())
    same = all(v == values[0] for v in values)
    disjoint = all(a[1] <= b[0] or b[1] <= a[0]
                   for i, a in enumerate(values) for b in values[i + 1:])
    if not (same or disjoint):
        raise MegatronError(Status.ELAYOUT, "Module grids must either fully "
                            "share ranks or be pairwise disjoint, got %s" % spans)
    covered: Set[int] = set()
    for lo, hi in values:
        covered.update(range(lo, hi))
    if covered != set(range(world)):
        raise MegatronError(Status.ELAYOUT, "Module grids must partition the "
                            "world [0, %d) with no gaps, got %s" % (world, spans))


def create_topology(specs: Sequence[Any],
                    high_priority_stream_groups: Optional[Sequence[str]] = None,
                    *, backend: Optional[str] = None, timeout: Optional[Timeout] = None,
                    pg_options_fn: Optional[OptionsFn] = None,
                    language: str = LANGUAGE,
                    collection_cls: Optional[type] = None,
                    multi_cls: Optional[type] = None) -> HeteroTopology:
    """Megatron's MIMO topology from its module specs, on groups made by
    their members alone.

    Args:
        specs: one per module: Megatron's ``ModuleGridSpec``, this module's
            :class:`ModuleGridSpec`, or a mapping of the same fields.
            Exactly one is named ``language``.
        high_priority_stream_groups: option names of groups (as Megatron's
            ``--high-priority-stream-groups``: ``tp``, ``dp_cp``, ``ep``,
            ``embd``, ... see :data:`TOPOLOGY_GROUPS`) that get NCCL
            options with a high-priority stream.
        backend: (hcg) the groups' backend; default the default group's.
        timeout: (hcg) how long a group waits for its members (timedelta or
            seconds; default ``HCG_TIMEOUT``, else 300 s).
        pg_options_fn: (hcg) option name -> pg_options for that group (None:
            the default), e.g. other NCCL options per group.
        language: (hcg) the language module's name.
        collection_cls, multi_cls: the classes built; default Megatron's
            ProcessGroupCollection and MultiModuleProcessGroupCollection,
            else this module's stand-ins.

    Returns:
        A :class:`HeteroTopology`.

    Raises:
        ValueError: no specs, not exactly one language module, sizes that do
            not divide, module spans that partly overlap or leave gaps
            (Megatron's messages; also :class:`MegatronError`); checked
            before any group is made.
        NotInitializedError: torch.distributed is not initialized (a
            RuntimeError, as Megatron raises there, and a ValueError).
        hcg.HcgError: a group whose members do not all arrive (ETIMEOUT);
            the groups made so far are destroyed.
    """
    if not specs:
        raise MegatronError(Status.EINVAL, "create_topology requires at least "
                            "one ModuleGridSpec")
    mods = [_spec(s) for s in specs]
    langs = [m for m in mods if m.name == language]
    if len(langs) != 1:
        raise MegatronError(Status.EINVAL, "create_topology requires exactly "
                            "one spec named %r (the language module), got %d"
                            % (language, len(langs)))
    names = [m.name for m in mods]
    if len(set(names)) != len(names):
        raise MegatronError(Status.EINVAL, "create_topology: module names "
                            "repeat: %s" % names)
    d = require_initialized("hcg.torch.megatron.create_topology")
    world, rank = d.get_world_size(), d.get_rank()
    options = _options_fn(high_priority_stream_groups, pg_options_fn)
    if collection_cls is None or multi_cls is None:
        found = megatron_classes()
        collection_cls = collection_cls or found[0]
        multi_cls = multi_cls or found[1]

    # The grids first (no group yet): their errors are Megatron's.
    grids: Dict[str, HyperCommGrid] = {}
    for m in mods:
        grid = HyperCommGrid([m.tp, m.gtp_remat, m.cp, m.dp, m.pp],
                             ["tp", "gtp_remat", "cp", "dp", "pp"],
                             rank_offset=m.rank_offset, backend=backend,
                             name=m.name)
        grid.register_view(EXPERT, [m.expt_tp, m.ep, m.expt_gtp_remat,
                                    m.expt_dp, m.pp],
                           ["expt_tp", "ep", "expt_gtp_remat", "expt_dp", "pp"],
                           shared_dims=["pp"])
        grid._torch()  # its world is torch's
        grids[m.name] = grid
    _spans_check(mods, world)
    topo = HeteroTopology(grids, {}, None)
    try:
        plans: List[_Planned] = []
        plan_of: Dict[Tuple[str, str], _Planned] = {}
        for m in mods:
            grid = grids[m.name]
            for opt, dims, view in TOPOLOGY_GROUPS:
                kwargs: Dict[str, Any] = {"timeout": timeout}
                found = options(opt)
                if found is not None:
                    kwargs["pg_options"] = found
                p = grid._plan(list(dims), view, kwargs, d, rank)
                plans.append(p)
                plan_of[(m.name, opt)] = p
        embd = _embedding_specs(grids[language], rank, backend, timeout, options)
        made = _make(plans, rank, extra=[s for s in embd if s is not None])
        topo.embedding = tuple(None if s is None else made[s.key]  # type: ignore[assignment]
                               for s in embd)
        for m in mods:
            grid = grids[m.name]
            pgc = collection_cls()
            for field, opt in TOPOLOGY_FIELDS.items():
                key = plan_of[(m.name, opt)].key
                setattr(pgc, field, grid._pgs[key])
            pgc.embd, pgc.pos_embd = (topo.embedding if m.name == language
                                      else (None, None))
            topo.module_pgs[m.name] = pgc
        mine = {m.name: topo.module_pgs[m.name] for m in mods
                if m.rank_offset <= rank < m.rank_offset + m.num_ranks}
        topo.schedule_pg_collection = multi_cls(
            module_pgs=mine,
            language_model_module_name=language if language in mine else None)
        return topo
    except BaseException:
        topo.destroy()
        raise


def _embedding_specs(grid: HyperCommGrid, rank: int, backend: Optional[str],
                     timeout: Optional[Timeout], options: OptionsFn
                     ) -> List[Optional[_groups.GroupSpec]]:
    """This rank's embd and pos_embd groups of the language module (None
    where it is in none): the first and last rank of its pp group, and the
    first (Megatron's default embedding ranks)."""
    out: List[Optional[_groups.GroupSpec]] = []
    for kind in ("embd", "pos_embd"):
        opts = options(kind)  # asked on every rank, as Megatron does
        members = (grid.layout.embedding_group(rank, kind)
                   if grid.layout.grid(grid.name).contains(rank) else None)
        if members is None:
            out.append(None)
            continue
        key = "%s#%s" % (grid.name, kind)
        out.append(_groups.GroupSpec(
            key, tuple(members), backend or grid.backend or STATE.backend,
            group_timeout(timeout), opts,
            "%s.%s" % (key, grid._tag) if opts is not None
            else _groups.members_tag(members), shared=opts is None))
    return out
