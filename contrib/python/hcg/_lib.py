"""Loading libhcg and declaring the C prototypes (private).

Only the stable part of hcg.h is bound: layouts, requests, groups, collection
fields, embedding groups, stages, bridges, hcg_rank_env, Megatron's arguments
(hcg_megatron.h), and of contexts just
what hcg.torch.init needs (a context with a timeout, hcg_ctx_publish and
hcg_ctx_fetch), and the fan-in's slices (hcg_slice_*) its stores meet in.
Communicators are not bound (use hcg.torch, or libhcg's C API directly).

The library is looked up, first match wins:
  1. $HCG_LIBRARY, a path (or a name dlopen understands);
  2. the libhcg.so.1 beside this file, which the wheel carries (setup.py
     builds it from the same C sources, PMIx opened at run time);
  3. "libhcg.so.1", the ABI this binding was written for, through the dynamic
     loader's own search (LD_LIBRARY_PATH, the ld.so cache): the system's,
     as Debian's python3-hcg uses;
  4. ctypes.util.find_library("hcg");
  5. "libhcg.so" (a development install with only the unversioned link).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from typing import Any, List, Optional

# Values of the hcg.h macros this binding relies on. They are part of the
# stable API; tests check them against the library where it can tell.
ENV_VERSION = 1
CONFIG_VERSION = 1
ERROR_MAX = 1024
KEY_MAX = 640
MAX_WORLD = 2147483647
UNSET = -1  # HCG_UNSET


class Error(ctypes.Structure):
    """struct hcg_error"""

    _fields_ = [
        ("code", ctypes.c_int),
        ("line", ctypes.c_int),
        ("column", ctypes.c_int),
        ("message", ctypes.c_char * ERROR_MAX),
    ]


class LayoutConfig(ctypes.Structure):
    """struct hcg_layout_config, filled as HCG_LAYOUT_CONFIG_INIT does: its
    size and version first, every other field unset (0 or NULL)."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("version", ctypes.c_uint),
        ("world_size", ctypes.c_int),
        ("language", ctypes.c_char_p),
        ("max_bytes", ctypes.c_size_t),
        ("source_name", ctypes.c_char_p),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.size = ctypes.sizeof(LayoutConfig)
        self.version = CONFIG_VERSION


class CtxConfig(ctypes.Structure):
    """struct hcg_ctx_config, filled as HCG_CTX_CONFIG_INIT does: its size
    and version, every other field unset; hcg.torch.init sets timeout_s."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("version", ctypes.c_uint),
        ("getenv_fn", ctypes.c_void_p),
        ("getenv_arg", ctypes.c_void_p),
        ("envp", ctypes.c_void_p),
        ("pmix", ctypes.c_int),
        ("timeout_s", ctypes.c_int),
        ("device", ctypes.c_int),
        ("tag", ctypes.c_char_p),
        ("fanin", ctypes.c_int),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.size = ctypes.sizeof(CtxConfig)
        self.version = CONFIG_VERSION
        self.pmix = 0  # HCG_PMIX_AUTO
        self.timeout_s = self.device = self.fanin = UNSET


class Request(ctypes.Structure):
    """struct hcg_request"""

    _fields_ = [
        ("grid", ctypes.c_int),
        ("view", ctypes.c_int),
        ("dims", ctypes.c_uint32),
    ]


class Group(ctypes.Structure):
    """struct hcg_group"""

    _fields_ = [
        ("req", Request),
        ("ordinal", ctypes.c_int),
        ("first", ctypes.c_int),
        ("size", ctypes.c_int),
        ("index", ctypes.c_int),
    ]


class Bridge(ctypes.Structure):
    """struct hcg_bridge"""

    _fields_ = [
        ("src", ctypes.c_int),
        ("dest", ctypes.c_int),
        ("colocated", ctypes.c_int),
        ("kind", ctypes.c_int),
        ("scale", ctypes.c_int),
        ("dest_cp", ctypes.c_int),
        ("src_lanes", ctypes.c_int),
        ("dest_lanes", ctypes.c_int),
    ]


class MegatronArg(ctypes.Structure):
    """struct hcg_megatron_arg"""

    _fields_ = [
        ("dest", ctypes.c_char_p),
        ("option", ctypes.c_char_p),
        ("dim", ctypes.c_char_p),
        ("kind", ctypes.c_int),
        ("scope", ctypes.c_int),
        ("min", ctypes.c_int),
        ("dflt", ctypes.c_int),
    ]


class MegatronSizes(ctypes.Structure):
    """struct hcg_megatron_sizes"""

    _fields_ = [(name, ctypes.c_int) for name in (
        "tp", "gtp_remat", "cp", "dp", "pp", "expert", "ep", "expt_tp",
        "expt_gtp_remat", "expt_dp", "pp_before_dp")]


class MegatronValue(ctypes.Structure):
    """struct hcg_megatron_value"""

    _fields_ = [
        ("arg", ctypes.c_int),
        ("value", ctypes.c_int),
        ("grid", ctypes.c_int),
    ]


# void (*hcg_warn_fn)(void *arg, const char *message)
WARN_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)


class MegatronConfig(ctypes.Structure):
    """struct hcg_megatron_config, filled as HCG_MEGATRON_CONFIG_INIT does."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("version", ctypes.c_uint),
        ("world_size", ctypes.c_int),
        ("encoder_name", ctypes.c_char_p),
        ("warn", WARN_FN),
        ("warn_arg", ctypes.c_void_p),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.size = ctypes.sizeof(MegatronConfig)
        self.version = CONFIG_VERSION


