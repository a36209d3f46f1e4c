"""A task of tests/cluster/torch.bats: hcg.torch's MIMO bridges on real
torch (gloo). Prints one line per check: "ok RANK WHAT [detail]" or
"bad RANK WHAT: detail".

    python3 check_bridge.py colocated [SRC:DEST ...] [bad=SRC:DEST]
                                           # forward, backward, cp control, oracle,
                                           # per pair (default vision:llm); the
                                           # lines of a pair start "ok RANK SRC>DEST";
                                           # bad=: bad input on that fan-out pair
                                           # (tp and dp scale 2), hcg's errors
    python3 check_bridge.py noncolocated [SRC:DEST ...]
                                           # leaders' hand-off, both ways, per
                                           # pair (default vision:llm), lines
                                           # "ok RANK SRC>DEST forward|backward"

Both first check every group of the rank's grids (check_groups.py's
check_every_group; MIMO, colocated or not, in the same job), one line
"ok RANK groups fields=F groups=G" or "bad RANK groups: FIELDS".
"""

import sys

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht
from check_groups import check_every_group

G, S, H = 16, 4, 3  # global batch, sequence, hidden


def data() -> torch.Tensor:
    """Row i holds 100*i + 10*s + h: every value says where it came from."""
    i = torch.arange(G, dtype=torch.float64).view(G, 1, 1)
    s = torch.arange(S, dtype=torch.float64).view(1, S, 1)
    h = torch.arange(H, dtype=torch.float64).view(1, 1, H)
    return 100 * i + 10 * s + h


def rows_of(L, rank, grid):
    c = L.coords(rank, grid)
    n = L.grid(grid).view().dim("dp").size
    per = G // n
    return c["dp"] * per, per


def cp_of(L, rank, grid):
    names = L.grid(grid).dim_names
    if "cp" not in names:
        return 0, 1
    return L.coords(rank, grid)["cp"], L.grid(grid).view().dim("cp").size


def report(rank, what, ok, detail=""):
    print("%s %d %s%s" % ("ok" if ok else "bad", rank, what,
                          (": " if not ok else " ") + detail if detail else ""),
          flush=True)


def colocated(task, pairs=("vision:llm",)):
    for pair in pairs:
        if pair.startswith("bad="):
            src, dest = pair[len("bad="):].split(":")
            bad(task, src, dest)
        else:
            src, dest = pair.split(":")
            colocated_pair(task, src, dest)


def colocated_pair(task, src, dest):
    L, rank = task.layout, task.rank
    br = ht.ColocatedBridge(src, dest)
    X = data()
    s0, sn = rows_of(L, rank, src)
    d0, dn = rows_of(L, rank, dest)
    c, C = cp_of(L, rank, dest)
    chunk = S // C
    pair = "%s>%s " % (src, dest)

    def grad_for(y_rows):
        g = torch.zeros(dn, S, H, dtype=torch.float64)
        g[:, c * chunk:(c + 1) * chunk, :] = (torch.arange(d0, d0 + dn, dtype=torch.float64)
                                               + 1).view(dn, 1, 1)
        return g

    def run(label):
        x = X[s0:s0 + sn].clone().requires_grad_()
        y = br(x)
        fwd = y.shape == (dn, S, H) and torch.equal(y.detach(), X[d0:d0 + dn])
        y.backward(grad_for(y))
        want = (torch.arange(s0, s0 + sn, dtype=torch.float64) + 1).view(sn, 1, 1).expand(sn, S, H)
        bwd = torch.equal(x.grad, want)
        return fwd, bwd

    fwd, bwd = run("")
    report(rank, pair + "forward", fwd, "%s rows %d..%d" % (br.kind, d0, d0 + dn - 1))
    report(rank, pair + "backward", bwd, "cp %d of %d" % (c, C))
    if C > 1:
        saved, br._cp = br._cp, None  # the all-reduce removed: must fail
        _, bwd = run("control")
        br._cp = saved
        flags = torch.tensor([0.0 if bwd else 1.0])
        dist.all_reduce(flags)
        report(rank, pair + "control-without-cp-reduce-fails", flags.item() > 0)

    # The oracle: two SGD steps through the bridge end with the encoder
    # weights of one process training on the whole batch.
    gen = torch.Generator().manual_seed(7)
    W0 = torch.randn(H, H, generator=gen, dtype=torch.float64)
    w0 = torch.randn(H, generator=gen, dtype=torch.float64)
    T = torch.randn(G, S, generator=gen, dtype=torch.float64)
    Xs = X / 1000

    ref_W, ref_w = W0.clone().requires_grad_(), w0.clone().requires_grad_()
    for _ in range(2):
        loss = (((Xs @ ref_W.t()) @ ref_w - T) ** 2).mean()
        loss.backward()
        with torch.no_grad():
            for p in (ref_W, ref_w):
                p -= 0.1 * p.grad
                p.grad = None

    src_dp = ht.GroupFactory().group("%s:dp" % src)
    dest_dpcp = ht.GroupFactory().group("%s:dp,cp" % dest if C > 1 else "%s:dp" % dest)
    W, w = W0.clone().requires_grad_(), w0.clone().requires_grad_()
    for _ in range(2):
        e = Xs[s0:s0 + sn] @ W.t()
        y = br(e)[:, c * chunk:(c + 1) * chunk]  # this cp rank's chunk
        out = y @ w
        loss = ((out - T[d0:d0 + dn, c * chunk:(c + 1) * chunk]) ** 2).sum() / (G * S)
        loss.backward()
        with torch.no_grad():
            dist.all_reduce(W.grad, group=src_dp)
            dist.all_reduce(w.grad, group=dest_dpcp)
            for p in (W, w):
                p -= 0.1 * p.grad
                p.grad = None
    diff = (W - ref_W).abs().max().item()
    report(rank, pair + "oracle", diff < 1e-6, "max encoder weight difference %.3g" % diff)


