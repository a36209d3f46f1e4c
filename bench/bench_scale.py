"""make bench-scale: what the stores of hcg.torch serve while a job forms
its groups, at 1,024, 4,096, 16,384 and 102,400 ranks, side by side for
three ways of meeting. Prints figures; asserts nothing; not run by CI.

    python3 bench/bench_scale.py [--fanin F] [--sample K ...] [--timeout S]
                                 [--worlds N ...]

The layout is doc/scaling.md's grid (5 dims and an expert view); every
rank forms the default group and every group of its collection, as
hcg.torch.init() and new_collections() do. Which ways:

central   one store on rank 0 for every group (hcg.torch before issue 29);
leaders   every group meets at its first member's store (its first step);
relays    hcg.torch now: a group too large for one store (a quarter of
          libhcg's fan-in F, HCG_FANIN, in connections) meets through its
          slices' heads, whose stores forward its keys to the leader's
          (hcg/torch/_places.py picks the slices, _store_relay.py
          forwards).

What is the real code and what is a model:
- which groups exist, their members and leaders: hcg.Layout (libhcg); the
  slices and every rank's route to its groups' leaders: hcg.torch._places;
  the real code, for every rank of every world size;
- requests per member per group: hcg's meeting (hcg/torch/_meet.py: 3 on
  hcg's store, the check-in's two adds in one request) and an NCCL group's
  unique id (1: set by its rank 0, read by the others),
  counted from the code; gloo's full mesh adds k requests per member of a
  group of k (not modelled: jobs of this size use NCCL); a head's link
  asks upstream what the sample measured a link to ask ("upstream" over
  its links: the slice's adds in batches, its waits once each);
- connections: each rank holds at most THREADS clients per store it meets
  at (hcg.torch.groups: one per building thread), a head's store one link
  per store it forwards to;
- bytes per request, handshakes and requests per second: MEASURED here,
  by the sample below: real server processes (hcg/torch/_store_server.py,
  each with `ulimit -n 1024`) and real proven connections (hcg.torch.store's
  handshake), K members meeting as one group does, at the leader's store
  alone and through relays;
- the time to form: a model from those rates, the busiest store's
  handshakes and requests (stores serve in parallel, each one process).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import struct
import sys
import time
from collections import defaultdict
from typing import Any, Dict, Iterator, List, Sequence, Set, Tuple

GRID = ("llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8; "
        "llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp")
WORLDS = (1024, 4096, 16384, 102400)  # 100k: the nearest world the grid divides
THREADS = 4  # hcg.torch.groups.MAX_THREADS
MEET = 3  # requests per member of a meeting at hcg's store (_meet.meet)
NCCL = 1  # the NCCL unique id: one set, or one get, per member
PER_MEMBER = MEET + NCCL
NOFILE = 1024


def every_group(L, world: int) -> Iterator[Tuple[str, List[int]]]:
    """(key, members) of every group the job forms: the default group and
    the collection of every grid (the same keys on every rank)."""
    yield "default", list(range(world))
    keys = set()
    for grid in L.grids:
        for g in L.collection(grid.name, grid.ranks[0]).values():
            if g is not None:
                keys.add(g.key)
    for key in sorted(keys):
        for members in L.groups(key):
            yield key, list(members)


class Load:
    """What each store serves: connections and requests, per host rank."""

    def __init__(self) -> None:
        self.pairs: Dict[Tuple[int, int], int] = defaultdict(int)  # (client, host) -> groups
        self.links: Set[Tuple[int, int]] = set()  # (head, host): one link each
        self.requests: Dict[int, int] = defaultdict(int)

    def meet(self, client: int, host: int, requests: int) -> None:
        self.pairs[(client, host)] += 1
        self.requests[host] += requests

    def busiest(self) -> Tuple[int, int, int]:
        """(host, connections, requests) of the store with the most
        connections."""
        conns: Dict[int, int] = defaultdict(int)
        for (_, host), groups in self.pairs.items():
            conns[host] += min(THREADS, groups)
        for _, host in self.links:
            conns[host] += 1
        host = max(conns, key=lambda h: (conns[h], self.requests[h]))
        return host, conns[host], self.requests[host]


def loads(world: int, fanin: int, per_link: float) -> Dict[str, Load]:
    import hcg
    from hcg.torch import _places

    L = hcg.Layout(GRID, world)
    out = {"central": Load(), "leaders": Load(), "relays": Load()}
    relays = out["relays"]
    for _, members in every_group(L, world):
        lead = members[0]
        for m in members:
            out["central"].meet(m, 0, PER_MEMBER)
            out["leaders"].meet(m, lead, PER_MEMBER)
        size = _places.group_slice(len(members), fanin)
        behind: Set[int] = set()  # heads
        ups: Dict[int, int] = {}
        for i, m in enumerate(members):
            route = _places.path(members, m, size, i)
            relays.meet(m, route[0], PER_MEMBER)
            if len(route) > 1:
                behind.add(route[0])
                if route[0] == m:
                    relays.links.add((m, route[1]))
                    ups[m] = route[1]
        for head in behind:
            # What its link asks upstream: its slice's adds in batches
            # (MADD) and its waits once each; per_link, as the sample
            # measured it.
            relays.requests[ups[head]] += int(round(per_link))
    L.close()
    return out


# -- the sample: the real server, real proven connections -----------------

Route = Tuple[int, bytes, List[bytes]]  # port, secret, RELAY's chain fields


def _worker(routes: Dict[int, Route], k: int, timeout: float, go, out) -> None:
    """Members ``routes`` (index -> where it connects) meet as hcg's
    meeting has them, then read the group's NCCL id (member 0 sets it)."""
    from hcg.torch import _store_server as proto
    from hcg.torch import store

    prefix = b"hcg/bench/0/0//"
    sent = received = 0
    socks = {}
    mine = sorted(routes)

    def send(i: int, op: int, fields: Sequence[bytes]) -> None:
        nonlocal sent
        data = proto.frame(op, fields)
        socks[i].sendall(data)
        sent += len(data)

    def answer(i: int) -> Tuple[int, List[bytes]]:
        nonlocal received
        (n,) = struct.unpack(">I", store._recv_exact(socks[i], 4))
        received += 4 + n
        return proto.fields(store._recv_exact(socks[i], n))

    def each(op: int, fields_of) -> List[Tuple[int, List[bytes]]]:
        for i in mine:
            send(i, op, fields_of(i))
        return [answer(i) for i in mine]

    go.wait()
    start = time.monotonic()
    try:
        for i in mine:
            port, secret, chain = routes[i]
            socks[i] = store._connect("127.0.0.1", port, secret, timeout)
            socks[i].settimeout(timeout)
        handshakes = time.monotonic() - start
        sent += len(mine) * proto.PROOF
        received += len(mine) * (len(proto.HELLO) + proto.NONCE + proto.MAC)
        ms = b"%d" % int(timeout * 1000)
        relayed = [i for i in mine if routes[i][2]]
        for i in relayed:
            send(i, proto.RELAY, [prefix] + routes[i][2])
        for i in relayed:
            if answer(i)[0] != proto.OK:
                raise RuntimeError("RELAY refused")
        for i, (_, f) in zip(mine, each(proto.MADD, lambda i: [
                prefix + b"hcg_in/%d" % i, b"1", prefix + b"hcg_arrived", b"1"])):
            if int(f[1]) == k:  # the last one decides
                send(i, proto.CAS, [prefix + b"hcg_go", b"", b"ok"])
                answer(i)
                send(i, proto.SET, [prefix + b"hcg_decided", b"1"])
                answer(i)
        if any(st != proto.OK for st, _ in each(proto.WAIT, lambda i: [
                ms, prefix + b"hcg_decided"])):
            raise TimeoutError("the meeting did not decide in %g s" % timeout)
        each(proto.GET, lambda i: [ms, prefix + b"hcg_go"])
        if 0 in socks:  # the group's rank 0 writes the NCCL id
            send(0, proto.SET, [prefix + b"0", os.urandom(128)])
            answer(0)
        others = [i for i in mine if i]
        for i in others:
            send(i, proto.GET, [ms, prefix + b"0"])
        for i in others:
            answer(i)
        out.put(("ok", handshakes, time.monotonic() - start, sent, received))
    except Exception as exc:  # pylint: disable=broad-except
        out.put(("failed", len(socks), "%s: %s" % (type(exc).__name__, exc), sent,
                 received))
    finally:
        for sock in socks.values():
            sock.close()