# int (*hcg_env_fn)(void *arg, const char *name, const char *value)
ENV_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p,
                          ctypes.c_char_p)

_c_int = ctypes.c_int
_c_str = ctypes.c_char_p
_L = ctypes.c_void_p  # const hcg_layout *: opaque
_P = ctypes.POINTER
_int_p = _P(ctypes.c_int)

# name: (restype, argtypes). Kept in header order so that a reader can check
# it against hcg.h line by line.
_PROTOTYPES = {
    "hcg_strerror": (_c_str, [_c_int]),
    "hcg_version": (_c_str, []),
    "hcg_layout_parse": (_c_int, [ctypes.c_char_p, ctypes.c_size_t,
                                  _P(LayoutConfig), _P(_L), _P(Error)]),
    "hcg_layout_load": (_c_int, [_c_str, _P(LayoutConfig), _P(_L),
                                 _P(Error)]),
    "hcg_layout_free": (None, [_L]),
    "hcg_layout_text": (_c_str, [_L]),
    "hcg_layout_world_size": (_c_int, [_L]),
    "hcg_layout_mode": (_c_int, [_L]),
    "hcg_mode_name": (_c_str, [_c_int]),
    "hcg_layout_language": (_c_int, [_L]),
    "hcg_layout_num_grids": (_c_int, [_L]),
    "hcg_layout_find_grid": (_c_int, [_L, _c_str]),
    "hcg_grid_name": (_c_str, [_L, _c_int]),
    "hcg_grid_offset": (_c_int, [_L, _c_int]),
    "hcg_grid_size": (_c_int, [_L, _c_int]),
    "hcg_grid_contains": (_c_int, [_L, _c_int, _c_int]),
    "hcg_grid_num_views": (_c_int, [_L, _c_int]),
    "hcg_grid_find_view": (_c_int, [_L, _c_int, _c_str]),
    "hcg_view_name": (_c_str, [_L, _c_int, _c_int]),
    "hcg_view_num_dims": (_c_int, [_L, _c_int, _c_int]),
    "hcg_view_find_dim": (_c_int, [_L, _c_int, _c_int, _c_str]),
    "hcg_dim_name": (_c_str, [_L, _c_int, _c_int, _c_int]),
    "hcg_dim_size": (_c_int, [_L, _c_int, _c_int, _c_int]),
    "hcg_dim_stride": (_c_int, [_L, _c_int, _c_int, _c_int]),
    "hcg_dim_shared": (_c_int, [_L, _c_int, _c_int, _c_int]),
    "hcg_rank_coords": (_c_int, [_L, _c_int, _c_int, _c_int, _int_p, _c_int]),
    "hcg_request_make": (_c_int, [_L, _c_int, _c_int, _P(ctypes.c_char_p),
                                  _c_int, _P(Request), _P(Error)]),
    "hcg_request_parse": (_c_int, [_L, _c_str, _P(Request), _P(Error)]),
    "hcg_request_key": (_c_int, [_L, _P(Request), ctypes.c_char_p,
                                 ctypes.c_size_t]),
    "hcg_request_group_size": (_c_int, [_L, _P(Request)]),
    "hcg_request_num_groups": (_c_int, [_L, _P(Request)]),
    "hcg_group_of_rank": (_c_int, [_L, _P(Request), _c_int, _P(Group)]),
    "hcg_group_at": (_c_int, [_L, _P(Request), _c_int, _P(Group)]),
    "hcg_group_member": (_c_int, [_L, _P(Group), _c_int]),
    "hcg_group_members": (_c_int, [_L, _P(Group), _int_p, _c_int]),
    "hcg_field_name": (_c_str, [_c_int]),
    "hcg_field_find": (_c_int, [_c_str]),
    "hcg_field_alias": (_c_int, [_c_int]),
    "hcg_collection_request": (_c_int, [_L, _c_int, _c_int, _P(Request)]),
    "hcg_embedding_num_groups": (_c_int, [_L]),
    "hcg_embedding_group_at": (_c_int, [_L, _c_int, _c_int, _int_p, _int_p]),
    "hcg_embedding_group_of_rank": (_c_int, [_L, _c_int, _c_int, _int_p,
                                             _int_p]),
    "hcg_rank_stage": (_c_int, [_L, _c_int, _c_int, _int_p, _int_p]),
    "hcg_bridge_kind_name": (_c_str, [_c_int]),
    "hcg_bridge_make": (_c_int, [_L, _c_int, _c_int, _P(Bridge), _P(Error)]),
    "hcg_bridge_num_groups": (_c_int, [_L, _P(Bridge)]),
    "hcg_bridge_group_at": (_c_int, [_L, _P(Bridge), _c_int, _int_p, _c_int,
                                     _int_p]),
    "hcg_bridge_group_of_rank": (_c_int, [_L, _P(Bridge), _c_int, _int_p,
                                          _c_int, _int_p]),
    "hcg_bridge_batch_slice": (_c_int, [_L, _P(Bridge), _c_int,
                                        ctypes.c_longlong,
                                        _P(ctypes.c_longlong),
                                        _P(ctypes.c_longlong), _P(Error)]),
    "hcg_bridge_leader": (_c_int, [_L, _P(Bridge), _c_int, _c_int]),
    "hcg_bridge_targets": (_c_int, [_L, _P(Bridge), _c_int, _int_p, _int_p]),
    "hcg_rank_env": (_c_int, [_L, _c_int, ENV_FN, ctypes.c_void_p]),
    "hcg_megatron_arg_count": (_c_int, []),
    "hcg_megatron_arg_at": (_P(MegatronArg), [_c_int]),
    "hcg_megatron_layout": (_c_int, [_c_str, _P(MegatronConfig), _P(_L),
                                     _P(Error)]),
    "hcg_megatron_grid_sizes": (_c_int, [_L, _c_int, _P(MegatronSizes),
                                         _P(Error)]),
    "hcg_megatron_values": (_c_int, [_L, _P(MegatronValue), _c_int, _int_p,
                                     _P(Error)]),
    # Contexts, only as far as hcg.torch.init needs them: the default
    # config but for the timeout, and the publication of every rank's
    # store.
    "hcg_ctx_init": (_c_int, [_P(CtxConfig), _P(ctypes.c_void_p),
                              _P(Error)]),
    "hcg_ctx_free": (None, [ctypes.c_void_p]),
    "hcg_ctx_publish": (_c_int, [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                 _P(ctypes.c_longlong), _P(Error)]),
    "hcg_ctx_fetch": (_c_int, [ctypes.c_void_p, ctypes.c_longlong, _c_int,
                               ctypes.c_void_p, ctypes.c_size_t, _P(Error)]),
    # The fan-in's slices: who relays for whom (hcg.torch._places).
    "hcg_slice_levels": (_c_int, [_c_int, _c_int]),
    "hcg_slice_route": (_c_int, [_c_int, _c_int, _c_int, _int_p, _c_int]),
    "hcg_slice_reach": (_c_int, [_c_int, _c_int, _c_int]),
}

