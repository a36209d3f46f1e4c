"""Process groups made by their members alone.

torch's classic ``new_group`` is collective over the whole world: every rank
takes part in creating every group, member or not. hcg knows each rank's
groups without asking anyone, so here only the members of a group create it,
on a store prefix hcg names (``hcg/TAG/FIRST_MEMBER/N/``), the same on every
member whatever groups each made before. How depends on the torch, detected
by feature, never by version string (:func:`way`):

* ``constructor``: where a backend's constructor gives a process group
  (torch 1.x: ``ProcessGroupGloo``, ``ProcessGroupNCCL``), that constructor
  on a ``PrefixStore`` of the group, then registered in torch's tables so
  that every ``torch.distributed`` call accepts it (``get_rank(group)``,
  ``get_backend``, ``destroy_process_group``, ``get_process_group_ranks``);
* ``helper``: where process groups wrap backends (torch 2.x), torch's own
  ``_new_process_group_helper``, which builds and registers the group, given
  hcg's name for it (the name is the group's store prefix);
* ``public``: only where neither exists, ``new_group(ranks,
  use_local_synchronization=True)``. torch names that group itself, and the
  torches measured salt the name with a count local to the process (2.6:
  its number of groups, 2.14: its group counter), so members that made
  different numbers of groups before wait on different prefixes forever.
  hcg never takes this path on those torches.

Before torch connects a group, its members meet under its prefix
(:mod:`hcg.torch._meet`): a member that never arrives is named when the
timeout passes, and a member that fails tells the others at once. A rank
whose group fails reports that failure on every group it has not finished,
so their other members stop waiting too.

Gloo connects eagerly, so where hcg calls the backend's constructor itself
(torch 1.x) a rank's groups are built on up to ``MAX_THREADS`` threads,
each with its own store client (a ``TCPStore``
client holds its lock while it waits). Every rank takes its groups in one
global order (largest first, then by key): the first unfinished group in
that order always has all its members working on it, so the threads cannot
deadlock.
"""

from __future__ import annotations

import concurrent.futures
import datetime
import hashlib
import os
import threading
import time
import weakref
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ..errors import HcgError, HcgRuntimeError, HcgValueError, Status
from . import _binding, _meet, _places
from . import store as jobstore
from ._base import (STATE, Dist, ProcessGroup, Store, accepts, dist,
                    keep_backends, require_initialized)

#: Most groups a rank connects at once. Measured with bench_torch's
#: collection at 32 tasks on 2 CPUs (7 shared groups per rank, torch 1.13):
#: all 7 at once took 4.5-6.3 s, 2 to 4 at once 0.65-0.87 s, one after
#: another 0.9-1.1 s. Every member connecting all its groups at once makes
#: the whole job's connections contend; a few at a time keeps the overlap
#: without the contention.
MAX_THREADS = _places.MEMBER_CLIENTS


class GroupSpec(NamedTuple):
    """One group to create: its key, its members (global ranks, ascending)
    and the keyword arguments of its creation (backend, timeout,
    pg_options). ``tag`` names the group in the store (default: the key);
    every member must give the same tag. ``desc`` is torch's group_desc
    where torch takes one (default: the key). ``shared``: the group may
    come from, and goes to, this process's shared groups (see
    :func:`build`); only a spec without ``pg_options`` and ``desc`` is.
    ``world``: the groups of this spec's tag hold every rank of the job,
    and every rank asks for its own in the same call (one key over a grid
    that spans the job), so that it can be made as one split of the
    world's communicator where torch splits (hcg.torch._binding)."""

    key: str
    members: Tuple[int, ...]
    backend: Optional[str]
    timeout: datetime.timedelta
    pg_options: Any = None
    tag: Optional[str] = None
    desc: Optional[str] = None
    shared: bool = False
    world: bool = False


def members_tag(members: Sequence[int]) -> str:
    """A store name for a group of these ranks, the same on every member:
    their count and a digest of the list (O(group size) to compute)."""
    digest = hashlib.sha1(",".join(map(str, members)).encode()).hexdigest()
    return "ranks%d.%s" % (len(members), digest[:16])