def noncolocated(task, pairs=("vision:llm",)):
    """Every pair's bridge is made by every rank, in the order given; then
    each pair's leaders hand off forward and back, pair after pair (a rank
    leads in at most one role per pair, so none waits on itself)."""
    rank = task.rank
    bridges = []
    for pair in pairs:
        src, dest = pair.split(":")
        bridges.append(("%s>%s " % (src, dest), ht.NonColocatedBridge(src, dest)))
    X = data()
    for p, br in bridges:
        lane = br.src_lane
        if lane is not None:
            n = G // len(br.src_leaders)
            x = X[lane * n:(lane + 1) * n]
            br.send_forward(x)
            g = br.recv_backward()
            report(rank, p + "backward", torch.equal(g, -x), "src leader lane %d" % lane)
        lane = br.dest_lane
        if lane is not None:
            y = br.recv_forward()
            n = G // len(br.dest_leaders)
            want = X[lane * n:(lane + 1) * n]
            report(rank, p + "forward", torch.equal(y, want),
                   "%s dest leader lane %d rows %d..%d" % (br.kind, lane, lane * n,
                                                          lane * n + n - 1))
            br.send_backward(-y)
    dist.barrier()


def bad(task, src, dest):
    """Bad input to the fan-out bridge SRC -> DEST of the job's layout (src
    tp 4, dp 2; dest tp 2, dp 4), and to bridges of layouts of its own."""
    rank = task.rank
    checks = []
    try:
        ht.ColocatedBridge(src, dest, batch=3)
        checks.append(("fan-out batch 3", "no error"))
    except hcg.HcgError as exc:
        checks.append(("fan-out batch 3", "%s: %s" % (exc.name, exc.message)))
    br = ht.ColocatedBridge(src, dest)
    x = torch.zeros(4, S, H, dtype=torch.float64)
    br(x)
    try:
        br(torch.zeros(5, S, H, dtype=torch.float64))
        checks.append(("wrong rows", "no error"))
    except hcg.HcgError as exc:
        checks.append(("wrong rows", "%s: %s" % (exc.name, exc.message)))
    for layout, what in (("vision@0:tp=2,cp=2,dp=2; llm@0:tp=2,dp=4", "src cp 2"),
                         ("vision@0:tp=2,dp=4; llm@0:tp=2,dp=2,cp=2", "cp after dp"),
                         ("vision@0:tp=2,dp=2,pp=2; llm@0:tp=2,dp=4", "src pp 2")):
        try:
            ht.ColocatedBridge("vision", "llm", source=hcg.Layout(layout, 8))
            checks.append((what, "no error"))
        except hcg.HcgError as exc:
            checks.append((what, "%s: %s" % (exc.name, exc.message)))
    # The non-colocated bridge's device: a bad name, and a tensor elsewhere
    # than the bridge's device (refused before any header is sent).
    disjoint = hcg.Layout("vision:tp=2,dp=2; llm:tp=2,dp=2", 8)
    for what, kw, t in (("device name", {"device": "nowhere"}, None),
                        ("device mismatch", {"device": "cpu"},
                         torch.empty(2, 3, device="meta"))):
        try:
            nb = ht.NonColocatedBridge("vision", "llm", source=disjoint, **kw)
            nb._send(t, 1)
            checks.append((what, "no error"))
        except hcg.HcgError as exc:
            checks.append((what, "%s: %s" % (exc.name, exc.message)))
    for what, msg in checks:
        print("check %d %s => %s" % (rank, what, msg.splitlines()[0]), flush=True)
    dist.barrier()


def main():
    mode = sys.argv[1]
    task = ht.init(backend="gloo", timeout=60)  # CPU tensors, also where CUDA is
    run = {"colocated": colocated, "noncolocated": noncolocated}[mode]
    bad, fields, groups, _ = check_every_group(task)
    report(task.rank, "groups", not bad,
           ", ".join(bad) if bad else "fields=%d groups=%d" % (fields, groups))
    if len(sys.argv) > 2:
        run(task, sys.argv[2:])
    else:
        run(task)
    # A rank hosts the store of the groups it leads (rank 0, every group's
    # with MASTER_ADDR): it must not leave while a peer still connects a
    # group through it (seen on torch 2.11).
    dist.barrier()
    from hcg.torch._base import STATE

    own = STATE.places.rank(task.rank, "this rank's")
    if own.rank == task.rank and own.secret is not None:  # under PMIx
        from hcg.torch import store as jobstore

        st = jobstore.stats(own.host, own.port, own.secret, task.rank)
        print("relayed %d forwarded=%d links=%d proven=%d" % (
            task.rank, st["forwarded"], st["links"], st["proven"]), flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
