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
  handshakes and requests (stores serve in parallel, each one process);
- PMIx reads: which publications each process reads, the real code
  (hcg.torch._places.reads: the store it connects to, and a head's next
  one up), for every rank and group; the busiest publication's readers;
- gloo connections: the busiest process's peers over the groups Megatron
  keeps on gloo (GLOO_FIELDS), a full mesh each;
- the time end to end: a sum of terms, each MEASURED here, COUNTED by the
  code or ASSUMED with its source (the constants below, printed with the
  table), beside torch's own way (one TCPStore).

For scripts, one line per world size:
    scale: world=N store_connections=C publication_reads=R gloo_connections=G time_s=T
"""

from __future__ import annotations

import argparse
import datetime
import math
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
#: The groups Megatron keeps on gloo unless --disable-gloo-process-groups
#: (core/parallel_state.py: _DATA_PARALLEL_GROUP_GLOO,
#: _DATA_PARALLEL_GROUP_WITH_CP_GLOO, _EXPERT_DATA_PARALLEL_GROUP_GLOO),
#: by hcg's field names (ProcessGroupCollection's).
GLOO_FIELDS = ("dp", "dp_cp", "expt_dp")
#: Round trips of one group's meeting and id for a member: the check-in
#: (one MADD), the wait for the decision, reading it, the NCCL id.
ROUNDS = 4
#: torch's scalable NCCL init: one unique id per this many ranks
#: (TORCH_NCCL_RANKS_PER_ROOT's default, pytorch#191983); every member
#: reads them all from the store.
RANKS_PER_ROOT = 128
#: Ranks per node (doc/scaling.md's R).
PER_NODE = 8
# Terms of the time model that cannot be measured on one machine. Each is
# ASSUMED, with where its figure comes from; the bench prints them so.
#: Slurm's PMIx fence at 128 tasks on this project's node, 32.45 ms
#: (doc/scaling.md, bench_exchange.sh), taken per level of a tree over the
#: nodes: log2(nodes) levels (ASSUMED: no fence of 1k+ nodes ran here).
FENCE_LEVEL_S = 0.03245
#: One PMIx get (direct modex) beyond the fence's: 0.89 ms measured here at
#: 32 tasks (doc/scaling.md, t_get); a publisher's PMIx server answers its
#: readers one after another (ASSUMED: that rate holds on a real node).
T_GET_S = 0.00089
#: A network round trip per relay hop, beyond the stores' own time
#: (measured below on loopback): ASSUMED 0.1 ms (a datacenter TCP round
#: trip; one machine here has no network).
RTT_S = 0.0001
#: NCCL's own bootstrap of the world communicator: about 265 s at 96k GPUs
#: (arXiv 2510.20171), ASSUMED linear in the ranks (its ring allgather);
#: the same whichever store the ids came through.
NCCL_96K_S = 265.0
#: torch's way: one libuv TCPStore, 96K ranks connect in about 100 s
#: (PyTorch's "Introduction to Libuv TCPStore Backend"), ASSUMED linear.
TCPSTORE_96K_S = 100.0


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
    """What each store serves: connections and requests, per host rank;
    and what each process reads and waits for (see Job)."""

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


class Job:
    """What the processes of one job do beyond the stores (the relays way):
    the PMIx publications each reads (hcg.torch._places.reads, the real
    code), its gloo connections, and per rank the relay hops and id reads
    of its groups, for the time model."""

    def __init__(self, world: int) -> None:
        self.world = world
        self.read: Set[int] = set()  # reader * world + publication, once each
        self.gloo: Dict[int, int] = defaultdict(int)  # rank -> gloo peers
        self.groups: Dict[int, int] = defaultdict(int)  # rank -> its groups
        self.hops: Dict[int, int] = defaultdict(int)  # rank -> sum of route lengths
        self.ids: Dict[int, int] = defaultdict(int)  # rank -> id reads x route length
        self.roots: Dict[int, int] = defaultdict(int)  # rank -> id reads
        self.depth = 1  # the longest route

    def busiest_publication(self) -> Tuple[int, int]:
        """(rank, readers) of the publication the most processes read."""
        count: Dict[int, int] = defaultdict(int)
        for pair in self.read:
            count[pair % self.world] += 1
        rank = max(count, key=lambda r: (count[r], -r))
        return rank, count[rank]

    def most_reads(self) -> int:
        """The most publications one process reads."""
        count: Dict[int, int] = defaultdict(int)
        for pair in self.read:
            count[pair // self.world] += 1
        return max(count.values())


def loads(world: int, fanin: int, per_link: float) -> Tuple[Dict[str, Load], Job]:
    import hcg
    from hcg.torch import _places

    L = hcg.Layout(GRID, world)
    out = {"central": Load(), "leaders": Load(), "relays": Load()}
    relays = out["relays"]
    job = Job(world)
    gloo = {g.key for grid in L.grids for field, g in
            L.collection(grid.name, grid.ranks[0]).items()
            if field in GLOO_FIELDS and g is not None}
    for key, members in every_group(L, world):
        lead = members[0]
        for m in members:
            out["central"].meet(m, 0, PER_MEMBER)
            out["leaders"].meet(m, lead, PER_MEMBER)
        if key in gloo:
            for m in members:
                job.gloo[m] += len(members) - 1
        size = _places.group_slice(len(members), fanin)
        roots = -(-len(members) // RANKS_PER_ROOT)
        behind: Set[int] = set()  # heads
        ups: Dict[int, int] = {}
        for i, m in enumerate(members):
            route = _places.path(members, m, size, i)
            for r in _places.reads(members, m, size, i):
                job.read.add(m * world + r)
            job.groups[m] += 1
            job.hops[m] += len(route)
            job.ids[m] += roots * len(route)
            job.roots[m] += roots
            job.depth = max(job.depth, len(route))
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
    return out, job


# -- the sample: the real server, real proven connections -----------------

Route = Tuple[int, bytes, int]  # port, secret, rank of the head (-1: not relayed)


def _worker(routes: Dict[int, Route], k: int, timeout: float, go, out) -> None:
    """Members ``routes`` (index -> where it connects) meet as hcg's
    meeting has them, then read the group's NCCL id (member 0 sets it)."""
    from hcg.torch import _store_dial as dial, _store_proto as proto

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
        (n,) = struct.unpack(">I", dial.recv_exact(socks[i], 4))
        received += 4 + n
        return proto.fields(dial.recv_exact(socks[i], n))

    def each(op: int, fields_of) -> List[Tuple[int, List[bytes]]]:
        for i in mine:
            send(i, op, fields_of(i))
        return [answer(i) for i in mine]

    go.wait()
    start = time.monotonic()
    try:
        for i in mine:
            port, secret, _ = routes[i]
            socks[i] = dial.dial("127.0.0.1", port, secret, timeout)
            socks[i].settimeout(timeout)
        handshakes = time.monotonic() - start
        sent += len(mine) * proto.PROOF
        received += len(mine) * (len(proto.HELLO) + proto.NONCE + proto.MAC)
        ms = b"%d" % int(timeout * 1000)
        relayed = [i for i in mine if routes[i][2] >= 0]
        for i in relayed:  # the prefix alone: the head's rank said where
            send(i, proto.RELAY, [prefix, ms, b"%d" % routes[i][2]])
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

    for i, p in paths.items():
        if p[0] == i and len(p) > 1:
            # A head's rank tells its own store where the keys go next
            # (its pipe), as hcg.torch.store.relay_route does.
            up = servers[p[1]]
            servers[i][0].relay("hcg/bench/0/0//", "127.0.0.1", up[0].port, up[1], p[1],
                                len(p) > 2, datetime.timedelta(seconds=timeout))
    routes = {i: (servers[p[0]][0].port, servers[p[0]][1], p[0] if len(p) > 1 else -1)
              for i, p in paths.items()}
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