def sample(k: int, timeout: float, fanin: int, relayed: bool,
           workers: int = 4) -> Dict[str, object]:
    """K members meet as one group at real stores: the leader's alone, or
    through relays (hcg.torch._places' slices): time, the busiest store's
    counts, bytes per request, rates."""
    from hcg.torch import _places, store

    members = list(range(k))
    size = _places.group_slice(k, fanin) if relayed else k
    paths = {i: _places.path(members, i, size, i) for i in members}
    servers: Dict[int, Tuple[Any, bytes]] = {}
    for host in sorted({r for path in paths.values() for r in path}):
        secret = os.urandom(16)
        servers[host] = (store.Server("127.0.0.1", secret), secret)

    def hop(r: int) -> List[bytes]:
        return [b"127.0.0.1", b"%d" % servers[r][0].port, servers[r][1]]

    routes = {i: (servers[p[0]][0].port, servers[p[0]][1],
                  [x for r in p[1:] for x in hop(r)]) for i, p in paths.items()}
    ctx = mp.get_context("fork")
    go = ctx.Barrier(workers + 1)
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(
        {i: routes[i] for i in range(w, k, workers)}, k, timeout, go, out))
        for w in range(workers)]
    for proc in procs:
        proc.start()
    go.wait()
    start = time.monotonic()
    results = [out.get() for _ in procs]
    elapsed = time.monotonic() - start
    for proc in procs:
        proc.join()
    stats = {r: store.stats("127.0.0.1", srv.port, secret) for r, (srv, secret) in servers.items()}
    for srv, _ in servers.values():
        srv.close()
    busiest = max(stats, key=lambda r: (stats[r]["proven"], stats[r]["requests"]))
    failed = [r for r in results if r[0] != "ok"]
    return {"k": k, "ok": not failed, "time": elapsed, "stores": len(servers),
            "handshakes": max((r[1] for r in results if r[0] == "ok"), default=0.0),
            "busiest": busiest, "proven": stats[busiest]["proven"],
            "requests": stats[busiest]["requests"],
            "all_requests": sum(st["requests"] for st in stats.values()),
            "forwarded": sum(st["forwarded"] for st in stats.values()),
            "upstream": sum(st["upstream"] for st in stats.values()),
            "bytes": sum(r[3] + r[4] for r in results),
            "why": failed[0][2] if failed else "",
            "connected": sum(r[1] for r in failed) if failed else k}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fanin", type=int, default=int(os.environ.get("HCG_FANIN", "512")))
    ap.add_argument("--sample", type=int, nargs="*", default=[256, 1000, 2000])
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--worlds", type=int, nargs="*", default=list(WORLDS))
    args = ap.parse_args()
    # As a job's tasks get it from Slurm on many sites: the server raises
    # its soft limit to the hard one, so both are set.
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))

    print("== the sample: K members meet as one group at real stores, each with "
          "ulimit -n %d (measured)" % NOFILE)
    print("%6s  %-7s %6s %-6s %7s %7s %9s %9s %9s %10s" % (
        "K", "way", "stores", "formed", "time s", "proven", "requests", "upstream",
        "req/s", "bytes/req"))
    rate = per_req = shake = None
    per_link = float(PER_MEMBER)
    for k in args.sample:
        for relayed in (False, True):
            s = sample(k, args.timeout, args.fanin, relayed)
            req_s = s["all_requests"] / s["time"] if s["ok"] else 0.0
            bpr = s["bytes"] / max(1, s["all_requests"] - s["upstream"])
            print("%6d  %-7s %6d %-6s %7.2f %7d %9d %9s %9.0f %10.1f" % (
                k, "relays" if relayed else "leader", s["stores"],
                "yes" if s["ok"] else "NO", s["time"], s["proven"], s["requests"],
                s["upstream"] if relayed else "-", req_s, bpr))
            if not s["ok"]:
                print("        did not form: %d of %d connected; %s"
                      % (s["connected"], k, s["why"]))
            elif not relayed and (rate is None or k > 200):
                rate, per_req = req_s, bpr
                shake = s["proven"] / max(s["handshakes"], 1e-6)
            elif relayed and int(s["stores"]) > 1:
                per_link = float(s["upstream"]) / (int(s["stores"]) - 1)
    print("proven, requests: the busiest store's; upstream: what the heads' "
          "links asked the store above (members' waits shared)")
    if rate is None:
        print("no sample formed at one store: no rates for the model")
        return 1

    print()
    print("== every group of the grid, every rank (hcg.Layout; F = %d, %d threads; "
          "the time is a model from the sample's %.0f requests/s, %.0f handshakes/s; "
          "a link asks %.1f requests a group, as measured)"
          % (args.fanin, THREADS, rate, shake, per_link))
    print("%7s  %-8s %7s %11s %10s %9s %9s  %-5s %s" % (
        "ranks", "way", "store@", "connections", "requests", "MB", "time s", "<= F",
        "forms under ulimit -n %d" % NOFILE))
    for world in args.worlds:
        for way, load in loads(world, args.fanin, per_link).items():
            host, conns, reqs = load.busiest()
            t = conns / shake + reqs / rate
            fits = "yes" if conns <= NOFILE - 16 else "NO (%d connections)" % conns
            print("%7d  %-8s %7d %11d %10d %9.1f %9.2f  %-5s %s" % (
                world, way, host, conns, reqs, reqs * per_req / 1e6, t,
                "yes" if conns <= args.fanin else "no", fits))
        sys.stdout.flush()
    print("\nstore@: the rank whose store serves the most connections; "
          "connections, requests, MB: what that one store serves")
    print("per member per group: %d requests (%d of hcg's meeting, %d for the NCCL id); "
          "a head's link asks upstream what the sample measured (adds batched, waits shared)"
          % (PER_MEMBER, MEET, NCCL))
    return 0


if __name__ == "__main__":
    sys.exit(main())
