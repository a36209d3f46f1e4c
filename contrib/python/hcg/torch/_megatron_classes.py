"""Megatron-LM's collection classes where Megatron is not importable
(private; hcg.torch.megatron exports them): ProcessGroupCollection and
MultiModuleProcessGroupCollection, with Megatron main's fields, checks and
messages, and :func:`megatron_classes`, which picks Megatron's own when it
is there."""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Iterator, List, Mapping, Optional, Tuple, cast

#: The module users name these classes by (pickling, repr).
_PUBLIC = "hcg.torch.megatron"

#: Megatron-LM main's ProcessGroupCollection fields, in its order.
PROCESS_GROUP_COLLECTION_FIELDS: Tuple[str, ...] = (
    "tp", "pp", "mp", "embd", "pos_embd", "cp", "tp_cp", "hcp", "ep",
    "expt_tp", "tp_ep", "tp_ep_pp", "tp_ep_pp_with_egtp_remat", "tp_dp_cp",
    "dp", "dp_cp", "dp_cp_gtp_remat", "dp_cp_ag", "gtp_remat",
    "expt_gtp_remat", "expt_dp", "expt_dp_gtp_remat", "expt_dp_ag",
    "intra_dp_cp", "intra_expt_dp", "inter_dist_opt", "intra_dist_opt",
)


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
    namespace={"__module__": _PUBLIC})


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


MultiModuleProcessGroupCollection.__module__ = _PUBLIC