_created_lock = threading.Lock()
#: tag -> how many times this process has created it: part of the store
#: prefix, so that a group made again after destroy_process_group does not
#: read the addresses of its earlier life. Every member creates a tag the
#: same number of times, so they agree on the prefix.
_created: Dict[str, int] = {}


def _registry(c10d: Any) -> Optional[Tuple[Dict[Any, Any], Dict[Any, Any], Dict[Any, Any]]]:
    """torch's process-group tables: map (backend, store), names, and
    global-to-group ranks; None when this torch has neither layout."""
    world = getattr(c10d, "_world", None)
    if world is not None and hasattr(world, "pg_map"):
        return world.pg_map, world.pg_names, world.pg_group_ranks
    try:
        return c10d._pg_map, c10d._pg_names, c10d._pg_group_ranks
    except AttributeError:
        return None


class _Way:
    """How this torch makes a group with its members alone."""

    name = ""
    #: whether groups may be made on several threads at once
    threads = True

    def make(self, d: Dist, s: GroupSpec, grank: int, store: Store,
             prefix: str, default_backend: str) -> ProcessGroup:
        """The process group of ``s`` for group rank ``grank``, on
        ``store`` (the job's store) under ``prefix``, registered in
        torch's tables."""
        raise NotImplementedError


class _Constructor(_Way):
    """The backend's own constructor, then hcg registers the group."""

    name = "constructor"

    def __init__(self, tables: Tuple[Dict[Any, Any], Dict[Any, Any], Dict[Any, Any]]) -> None:
        self.pg_map, self.pg_names, self.pg_group_ranks = tables
        #: gloo devices no group is connecting on at the moment.
        self._devices: List[Any] = []
        self._devices_lock = threading.Lock()

    def _take_device(self, d: Any) -> Any:
        """A gloo device (one listening socket, one event loop) that no
        other group of this process is connecting on: a free one, else a
        new one. Where torch opens one per group, hcg keeps as many as it
        connects groups at once (at most MAX_THREADS) and uses them again:
        two groups never connect their full meshes on one device at the
        same time. With one device for all of them, a rank of a local job
        on a busy machine now and then stayed in gloo's constructor long
        past its timeout (1 job in hundreds; its stack in tests/ranks.py's
        report), and sharing a device among groups that connect at once
        is the one thing hcg did there that torch does not.
        GLOO_SOCKET_IFNAME picks the interface, as for torch's."""
        with self._devices_lock:
            if self._devices:
                return self._devices.pop()
        iface = os.environ.get("GLOO_SOCKET_IFNAME")
        return (d.ProcessGroupGloo.create_device(interface=iface.split(",")[0])
                if iface else d.ProcessGroupGloo.create_default_device())

    def _give_device(self, device: Any) -> None:
        with self._devices_lock:
            self._devices.append(device)

    def make(self, d: Dist, s: GroupSpec, grank: int, store: Store,
             prefix: str, default_backend: str) -> ProcessGroup:
        backend = str(s.backend or default_backend)
        ps = d.PrefixStore(prefix, store)
        if backend == "gloo":
            opts = d.ProcessGroupGloo._Options()
            device = self._take_device(d)
            opts._devices = [device]
            opts._timeout = s.timeout
            try:
                pg = d.ProcessGroupGloo(ps, grank, len(s.members), opts)
            finally:
                self._give_device(device)
        elif backend == "nccl":
            opts = s.pg_options
            if opts is None:
                opts = d.ProcessGroupNCCL.Options()
            opts._timeout = s.timeout
            pg = d.ProcessGroupNCCL(ps, grank, len(s.members), opts)
        else:
            raise HcgRuntimeError(Status.ENOTSUP, "hcg.torch makes gloo and nccl "
                                  "groups on this PyTorch, not '%s' (group '%s')"
                                  % (backend, s.key))
        self.pg_map[pg] = (backend, ps)
        self.pg_names[pg] = "hcg:%s" % prefix[4:-1]  # never numeric
        self.pg_group_ranks[pg] = {m: i for i, m in enumerate(s.members)}
        return pg


