"""hcg.torch's NCCL groups on one GPU, several ranks sharing it.

    python3 tests/gpu/nccl_check.py [--worlds 2,4,8] [--limit SECONDS]

For each world size and each way torch can hold its default group (bound
to the device with ``device_id=``, or not) and each NCCL backend this torch
has (the classic ProcessGroupNCCL; ``nccl2`` where torch has it, chosen
with TORCH_DIST_USE_NCCL2=1), it starts that many ranks on this machine,
each as hcg.torch.init() under a layout with an expert view, and checks an
all_reduce sum on every group of the rank's collection. It prints one row
per case and exits 1 when any case failed or hung (each case is bounded).

NCCL refuses two ranks of a communicator on one GPU ("Duplicate GPU
detected": same host hash and bus id), so every rank has its own
NCCL_HOSTID and they talk over sockets on loopback, as ranks on several
hosts would (P2P and shared memory off). No Slurm, no PMIx: the ranks meet
at rank 0's TCPStore (MASTER_ADDR, MASTER_PORT) and take their layout from
the environment the plugin would give them (hcg.Layout.env).

Without torch or without a CUDA device it prints "SKIP: no CUDA device"
and exits 0. tests/gpu/check.sh runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional, Tuple

#: A layout with an expert view for each world size.
LAYOUTS = {
    2: "llm:tp=2,dp=*; llm/expert:expt_tp=1,ep=2,expt_dp=*",
    4: "llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp",
    8: "llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp",
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _backends() -> List[str]:
    """The NCCL backends this torch has: 'nccl', and 'nccl2' where its
    distributed_c10d has ProcessGroupNCCL2."""
    import torch.distributed.distributed_c10d as c10d

    out = ["nccl"]
    if hasattr(c10d, "ProcessGroupNCCL2"):
        out.append("nccl2")
    return out


def _binds() -> bool:
    import inspect

    import torch.distributed as dist

    return "device_id" in inspect.signature(dist.init_process_group).parameters


def worker(rank: int, world: int, bound: bool) -> int:
    """One rank: init, its collection, an all_reduce on every group."""
    import torch
    import torch.distributed as dist
    import hcg.torch as ht

    out: Dict[str, object] = {"rank": rank}
    try:
        torch.cuda.set_device(0)
        start = time.monotonic()
        ht.init(backend="nccl", timeout=90, device_id=0 if bound else None)
        out["init_s"] = round(time.monotonic() - start, 2)
        start = time.monotonic()
        pgs = ht.new_collection(timeout=90)
        out["groups_s"] = round(time.monotonic() - start, 2)
        bad, checked = [], 0
        for field in ht.ATTRIBUTES:
            pg, members = pgs[field], pgs.ranks[field]
            if pg is None or members is None:
                continue
            t = torch.tensor([float(rank)], device="cuda")
            dist.all_reduce(t, group=pg)
            torch.cuda.synchronize()
            if t.item() != float(sum(members)):
                bad.append("%s: %g, want %d" % (field, t.item(), sum(members)))
            checked += 1
        out.update(bad=bad, checked=checked,
                   bound=str(getattr(dist.distributed_c10d._get_default_group(),
                                     "bound_device_id", None)))
        dist.barrier()
        dist.destroy_process_group()
    except BaseException as exc:  # pylint: disable=broad-except
        out["error"] = "%s: %s" % (type(exc).__name__, str(exc).splitlines()[0][:300])
    print("RESULT " + json.dumps(out), flush=True)
    return 0 if "error" not in out and not out.get("bad") else 1


def _case(world: int, bound: bool, backend: str, limit: float,
          logs: str) -> Tuple[str, str, float]:
    """Runs one case; its result ('ok', 'FAIL', 'HANG'), a detail and its
    time."""
    import hcg

    layout = hcg.Layout(LAYOUTS[world], world)
    port = _free_port()
    procs = []
    start = time.monotonic()
    name = "w%d-%s-%s" % (world, "bound" if bound else "unbound", backend)
    for r in range(world):
        env = dict(os.environ)
        env.update(layout.env(r))
        env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   NCCL_HOSTID="hcg-gpu-check-%d" % r, NCCL_P2P_DISABLE="1",
                   NCCL_SHM_DISABLE="1", NCCL_IB_DISABLE="1",
                   NCCL_SOCKET_IFNAME="lo", LOCAL_RANK="0")
        env.pop("TORCH_DIST_USE_NCCL2", None)
        if backend == "nccl2":
            env["TORCH_DIST_USE_NCCL2"] = "1"
        log = open(os.path.join(logs, "%s.%d.log" % (name, r)), "w")
        procs.append((subprocess.Popen(
            [sys.executable, __file__, "--rank", str(r), "--world", str(world)]
            + (["--bound"] if bound else []),
            env=env, stdout=subprocess.PIPE, stderr=log, text=True), log))
    results: List[Optional[Dict[str, object]]] = []
    hung = False
    for p, log in procs:
        try:
            text, _ = p.communicate(timeout=max(1.0, start + limit - time.monotonic()))
        except subprocess.TimeoutExpired:
            hung = True
            p.kill()
            text, _ = p.communicate()
        log.close()
        lines = [l for l in (text or "").splitlines() if l.startswith("RESULT ")]
        results.append(json.loads(lines[-1][7:]) if lines else None)
    took = time.monotonic() - start
    if hung:
        return "HANG", "killed after %.0f s (logs: %s/%s.*)" % (limit, logs, name), took
    errors = ["rank %d: %s" % (r, res.get("error") if res else "no result")
              for r, res in enumerate(results) if not res or res.get("error")]
    bad = ["rank %d: %s" % (r, b) for r, res in enumerate(results) if res
           for b in res.get("bad", [])]  # type: ignore[union-attr]
    if errors or bad:
        return "FAIL", "; ".join((errors + bad)[:3]), took
    checked = sum(int(res["checked"]) for res in results if res)  # type: ignore[arg-type]
    init_s = max(float(res["init_s"]) for res in results if res)  # type: ignore[arg-type]
    groups_s = max(float(res["groups_s"]) for res in results if res)  # type: ignore[arg-type]
    return "ok", "%d sums right (every field of every rank); init %.1f s, groups %.1f s" % (
        checked, init_s, groups_s), took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", default="2,4,8")
    ap.add_argument("--limit", type=float, default=120.0,
                    help="seconds one case may take before it counts as a hang")
    ap.add_argument("--logs", default=os.environ.get("TMPDIR", "/tmp"))
    ap.add_argument("--rank", type=int)
    ap.add_argument("--world", type=int)
    ap.add_argument("--bound", action="store_true")
    args = ap.parse_args()
    if args.rank is not None:
        return worker(args.rank, args.world, args.bound)
    try:
        import torch
    except ImportError:
        print("SKIP: no CUDA device (no torch in %s)" % sys.executable)
        return 0
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 0
    worlds = [int(w) for w in args.worlds.split(",")]
    ways = [False, True] if _binds() else [False]
    print("torch %s, %s, NCCL %s" % (torch.__version__, torch.cuda.get_device_name(0),
                                     ".".join(map(str, torch.cuda.nccl.version()))))
    if not _binds():
        print("this torch has no device_id: bound cases skipped")
    print("%-6s %-8s %-6s %-5s %7s  %s" % ("ranks", "default", "nccl", "", "time s", "detail"))
    failed = 0
    for world in worlds:
        for bound in ways:
            for backend in _backends():
                verdict, detail, took = _case(world, bound, backend, args.limit, args.logs)
                failed += verdict != "ok"
                print("%-6d %-8s %-6s %-5s %7.1f  %s" % (
                    world, "bound" if bound else "unbound", backend, verdict, took, detail),
                    flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