def latency(n: int = 400) -> Tuple[float, float]:
    """Seconds one request takes at a store, and what one relay hop adds
    (a head's store forwarding to the leader's, told by its rank through
    its pipe): measured on loopback, one connection, one request at a
    time."""
    from hcg.torch import _store_dial as dial, _store_proto as proto
    from hcg.torch import store

    secrets = os.urandom(16), os.urandom(16)
    lead = store.Server("127.0.0.1", secrets[0])
    head = store.Server("127.0.0.1", secrets[1])
    try:
        head.relay("hcg/lat/", "127.0.0.1", lead.port, secrets[0], 1, False,
                   datetime.timedelta(seconds=30))
        out = []
        for port, secret, relayed in ((lead.port, secrets[0], False),
                                      (head.port, secrets[1], True)):
            sock = dial.dial("127.0.0.1", port, secret, 30)
            sock.settimeout(30)

            def call(op: int, fields: List[bytes]) -> Tuple[int, List[bytes]]:
                sock.sendall(proto.frame(op, fields))
                (k,) = struct.unpack(">I", dial.recv_exact(sock, 4))
                return proto.fields(dial.recv_exact(sock, k))

            if relayed:
                call(proto.RELAY, [b"hcg/lat/", b"30000", b"1"])
            call(proto.SET, [b"hcg/lat/k", b"v"])  # the link opens
            start = time.perf_counter()
            for _ in range(n):
                call(proto.GET, [b"1000", b"hcg/lat/k"])
            out.append((time.perf_counter() - start) / n)
            sock.close()
        return out[0], max(0.0, out[1] - out[0])
    finally:
        lead.close()
        head.close()