class _Helper(_Way):
    """torch's own helper, with hcg's name for the group."""

    name = "helper"
    # One group at a time: torch's helper was never made to run on several
    # threads at once (it updates torch's tables in many steps), and with
    # 4 threads on torch 2.6 a process crashed now and then when its
    # groups were freed (pybind11's "Tried to deallocate unregistered
    # instance", or a segmentation fault in libtorch_python; 2 of some 60
    # jobs on Debian 13, both on a busy 2-CPU machine).
    threads = False

    def __init__(self, helper: Callable[..., Any], pg_group_ranks: Dict[Any, Any]) -> None:
        self.helper = helper
        self.pg_group_ranks = pg_group_ranks
        self.options = next((n for n in ("backend_options", "pg_options")
                             if accepts(helper, n)), None)
        self.desc = accepts(helper, "group_desc")
        self.device = accepts(helper, "device_id")

    def make(self, d: Dist, s: GroupSpec, grank: int, store: Store,
             prefix: str, default_backend: str) -> ProcessGroup:
        kwargs: Dict[str, Any] = {
            "group_size": len(s.members), "group_rank": grank,
            "global_ranks_in_group": list(s.members),
            "backend": d.Backend(str(s.backend or default_backend)),
            # The helper's store prefix is the name and a '/': hcg's prefix.
            "store": store, "group_name": prefix[:-1], "timeout": s.timeout}
        if s.pg_options is not None:
            if self.options is None:
                raise HcgRuntimeError(Status.ENOTSUP, "group '%s': this PyTorch's "
                                      "group helper takes no backend options" % s.key)
            kwargs[self.options] = s.pg_options
        if self.desc:
            kwargs["group_desc"] = s.desc or s.key
        if self.device and _binding.is_nccl(str(kwargs["backend"])):
            # The task's GPU: torch connects the group now, inside hcg's
            # meeting and timeout, not at its first collective.
            device = _task_device()
            if device is not None:
                kwargs["device_id"] = device
        made = self.helper(**kwargs)
        pg = made[0] if isinstance(made, tuple) else made
        self.pg_group_ranks[pg] = {m: i for i, m in enumerate(s.members)}
        return pg


class _Public(_Way):
    """torch's public members-only new_group (see the module's docstring
    for why it is the last resort)."""

    name = "public"
    threads = False  # torch's names follow the order of the calls

    def __init__(self, desc: bool) -> None:
        self.desc = desc

    def make(self, d: Dist, s: GroupSpec, grank: int, store: Store,
             prefix: str, default_backend: str) -> ProcessGroup:
        kwargs: Dict[str, Any] = {"ranks": list(s.members), "timeout": s.timeout,
                                  "backend": s.backend, "pg_options": s.pg_options,
                                  "use_local_synchronization": True}
        if self.desc:
            kwargs["group_desc"] = s.desc or s.key
        return d.new_group(**kwargs)


class _Split(_Way):
    """One split of the world's communicator (torch's ``split_group``),
    where torch makes NCCL groups that way (hcg.torch._binding): every rank
    of the job calls it for the same keys in the same order, each naming
    its own group, so no rank holds the others'."""

    name = "split"
    threads = False  # a collective of the whole job, in one order

    def __init__(self, split_group: Callable[..., Any]) -> None:
        self.split_group = split_group
        self.desc = accepts(split_group, "group_desc")

    def make(self, d: Dist, s: GroupSpec, grank: int, store: Store,
             prefix: str, default_backend: str) -> ProcessGroup:
        kwargs: Dict[str, Any] = {"split_ranks": [list(s.members)],
                                  "timeout": s.timeout}
        if s.pg_options is not None:
            kwargs["pg_options"] = s.pg_options
        if self.desc:
            kwargs["group_desc"] = s.desc or s.key
        pg = self.split_group(**kwargs)
        non_member = getattr(getattr(d, "GroupMember", None), "NON_GROUP_MEMBER", None)
        if pg is None or pg is non_member:
            raise HcgRuntimeError(Status.EIO, "%s: torch's split_group gave rank %d "
                                  "no group" % (describe(s), s.members[grank]))
        return pg