_lock = threading.Lock()
_lib: Optional[ctypes.CDLL] = None


def _candidates() -> List[str]:
    override = os.environ.get("HCG_LIBRARY")
    if override:
        # An explicit choice is final: silently falling back to another copy
        # of the library would hide the mistake the variable was set to fix.
        return [override]
    names = []
    own = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libhcg.so.1")
    if os.path.exists(own):
        names.append(own)
    names.append("libhcg.so.1")
    found = ctypes.util.find_library("hcg")
    if found:
        names.append(found)
    names.append("libhcg.so")
    return names


def _open() -> ctypes.CDLL:
    failures = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as exc:
            failures.append("%s: %s" % (name, exc))
            continue
        for fname, (restype, argtypes) in _PROTOTYPES.items():
            try:
                fn = getattr(lib, fname)
            except AttributeError:
                raise OSError("%s does not export %s: it is not a libhcg with "
                              "ABI 1 (set HCG_LIBRARY to the right file)"
                              % (name, fname)) from None
            fn.restype = restype
            fn.argtypes = argtypes
        return lib
    raise OSError("cannot load libhcg (install libhcg1, add its directory to "
                  "LD_LIBRARY_PATH, or set HCG_LIBRARY to the path of "
                  "libhcg.so.1): " + "; ".join(failures))


def lib() -> Any:
    """The loaded library with its prototypes declared (loaded once)."""
    global _lib
    if _lib is None:
        with _lock:
            if _lib is None:
                _lib = _open()
    return _lib


def text(value: Optional[bytes]) -> str:
    """A const char * result as str ('' for NULL)."""
    return value.decode("utf-8", "replace") if value else ""