def end_to_end(world: int, ways: Dict[str, Load], job: Job, rate: float, shake: float,
               t_req: float, t_hop: float) -> Dict[str, float]:
    """The time model's terms for one world size (seconds); see main()'s
    legend for what each is and whether it is measured or assumed."""
    def service(load: Load) -> float:
        _, conns, reqs = load.busiest()
        return conns / shake + reqs / rate

    one = t_req + RTT_S  # one request at one store, over the network
    # The rank whose groups take longest: its routes' hops and id reads.
    rank = max(job.hops, key=lambda r: ROUNDS * job.hops[r] + job.ids[r])
    groups, hops, ids = job.groups[rank], job.hops[rank], job.ids[rank]
    through = ROUNDS * (hops * one + (hops - groups) * t_hop)  # its meetings
    gather = ids * (one + t_hop)  # torch's id reads, through the same routes
    _, readers = job.busiest_publication()
    nodes = max(2, world // PER_NODE)
    t = {
        "fence": FENCE_LEVEL_S * math.log2(nodes),
        "reads": max(job.most_reads(), readers) * T_GET_S,
        "store": service(ways["relays"]),
        "groups": through / THREADS,  # THREADS groups at once
        "ids": gather / THREADS,
        "nccl": NCCL_96K_S * world / 96000.0,
        # torch's way: one store for the job, its groups one after another
        "t_connect": TCPSTORE_96K_S * world / 96000.0,
        # its requests only: its connections are t_connect's
        "t_store": ways["central"].busiest()[2] / rate,
        "t_groups": (ROUNDS * groups + job.roots[rank]) * one,
    }
    t["hcg"] = sum(t[k] for k in ("fence", "reads", "store", "groups", "ids", "nccl"))
    t["torch"] = t["t_connect"] + t["t_store"] + t["t_groups"] + t["nccl"]
    return t


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
    t_req, t_hop = latency()
    rows = []
    for world in args.worlds:
        ways, job = loads(world, args.fanin, per_link)
        rows.append((world, ways, job, end_to_end(world, ways, job, rate, shake, t_req,
                                                  t_hop)))
        for way, load in ways.items():
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

    print()
    print("== PMIx reads and gloo (relays, the real routing code: hcg.torch._places.reads)")
    print("%7s %12s %9s %11s %10s" % ("ranks", "publication", "readers", "most reads",
                                      "gloo conns"))
    for world, ways, job, _ in rows:
        pub, readers = job.busiest_publication()
        print("%7d %12d %9d %11d %10d" % (world, pub, readers, job.most_reads(),
                                          max(job.gloo.values())))
    print("readers: the processes that read that rank's publication (its store's "
          "address and secret), rank 0's included; most reads: by one process; gloo "
          "conns: the busiest process's peers over Megatron's gloo groups (%s: "
          "sum of size - 1), kept unless --disable-gloo-process-groups"
          % ", ".join(GLOO_FIELDS))

    print()
    print("== end to end, seconds (a sum: the terms overlap in part, so a bound)")
    print("%7s | %6s %6s %6s %6s %6s %7s %8s | %8s %7s %7s %8s" % (
        "ranks", "fence", "reads", "store", "groups", "ids", "nccl", "hcg", "connect",
        "store", "groups", "torch"))
    for world, _, _, t in rows:
        print("%7d | %6.2f %6.2f %6.2f %6.2f %6.2f %7.1f %8.1f | %8.1f %7.2f %7.2f %8.1f" % (
            world, t["fence"], t["reads"], t["store"], t["groups"], t["ids"], t["nccl"],
            t["hcg"], t["t_connect"], t["t_store"], t["t_groups"], t["torch"]))
    print("""terms (MEASURED here, COUNTED by the real code, ASSUMED with the source):
  fence    ASSUMED %.2f ms a level of a tree over the nodes (%d ranks a node), log2(nodes)
           levels: doc/scaling.md's 128-task fence on this node (bench_exchange.sh)
  reads    COUNTED publications read (the most by one process, or by the busiest
           publication's readers, served one after another) x t_get %.2f ms MEASURED
           here at 32 tasks (doc/scaling.md), ASSUMED to hold on a real node
  store    the busiest store's connections and requests (COUNTED) at the rates the
           sample MEASURED above (%.0f handshakes/s, %.0f requests/s)
  groups   the slowest rank's meetings: %d round trips a group through its route's
           hops (COUNTED), each %.3f ms at a store and %.3f ms more a relay hop
           (MEASURED here on loopback) plus %.2f ms of network (ASSUMED), %d groups at once
  ids      torch's id gather for NCCL's scalable init: ceil(S/%d) ids read by every
           member (torch's TORCH_NCCL_RANKS_PER_ROOT default), through the same routes
  nccl     NCCL's own bootstrap: ASSUMED %.0f s at 96k GPUs (arXiv 2510.20171), linear
  torch's way: one libuv TCPStore, connect ASSUMED %.0f s at 96K ranks (PyTorch's
           "Introduction to Libuv TCPStore Backend"), linear; its store: the central
           way's requests at the rate MEASURED for hcg's store (ASSUMED for torch's
           store, C++, not measured here: it may serve faster); its groups one after
           another (new_group), each at that one store; the same NCCL bootstrap"""
          % (FENCE_LEVEL_S * 1000, PER_NODE, T_GET_S * 1000, shake, rate, ROUNDS,
             t_req * 1000, t_hop * 1000, RTT_S * 1000, THREADS, RANKS_PER_ROOT,
             NCCL_96K_S, TCPSTORE_96K_S))
    print()
    for world, ways, job, t in rows:
        _, conns, _ = ways["relays"].busiest()
        print("scale: world=%d store_connections=%d publication_reads=%d "
              "gloo_connections=%d time_s=%.1f" % (world, conns, job.busiest_publication()[1],
                                                    max(job.gloo.values()), t["hcg"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