def _task_device() -> Any:
    """This task's CUDA device, when it is known: torch's current device
    where that cannot be a default left unset (one visible GPU, a device
    other than 0, or a task whose local rank is 0); else None, and the
    group connects at its first collective as before, on whatever device
    the program chose by then."""
    import torch

    if not torch.cuda.is_available():
        return None
    current = torch.cuda.current_device()
    local = os.environ.get("LOCAL_RANK") or os.environ.get("SLURM_LOCALID") or "0"
    if torch.cuda.device_count() == 1 or current != 0 or local == "0":
        return torch.device("cuda", current)
    return None


_way_lock = threading.Lock()
_ways: Dict[int, _Way] = {}


def way(d: Optional[Dist] = None) -> _Way:
    """How this torch makes groups with their members alone (detected once
    per process): ``.name`` is 'constructor', 'helper' or 'public'."""
    d = d or dist()
    with _way_lock:
        found = _ways.get(id(d))
        if found is None:
            found = _ways[id(d)] = _detect(d)
        return found


def _detect(d: Dist) -> _Way:
    c10d = d.distributed_c10d
    tables = _registry(c10d)
    gloo = getattr(d, "ProcessGroupGloo", None)
    if tables is not None and gloo is not None and \
            issubclass(gloo, d.ProcessGroup):
        return _Constructor(tables)
    helper = getattr(c10d, "_new_process_group_helper", None)
    if tables is not None and helper is not None and \
            accepts(helper, "group_name") and accepts(helper, "store"):
        return _Helper(helper, tables[2])
    if accepts(d.new_group, "use_local_synchronization"):
        return _Public(accepts(d.new_group, "group_desc"))
    raise HcgRuntimeError(Status.ENOTSUP, "this PyTorch has neither a backend "
                          "constructor that gives a process group, nor a group "
                          "helper that takes a group name, nor "
                          "new_group(use_local_synchronization=): groups cannot be "
                          "made by their members alone")


def members_only_public(d: Dist) -> bool:
    """True when this torch's groups are made by its public
    new_group(use_local_synchronization=True) (the last resort)."""
    return way(d).name == "public"


def _generation(tag: str) -> int:
    with _created_lock:
        n = _created.get(tag, 0)
        _created[tag] = n + 1
        return n


def _prefix(s: GroupSpec) -> str:
    """The group's store prefix: the tag (the key, unless the caller named
    the group otherwise) names every group of an enumeration, the first
    member tells this one from the others, and the generation keeps a group
    made again from meeting its earlier life."""
    tag = s.tag or s.key
    return "hcg/%s/%d/%d/" % (tag, s.members[0], _generation(tag))


def describe(s: GroupSpec) -> str:
    """The group in messages: "process group 'KEY' (ranks ...)"."""
    return "process group '%s' (ranks %s)" % (s.key, _meet.span(s.members))


# ---- the process's shared groups ---------------------------------------------

#: What identifies a shared group: its store tag, its members, its backend
#: and its timeout in seconds.
PoolKey = Tuple[str, Tuple[int, ...], str, float]

_pool_lock = threading.Lock()
#: The shared groups of this process (see build), by PoolKey. Bounded by
#: the groups that hold this rank, never by the world size.
_pool: Dict[PoolKey, ProcessGroup] = {}
#: The default group the shared groups were made under: a weak reference
#: to it (or its id where it takes none).
_pool_world: List[Any] = [None]


def _same_world(d: Dist, token: Any) -> bool:
    """Whether ``token`` (from _world_token) is the current default group."""
    if token is None:
        return False
    current = _binding.default_group(d)
    if current is None:
        return False
    if isinstance(token, weakref.ref):
        return token() is current
    return bool(token == id(current))


def _world_token(d: Dist) -> Any:
    current = _binding.default_group(d)
    if current is None:
        return None
    try:
        return weakref.ref(current)
    except TypeError:
        return id(current)


