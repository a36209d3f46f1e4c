"""Moving activations between MIMO modules: the encoder (src) grid feeds
the language (dest) grid, forward and backward, over groups from libhcg.

* :class:`ColocatedBridge` - both grids on the same ranks. Fan-in (src dp >
  dest dp) all-gathers rows in libhcg's gather groups, fan-out narrows to
  the rank's batch slice, equal dp passes through. With dest cp > 1 the
  backward first sums the gradient over the dest cp group, so every cp
  sibling (each holding only its sequence chunk) returns the full-sequence
  gradient to the encoder.
* :class:`NonColocatedBridge` - disjoint grids. Each src lane's leader (its
  last rank) sends its rows to the leaders (first ranks) of its dest lanes,
  point to point; gradients come back the same way.

Every group comes from libhcg (``hcg_bridge_*``) and is made by its members
alone (:mod:`hcg.torch.groups`); nothing is recomputed here.

Both bridges are ``torch.nn.Module``s (without parameters), so they sit in a
model like any other layer. This module imports torch: ``hcg.torch`` loads it
only when a bridge is first named.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import torch

from .._source import resolve_source
from ..env import TaskEnv
from ..errors import HcgRuntimeError, HcgTypeError, HcgValueError, Status
from ..layout import Bridge, Layout
from . import groups as _groups
from ._base import STATE, Dist, Timeout, group_timeout, require_initialized

_MAX_DIMS = 8  # of a tensor sent by the non-colocated bridge


#: Where a bridge finds its layout and rank: hcg.torch.init()'s task when
#: None. No layout text: a bridge never closes its layout.
Source = Union[Layout, TaskEnv, None]


def _layout_and_rank(source: Source, d: Dist) -> Tuple[Layout, int]:
    """The bridge's layout and this rank in it: a task's own rank, else
    torch's."""
    found = resolve_source(source, text=False, environ=False)
    rank = found.task.rank if found.task is not None else d.get_rank()
    return found.layout, rank


def _grids(layout: Layout, src: Optional[str], dest: Optional[str]) -> Tuple[str, str]:
    if dest is None:
        dest = layout.language
    if src is None:
        others = [g.name for g in layout.grids if g.name != dest]
        if len(others) != 1:
            raise HcgValueError(Status.EINVAL, "name the src grid: the layout has "
                                "%s besides '%s'" % (", ".join(others) or "no grid", dest))
        src = others[0]
    return src, dest


class _BridgeBase(torch.nn.Module):  # type: ignore[misc] # torch is Any to mypy
    """What both bridges share: the layout, the grids, libhcg's bridge and
    the groups' timeout."""

    #: The public name errors give (a subclass of a user's keeps hcg's).
    _API = "hcg.torch.bridge"

    def __init__(self, src: Optional[str], dest: Optional[str],
                 source: Source, timeout: Optional[Timeout]) -> None:
        super().__init__()
        self._dist = require_initialized(self._API)
        self.layout, self.rank = _layout_and_rank(source, self._dist)
        self.src, self.dest = _grids(self.layout, src, dest)
        self.bridge: Bridge = self.layout.bridge(self.src, self.dest)
        self.kind = self.bridge.kind
        self.scale = self.bridge.scale
        self._timeout = group_timeout(timeout)

    def _group(self, key: str, members: Sequence[int]) -> Any:
        """This rank's group of ``members``: one of the process's shared
        groups (the object new_collection() gives for those ranks)."""
        spec = _groups.GroupSpec(key, tuple(members), STATE.backend,
                                 self._timeout, None,
                                 _groups.members_tag(members), shared=True)
        return _groups.build([spec], self.rank)[key]

    def _cuda_only(self) -> bool:
        """Whether the bridge's groups move CUDA tensors only: an nccl
        backend with no gloo beside it (torch would fail deep inside with
        'No backend type associated with device type cpu')."""
        backend = str(STATE.backend or self._dist.get_backend()).lower()
        return "nccl" in backend and "gloo" not in backend

    def extra_repr(self) -> str:
        return "src=%r, dest=%r, kind=%r, scale=%d" % (self.src, self.dest,
                                                       self.kind, self.scale)

    def _check_device(self, x: torch.Tensor, what: str) -> None:
        if self._cuda_only() and x.device.type != "cuda":
            raise HcgValueError(Status.EINVAL, "bridge %s -> %s: %s is on %s, but "
                                "the bridge's groups use the nccl backend, which "
                                "moves CUDA tensors only"
                                % (self.src, self.dest, what, x.device))


