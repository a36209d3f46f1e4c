"""The job's store (hcg.torch.store: a child process of rank 0, every
connection proven by the job's secret) against torch's TCPStore, side by
side in one run: CLIENTS processes on this host, each connected to the
store, all starting together, each doing OPS rounds of set, get and add
(three requests). Prints requests per second over all clients and the
median time of one round, for each store, and their ratio. Asserts
nothing; not run by CI.

    python3 bench/bench_store.py [--ops N] [CLIENTS...]     (default 1 8 32)

Needs torch (Debian's python3-torch) and hcg on PYTHONPATH (contrib/python).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing as mp
import os
import statistics
import time

TIMEOUT = datetime.timedelta(seconds=120)


def connect(kind: str, port: int, secret: bytes):
    import hcg.torch as ht
    from hcg.torch import store

    if kind == "tcpstore":
        return ht.tcp_store("127.0.0.1", port, None, False, TIMEOUT)
    return store.client("127.0.0.1", port, secret, TIMEOUT)


def client(kind: str, port: int, secret: bytes, index: int, ops: int,
           ready, out) -> None:
    s = connect(kind, port, secret)
    ready.wait()
    rounds = []
    for i in range(ops):
        start = time.perf_counter()
        key = "k/%d/%d" % (index, i)
        s.set(key, b"x" * 64)
        s.get(key)
        s.add("counter", 1)
        rounds.append(time.perf_counter() - start)
    out.put(rounds)


def run(kind: str, clients: int, ops: int) -> tuple:
    import hcg.torch as ht
    from hcg.torch import store

    secret = os.urandom(16)
    if kind == "tcpstore":
        server = ht.tcp_store("127.0.0.1", 0, None, True, TIMEOUT, wait_for_workers=False)
        port, closer = server.port, None
    else:
        server = store.Server("127.0.0.1", secret)
        port, closer = server.port, server.close
    ctx = mp.get_context("spawn")
    ready = ctx.Barrier(clients + 1)
    out = ctx.Queue()
    procs = [ctx.Process(target=client, args=(kind, port, secret, i, ops, ready, out))
             for i in range(clients)]
    for p in procs:
        p.start()
    ready.wait()
    start = time.perf_counter()
    rounds = []
    for _ in procs:
        rounds += out.get()
    elapsed = time.perf_counter() - start
    for p in procs:
        p.join()
    if closer is not None:
        closer()
    return 3 * clients * ops / elapsed, statistics.median(rounds)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=2000, help="rounds per client")
    ap.add_argument("clients", type=int, nargs="*", default=[1, 8, 32])
    args = ap.parse_args()
    import torch

    print("torch %s; %d CPUs; %d rounds of set+get+add per client"
          % (torch.__version__, os.cpu_count() or 0, args.ops))
    print("%8s %16s %16s %14s %14s %8s" % ("clients", "tcpstore req/s", "job req/s",
                                          "tcpstore rnd", "job rnd", "ratio"))
    for n in args.clients:
        t_rate, t_round = run("tcpstore", n, args.ops)
        j_rate, j_round = run("job", n, args.ops)
        print("%8d %16.0f %16.0f %12.0fus %12.0fus %7.2fx"
              % (n, t_rate, j_rate, t_round * 1e6, j_round * 1e6, j_rate / t_rate),
              flush=True)
    print("req/s: requests answered per second, all clients together; rnd: the median "
          "round (set, get, add) of one client; ratio: job / tcpstore requests per second.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