def world_token(d: Optional[Dist] = None) -> Any:
    """A token of torch's current default process group, for
    :func:`same_world`: caches of groups are keyed by it, so that a group
    made before ``destroy_process_group()`` is never taken for one of the
    next world."""
    return _world_token(d or dist())


def same_world(token: Any, d: Optional[Dist] = None) -> bool:
    """Whether ``token`` (from :func:`world_token`) names torch's current
    default process group."""
    return _same_world(d or dist(), token)


def alive(pg: ProcessGroup, d: Optional[Dist] = None) -> bool:
    """Whether ``pg`` is still one of torch's live process groups: not
    destroyed (``destroy_process_group(pg)``, or the whole world's)."""
    d = d or dist()
    if not d.is_initialized():
        return False
    tables = _registry(d.distributed_c10d)
    if tables is None:
        return True  # no table to ask: trust the world token
    try:
        return pg in tables[0]
    except TypeError:
        return False


def _pool_key(s: GroupSpec, default_backend: str) -> Optional[PoolKey]:
    if not s.shared or s.pg_options is not None or s.desc is not None:
        return None
    return (s.tag or s.key, tuple(s.members), str(s.backend or default_backend),
            s.timeout.total_seconds())


def _pooled(d: Dist, key: PoolKey) -> Optional[ProcessGroup]:
    """The live shared group of ``key``; forgets every shared group when
    the default group is not the one they were made under, and ``key``'s
    when its group was destroyed."""
    if not _same_world(d, _pool_world[0]):
        _pool.clear()
        _pool_world[0] = _world_token(d)
    pg = _pool.get(key)
    if pg is not None and not alive(pg, d):
        del _pool[key]
        pg = None
    return pg


def shared_groups() -> int:
    """How many live shared groups this process holds (for tests and
    benchmarks: every plain call of hcg.torch takes its groups there)."""
    d = dist()
    with _pool_lock:
        if not d.is_initialized() or not _same_world(d, _pool_world[0]):
            return 0
        return sum(1 for pg in _pool.values() if alive(pg, d))


def build(specs: Sequence[GroupSpec], rank: int) -> Dict[str, ProcessGroup]:
    """Creates the groups of ``specs`` (all holding ``rank``) and returns
    key -> process group. Only their members call this, in any order.

    A ``shared`` spec (see :class:`GroupSpec`) is first looked up among
    this process's shared groups: a live group made earlier, under the same
    default group, with the same tag, members, backend and timeout is
    handed out again and nothing is made; one made here is kept there for
    later calls. Every member decides alike, as long as the members made
    the same calls for that group (which hcg asks of them anyway). Specs
    of one call that name the same shared group get one group.

    Raises:
        NotInitializedError: no default group (one destroyed since the
            caller's factory, grid or bridge was made).
        hcg.HcgValueError: ``rank`` not a member of a spec (ENOTMEMBER).
        hcg.HcgError: a group that cannot form (see the module's text).
    """
    # Its callers checked already; the default group may have been
    # destroyed since (a factory's later call), which this tells.
    d = require_initialized("hcg.torch.groups.build")
    for s in specs:
        if rank not in s.members:
            raise HcgValueError(Status.ENOTMEMBER, "rank %d is not a member of "
                                "group '%s'" % (rank, s.key))
    if not specs:
        return {}
    default_backend = str(d.get_backend())
    out: Dict[str, ProcessGroup] = {}
    todo: List[GroupSpec] = []
    first: Dict[PoolKey, GroupSpec] = {}  # pool key -> the spec that makes it
    later: List[Tuple[str, PoolKey]] = []  # keys served by another spec
    with _pool_lock:
        for s in specs:
            pk = _pool_key(s, default_backend)
            if pk is None:
                todo.append(s)
                continue
            found = _pooled(d, pk)
            if found is not None:
                out[s.key] = found
            elif pk in first:
                later.append((s.key, pk))
            else:
                first[pk] = s
                todo.append(s)
    if todo:
        order = sorted(todo, key=lambda s: (-len(s.members), s.key))
        made = _Build(d, way(d), order, rank).run()
        out.update(made)
        with _pool_lock:
            if not _same_world(d, _pool_world[0]):
                _pool.clear()
                _pool_world[0] = _world_token(d)
            for pk, s in first.items():
                _pool[pk] = made[s.key]
    for key, pk in later:
        out[key] = out[first[pk].key]
    return out