class ColocatedBridge(_BridgeBase):
    """``y = bridge(x)`` for two colocated grids (src the encoder, dest the
    language module by default); a ``torch.nn.Module`` whose forward and
    backward are collectives over libhcg's groups.

    ``x``: this rank's encoder output, batch first: its src-dp shard, rows
    in src dp order. ``y``: this rank's dest-dp shard; every tp and cp rank
    of one dest dp index gets the same rows and the whole sequence (cp
    sharding is the model's business; the backward sums over dest cp).

    Args:
        src: the encoder grid (default: the one grid besides dest).
        dest: the language grid (default: the layout's language module).
        source: the layout (an :class:`hcg.Layout`, with torch's rank) or
            a :class:`hcg.env.TaskEnv`; default hcg.torch.init()'s task.
        batch: rows of ``x`` on every rank; when None, the first call's
            size, checked against the other members of the gather group.
        timeout: of the groups the bridge makes (a timedelta or seconds;
            default hcg.torch.init()'s).

    Raises:
        NotInitializedError: torch.distributed is not initialized.
        hcg.HcgTypeError: a source that is no Layout, TaskEnv or None.
        hcg.HcgRuntimeError: no source and no hcg.torch.init() (EINVAL).
        hcg.HcgValueError: the grids do not share ranks or cannot be
            bridged (``EBRIDGE``), a batch that does not split.
        hcg.HcgError: a group cannot form (see :mod:`hcg.torch.groups`).
    """

    _API = "hcg.torch.ColocatedBridge"

    def __init__(self, src: Optional[str] = None, dest: Optional[str] = None, *,
                 source: Source = None, batch: Optional[int] = None,
                 timeout: Optional[Timeout] = None) -> None:
        super().__init__(src, dest, source, timeout)
        if not self.bridge.colocated:
            raise HcgValueError(Status.EBRIDGE, "grids '%s' and '%s' do not share "
                                "ranks: use NonColocatedBridge" % (self.src, self.dest))
        L = self.layout
        self.dest_cp = self.bridge.dest_cp
        members = self.bridge.group_of_rank(self.rank)
        self.members: Optional[List[int]] = members
        self._gather = (self._group("%s>%s#bridge" % (self.src, self.dest), members)
                        if members is not None else None)
        self._cp: Any = None  # a process group
        if self.dest_cp > 1:
            req = L.request("%s:cp" % self.dest)
            self._cp = self._group(req.key, L.group_of_rank(req, self.rank).members)
        if batch is not None:
            self._check_batch(batch)
        self.batch = batch

    def _check_batch(self, rows: int) -> None:
        if self.kind == "fan-out" and rows % self.scale:
            raise HcgValueError(Status.EBRIDGE, "bridge %s -> %s (fan-out, scale %d):"
                                " a batch of %d rows does not split in %d"
                                % (self.src, self.dest, self.scale, rows, self.scale))

    def _agree(self, x: torch.Tensor) -> None:
        """First call: the gather group's members must all send as many
        rows. The count travels on the input's device, as the rows will."""
        rows = x.shape[0]
        self._check_batch(rows)
        if self._gather is not None:
            mine = torch.tensor([rows], dtype=torch.int64, device=x.device)
            sizes = [torch.zeros(1, dtype=torch.int64, device=x.device)
                     for _ in self.members or []]
            self._dist.all_gather(sizes, mine, group=self._gather)
            got = [int(s.item()) for s in sizes]
            if len(set(got)) != 1:
                raise HcgValueError(Status.EBRIDGE, "bridge %s -> %s: the gather "
                                    "group %s sends %s rows; all must send the same"
                                    % (self.src, self.dest, self.members, got))
        self.batch = rows

    def _slice(self, rows: int) -> Tuple[int, int]:
        start, length = self.bridge.batch_slice(self.rank, rows)
        return start, length

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """This rank's dest shard of the batch (call the module, not this).

        Args:
            x: this rank's src shard, batch first.

        Returns:
            The rows of this rank's dest dp index, with autograd through
            the bridge.

        Raises:
            hcg.HcgValueError: a scalar, a tensor on a device the groups
                cannot move, a row count other than the bridge's.
        """
        if x.dim() < 1:
            raise HcgValueError(Status.EINVAL, "bridge input must have a batch "
                                "dimension (got a scalar)")
        self._check_device(x, "the input")
        rows = x.shape[0]
        if self.batch is None:
            self._agree(x)
        elif rows != self.batch:
            raise HcgValueError(Status.EINVAL, "bridge %s -> %s: input has %d rows, "
                                "the bridge was set up for %d"
                                % (self.src, self.dest, rows, self.batch))
        out: torch.Tensor = _Move.apply(x, self)
        return out

    # The collectives, run by _Move.

    def _move_rows(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "fan-in":
            parts = [torch.empty_like(x) for _ in self.members or []]
            self._dist.all_gather(parts, x.contiguous(), group=self._gather)
            return torch.cat(parts, 0)
        if self.kind == "fan-out":
            start, length = self._slice(x.shape[0])
            return x.narrow(0, start, length).clone()
        return x.clone()

    def _move_grad(self, grad: torch.Tensor) -> torch.Tensor:
        grad = grad.contiguous().clone()
        if self._cp is not None:
            self._dist.all_reduce(grad, group=self._cp)
        if self.kind == "fan-in":
            start, length = self._slice(grad.shape[0])
            return grad.narrow(0, start, length).clone()
        if self.kind == "fan-out":
            parts = [torch.empty_like(grad) for _ in self.members or []]
            self._dist.all_gather(parts, grad, group=self._gather)
            return torch.cat(parts, 0)
        return grad


class _Move(torch.autograd.Function):  # type: ignore[misc] # as above
    """A colocated bridge's step: forward moves the rows from the src
    shards to the dest shards, backward moves their gradient back. The
    bridge rides along as a non-tensor argument (no gradient)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor,
                bridge: ColocatedBridge) -> torch.Tensor:
        ctx.bridge = bridge
        return bridge._move_rows(x)

    @staticmethod
    def backward(ctx: Any,
                 grad: torch.Tensor) -> Tuple[torch.Tensor, None]:
        bridge: ColocatedBridge = ctx.bridge
        return bridge._move_grad(grad), None


class NonColocatedBridge(_BridgeBase):
    """The hand-off between two disjoint grids, along libhcg's lane leaders.

    src side: ``send_forward(x)`` on a src leader sends its rows (all of
    them to its one dest leader on fan-in or passthrough, an equal part to
    each of its dest leaders on fan-out); ``recv_backward()`` returns the
    gradient of those rows. dest side: ``recv_forward()`` on a dest leader
    returns the rows of its src leaders (concatenated in lane order on
    fan-in); ``send_backward(grad)`` returns their gradients. On other
    ranks these calls do nothing and return None. Sends are point to point
    between the two leaders, each preceded by a small header (shape and
    dtype) so the receiver needs no arguments.

    It is a ``torch.nn.Module`` for its place in a model; its four calls
    above are the whole interface (it has no ``forward``: which call a rank
    makes depends on its side).

    Args:
        src, dest, source, timeout: as :class:`ColocatedBridge`'s.
        device: where headers travel and received tensors are put, and
            where sent tensors must be (both leaders of a pair must agree):
            by default the current CUDA device when hcg.torch's backend is
            nccl, else the CPU.

    Raises:
        NotInitializedError: torch.distributed is not initialized.
        hcg.HcgTypeError, hcg.HcgRuntimeError: a source as for
            :class:`ColocatedBridge`.
        hcg.HcgValueError: the grids share ranks (``EBRIDGE``), a device
            that is none.
    """

    _API = "hcg.torch.NonColocatedBridge"

    def __init__(self, src: Optional[str] = None, dest: Optional[str] = None, *,
                 source: Source = None, timeout: Optional[Timeout] = None,
                 device: Union[torch.device, str, None] = None) -> None:
        super().__init__(src, dest, source, timeout)
        if device is None:
            device = (torch.device("cuda", torch.cuda.current_device())
                      if self._cuda_only() else torch.device("cpu"))
        try:
            self.device = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise HcgValueError(Status.EINVAL, "NonColocatedBridge: device=%r is "
                                "not a torch device: %s" % (device, exc)) from None
        if self.bridge.colocated:
            raise HcgValueError(Status.EBRIDGE, "grids '%s' and '%s' share ranks: "
                                "use ColocatedBridge" % (self.src, self.dest))
        self.src_leaders = self.bridge.leaders("src")
        self.dest_leaders = self.bridge.leaders("dest")
        self._targets = {lane: list(self.bridge.targets(lane))
                         for lane in range(len(self.src_leaders))}
        # dest lane -> the src lanes feeding it, in lane order
        self._sources: Dict[int, List[int]] = {}
        for lane, dests in self._targets.items():
            for d in dests:
                self._sources.setdefault(d, []).append(lane)
        self._sent: List[Tuple[int, int]] = []  # (dest leader, rows) of the last send
        self._rows: List[Tuple[int, int]] = []  # (src leader, rows) of the last receive

    @property
    def src_lane(self) -> Optional[int]:
        """This rank's lane when it leads one of the src grid, else None."""
        return self.src_leaders.index(self.rank) if self.rank in self.src_leaders else None

    @property
    def dest_lane(self) -> Optional[int]:
        """This rank's lane when it leads one of the dest grid, else None."""
        return self.dest_leaders.index(self.rank) if self.rank in self.dest_leaders else None

    # ---- point to point with a header -------------------------------------

    def _send(self, t: torch.Tensor, peer: int) -> None:
        if t.dim() > _MAX_DIMS:
            raise HcgValueError(Status.EINVAL, "the bridge sends tensors of at most "
                                "%d dims, got %d" % (_MAX_DIMS, t.dim()))
        if t.device.type != self.device.type:
            raise HcgValueError(Status.EINVAL, "bridge %s -> %s: the tensor to send "
                                "is on %s; this bridge sends and receives on %s "
                                "(NonColocatedBridge(device=...))"
                                % (self.src, self.dest, t.device, self.device))
        self._check_device(t, "the tensor to send")
        dtypes = _dtypes()
        if t.dtype not in dtypes:
            raise HcgTypeError(Status.EINVAL, "the bridge cannot send %s tensors" % t.dtype)
        head = [t.dim(), dtypes.index(t.dtype)] + list(t.shape)
        head += [0] * (2 + _MAX_DIMS - len(head))
        header = torch.tensor(head, dtype=torch.int64, device=self.device)
        self._dist.send(header, peer)
        self._dist.send(t.detach().contiguous(), peer)

    def _recv(self, peer: int) -> torch.Tensor:
        header = torch.zeros(2 + _MAX_DIMS, dtype=torch.int64, device=self.device)
        self._dist.recv(header, peer)
        head = header.tolist()
        ndim, dtype = int(head[0]), _dtypes()[int(head[1])]
        out = torch.empty([int(n) for n in head[2:2 + ndim]], dtype=dtype,
                          device=self.device)
        self._dist.recv(out, peer)
        return out

    # ---- src side -----------------------------------------------------------

    def send_forward(self, x: torch.Tensor) -> None:
        """On a src leader, sends its rows to its dest leaders; elsewhere
        nothing.

        Args:
            x: the src leader's rows, batch first.

        Raises:
            hcg.HcgValueError: rows that do not split over the dest leaders
                (``EBRIDGE``), a tensor the bridge cannot send.
            hcg.HcgTypeError: a dtype the bridge cannot send.
        """
        lane = self.src_lane
        if lane is None:
            return None
        dests = [self.dest_leaders[d] for d in self._targets[lane]]
        if x.dim() < 1 or x.shape[0] % len(dests):
            raise HcgValueError(Status.EBRIDGE, "bridge %s -> %s (%s, scale %d): a "
                                "batch of %s rows does not split over %d dest leaders"
                                % (self.src, self.dest, self.kind, self.scale,
                              x.shape[0] if x.dim() else "no", len(dests)))
        part = x.shape[0] // len(dests)
        self._sent = []
        for i, peer in enumerate(dests):
            self._send(x.narrow(0, i * part, part), peer)
            self._sent.append((peer, part))
        return None

    def recv_backward(self) -> Optional[torch.Tensor]:
        """On a src leader, the gradient of the rows it sent, in the same
        order; elsewhere None.

        Raises:
            hcg.HcgRuntimeError: no send_forward before it.
        """
        if self.src_lane is None:
            return None
        if not self._sent:
            raise HcgRuntimeError(Status.EINVAL, "recv_backward before send_forward")
        return torch.cat([self._recv(peer) for peer, _ in self._sent], 0)

    # ---- dest side ----------------------------------------------------------

    def recv_forward(self) -> Optional[torch.Tensor]:
        """On a dest leader, the rows of its src leaders (in lane order);
        elsewhere None."""
        lane = self.dest_lane
        if lane is None:
            return None
        peers = [self.src_leaders[s] for s in self._sources.get(lane, [])]
        parts = [self._recv(p) for p in peers]
        self._rows = [(p, t.shape[0]) for p, t in zip(peers, parts)]
        return torch.cat(parts, 0)

    def send_backward(self, grad: torch.Tensor) -> None:
        """On a dest leader, sends each src leader the gradient of its rows;
        elsewhere nothing.

        Args:
            grad: the gradient of what recv_forward returned.

        Raises:
            hcg.HcgRuntimeError: no recv_forward before it.
            hcg.HcgValueError: a gradient of another row count.
        """
        if self.dest_lane is None:
            return None
        rows = self._rows
        if not rows:
            raise HcgRuntimeError(Status.EINVAL, "send_backward before recv_forward")
        total = sum(n for _, n in rows)
        if grad.shape[0] != total:
            raise HcgValueError(Status.EINVAL, "send_backward: the gradient has %d "
                                "rows, recv_forward gave %d" % (grad.shape[0], total))
        at = 0
        for peer, n in rows:
            self._send(grad.narrow(0, at, n), peer)
            at += n
        return None


def _dtypes() -> List[torch.dtype]:
    """The dtypes a header can name, by index."""
    return [torch.float32, torch.float64, torch.float16, torch.bfloat16,
            torch.int64, torch.int32, torch.uint8, torch.bool]