#: Clients of the stores where groups meet that no build is using, for the
#: next one (with the store they reach): a build takes one per thread and
#: store (a client waits for one key at a time) and gives them back when it
#: succeeds, so a process holds as many connections per store as one
#: build's threads, however many builds it makes; the stores are those of
#: the first members of its groups (hcg.torch._places), as many as its
#: groups at most. The groups made through a client keep using it (NCCL
#: reads its unique id at the first collective): it stays alive here.
_idle: List[Tuple[_places.Place, Store]] = []
_idle_lock = threading.Lock()


def _connect(place: _places.Place, timeout: datetime.timedelta) -> Store:
    """A new client of the store at ``place``, proven with its secret."""
    return jobstore.connect(place.host, place.port, place.secret, timeout,
                            host_rank=place.rank)


def _take_client(place: _places.Place, timeout: datetime.timedelta) -> Store:
    """An idle client of the store at ``place``, else a new one."""
    with _idle_lock:
        for i, (where, store) in enumerate(_idle):
            if where == place:
                del _idle[i]
                setter = getattr(store, "set_timeout", None)
                if setter is not None:
                    setter(timeout)  # this build's, for its waits
                return store
    return _connect(place, timeout)


#: Longest the host of a group's store waits, after a failed call, for the
#: members of that group to read the reason there (see _Build._outlast):
#: members that met it are at most their arrival's spread behind it, and
#: the others were told at once.
OUTLAST_S = 30.0


class _Build:
    """One build() call: its store clients, the groups it finished, and
    what it tells the other members when one of its groups fails."""

    def __init__(self, d: Dist, how: _Way, order: Sequence[GroupSpec], rank: int) -> None:
        self.d, self.how, self.order, self.rank = d, how, order, rank
        self.c10d = d.distributed_c10d
        self.places = STATE.places
        self.timeout = max(s.timeout for s in order)
        self.default_backend = str(d.get_backend())
        self.prefixes = {s.key: _prefix(s) for s in order}
        self.clients = threading.local()
        self.lock = threading.Lock()
        self.finished: Dict[str, ProcessGroup] = {}
        self.failed = threading.Event()
        self.taken: List[Tuple[_places.Place, Store]] = []  # clients it took
        self.routes: Dict[str, _places.Route] = {}
        #: how each group is made (by key), and why none may be, if so
        self.ways: Dict[str, _Way] = {}
        self.refused: Optional[HcgError] = self._plan()

    def _plan(self) -> Optional[HcgError]:
        """Chooses how torch connects each group (hcg.torch._binding): a
        split of the world's communicator where torch splits NCCL groups,
        else on the members alone; and checks that every gloo group fits in
        this process's files. Returns the refusal of the first group that
        cannot be made, before any is: an NCCL group under a bound default
        group whose key does not cover the job, or that this torch cannot
        split; a gloo group past the file limit."""
        d = self.d
        split = _binding.splits(d)
        splitter = _binding.split_function(d) if split else None
        by_split = None if splitter is None else _Split(splitter)
        held = room = 0
        if any(_binding.is_gloo(str(s.backend or self.default_backend))
               for s in self.order):
            held, room = _binding.gloo_peers_held(d), _binding.gloo_room()
        for s in self.order:
            backend = str(s.backend or self.default_backend)
            self.ways[s.key] = self.how
            if split and _binding.is_nccl(backend):
                if by_split is None or not s.world:
                    return _binding.refuse_split(describe(s), _binding.bound_device(d),
                                                 d.get_world_size(), by_split is not None)
                self.ways[s.key] = by_split
            if _binding.is_gloo(backend):
                refused = _binding.refuse_gloo(d, describe(s), len(s.members), held,
                                               room)
                if refused is not None:
                    return refused
                held += len(s.members) - 1
        return None

    def route(self, s: GroupSpec) -> Optional[_places.Route]:
        """How this rank meets the group (_places.Places.route): at its
        first member's store, or for a large group at its slice's head's,
        which relays to the leader's; at the job's one store; or None for
        torch's default store (init() was not hcg's). Raises a PeerError
        when the store it connects to could not open."""
        if self.places is None:
            return None
        with self.lock:
            known = self.routes.get(s.key)
        if known is None:
            known = self.places.route(s.members, self.rank, describe(s))
            with self.lock:
                self.routes[s.key] = known
        return known

    def place(self, s: GroupSpec) -> Optional[_places.Place]:
        """The store this rank connects to for the group (see route)."""
        route = self.route(s)
        return None if route is None else route.first

    def hosts(self, s: GroupSpec) -> bool:
        """Whether this rank hosts a store other members meet the group at:
        the leader's, or a slice head's (a store of the job's one, torch's
        TCPStore, is rank 0's)."""
        try:
            place = self.place(s)
        except HcgError:
            return False
        host = 0 if place is None or place.rank < 0 else place.rank
        return host == self.rank and len(s.members) > 1

    def at(self, s: GroupSpec, store: Store) -> Store:
        """The group's keys on ``store``, a client of the store this rank
        connects to: one that relays them up the route is told so first
        (once per connection), and where this rank heads a slice its own
        store is told where they go next (jobstore.relay_route)."""
        route = self.route(s)
        prefix = self.prefixes[s.key]
        if route is not None:
            jobstore.relay_route(route, prefix + "/", store, s.timeout)
        return self.d.PrefixStore(prefix, store)

    def client(self, place: Optional[_places.Place]) -> Store:
        """This thread's client of the store at ``place`` (torch's default
        store for None)."""
        if place is None:
            return self.c10d._get_default_store()
        mine = getattr(self.clients, "stores", None)
        if mine is None:
            mine = self.clients.stores = {}
        if place not in mine:
            store = _take_client(place, self.timeout)
            with self.lock:
                self.taken.append((place, store))
            mine[place] = store
        return mine[place]

    def _fresh_client(self, place: Optional[_places.Place]) -> Optional[Store]:
        """A new client of the store at ``place``, or None when none opens."""
        try:
            return (self.c10d._get_default_store() if place is None else
                    _connect(place, datetime.timedelta(seconds=10)))
        except Exception:  # pylint: disable=broad-except
            return None

    def fresh(self, s: GroupSpec) -> Optional[Store]:
        """A new client for the post-mortem of ``s``: after torch failed,
        the thread's client may be unusable."""
        try:
            client = self._fresh_client(self.place(s))
            return None if client is None else self.at(s, client)
        except Exception:  # pylint: disable=broad-except
            return None

    def report(self, exc: HcgError) -> None:
        """Tells the members of every group this rank has not finished
        that it failed, so that none of them waits for it. Whatever failed
        (this thread's client too), it tries a connection of its own, once
        per store."""
        self.failed.set()
        tried: Dict[Optional[_places.Place], Optional[Store]] = {}
        for s in self._unfinished():
            try:
                place = self.place(s)
            except HcgError:
                continue  # its host has no store: its members know
            if place not in tried:
                try:
                    store: Optional[Store] = self.client(place)
                    if store is not None and _meet.report(self.at(s, store), self.rank,
                                                          exc):
                        tried[place] = store
                        continue
                except Exception:  # pylint: disable=broad-except
                    pass
                tried[place] = store = self._fresh_client(place)
            else:
                store = tried[place]
            if store is not None:
                try:
                    _meet.report(self.at(s, store), self.rank, exc)
                except Exception:  # pylint: disable=broad-except
                    pass

    def one(self, s: GroupSpec) -> ProcessGroup:
        if self.failed.is_set():
            raise _meet.Cancelled()
        what, t = describe(s), s.timeout.total_seconds()
        prefix = self.prefixes[s.key]
        try:
            store = self.client(self.place(s))
            grank = s.members.index(self.rank)
            _meet.meet(self.at(s, store), grank, s.members,
                       self.rank, time.monotonic() + t, what, t, leave=True,
                       check_in=_meet.check_in_by(store, prefix))
            start = time.monotonic()
            try:
                pg = self.ways[s.key].make(self.d, s, grank, store, prefix,
                                           self.default_backend)
                _meet.connected(self.d, pg, s.backend or self.default_backend)
            except Exception as exc:  # pylint: disable=broad-except
                raise _meet.formation_error(what, t, self.fresh(s), exc,
                                            time.monotonic() - start,
                                            prefix) from None
        except _meet.Cancelled:
            raise
        except BaseException as exc:  # pylint: disable=broad-except
            # Whatever failed before or at the meeting (hcg, the store, a
            # bug, an interrupt): the other members learn it now.
            err = exc if isinstance(exc, HcgError) else HcgRuntimeError(
                Status.EIO, "%s: %s" % (what, _meet.describe_exception(exc)))
            self.report(err)
            if not isinstance(exc, Exception):
                raise  # KeyboardInterrupt, SystemExit: as they came
            if err is exc:
                raise
            raise err from exc
        keep_backends(pg)
        with self.lock:
            self.finished[s.key] = pg
        return pg

    def run(self) -> Dict[str, ProcessGroup]:
        if self.refused is not None:
            # Before any group: the members of every one of them learn it
            # at once, as of any other failure here.
            self.report(self.refused)
            raise self.refused
        threads = 1 if self.places is None or \
            not all(w.threads for w in self.ways.values()) else \
            min(MAX_THREADS, len(self.order))
        error: Optional[BaseException] = None
        if threads <= 1:
            for s in self.order:
                try:
                    self.one(s)
                except BaseException as exc:  # pylint: disable=broad-except
                    error = exc
                    break
        else:
            with concurrent.futures.ThreadPoolExecutor(threads) as pool:
                futures = [pool.submit(self.one, s) for s in self.order]
                for f in futures:
                    try:
                        f.result()
                    except _meet.Cancelled:
                        pass
                    except BaseException as exc:  # pylint: disable=broad-except
                        error = error or exc  # keep the first, wait for all
        if error is None and len(self.finished) < len(self.order):
            error = HcgRuntimeError(Status.EIO, "hcg.torch: a group was cancelled "
                                    "without an error (this is a bug)")
        if error is not None:
            if isinstance(error, Exception):
                self._outlast()
            self._drop()
            for _, store in self.taken:
                # Maybe broken mid-request: not for another build.
                close = getattr(store, "close", None)
                if close is not None:
                    close()
            raise error
        if self.places is not None:
            with _idle_lock:
                _idle.extend(self.taken)
        return {s.key: self.finished[s.key] for s in self.order}

    def _unfinished(self) -> List[GroupSpec]:
        """This call's groups not finished (yet), in its order."""
        with self.lock:
            return [s for s in self.order if s.key not in self.finished]

    def _outlast(self) -> None:
        """The stores this rank hosts go with its process: before its
        failed call returns, and maybe its process ends, it waits until
        every member that met at its store in a failed group has left that
        group's meeting having read what it needed (the failure, or who
        never arrived): as long as their timeouts run, OUTLAST_S at most
        (a member that died never leaves)."""
        left = [s for s in self._unfinished() if self.hosts(s)]
        if not left:
            return
        deadline = time.monotonic() + min(OUTLAST_S, max(s.timeout.total_seconds()
                                                         for s in left))
        for s in left:
            try:
                store = self.at(s, self.client(self.place(s)))
            except Exception:  # pylint: disable=broad-except
                continue
            _meet.outlast(store, len(s.members), deadline)

    def _drop(self) -> None:
        """Destroys the groups this failed call made (the caller gets
        none of them)."""
        for pg in self.finished.values():
            try:
                self.d.destroy_process_group(pg)
            except Exception:  # pylint: disable=broad-except
                pass

