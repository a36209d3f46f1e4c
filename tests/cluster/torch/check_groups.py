"""A task of tests/cluster/torch.bats: hcg.torch.init() from srun's
environment, then every group of every grid of this rank checked against
the layout (size, group rank, members, all-reduce of global ranks).

    srun --mpi=pmix --hcg-layout=... python3 check_groups.py [BACKEND]

Prints one line: "ok RANK fields=F groups=G store=HOST:PORT" (the store
where it met the default group: rank 0's, or its slice head's) or "bad RANK: what" (and exits 1);
under PMIx, where every rank has a store of its own, then "served RANK
proven=P requests=Q": what this rank's store served. With
HCGTEST_SECRET_DIR set, writes its store's secret (hex) to secret.RANK
there, for a test that looks for it on the wire.
"""

import os
import sys

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht
from hcg.torch._base import STATE


def check_every_group(task):
    """Every group of every grid of this rank (hcg.torch.new_collections)
    checked against the layout: size, group rank, members, all-reduce of
    global ranks. Returns (the failed "grid.field"s, fields checked, process
    groups, the collections). check_bridge.py runs it too, in its MIMO jobs."""
    rank, L = task.rank, task.layout
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    cols = ht.new_collections()
    bad, fields, objects = [], 0, {}
    for name, pgs in cols.items():
        for field in ht.ATTRIBUTES:
            pg, members = pgs[field], pgs.ranks[field]
            if members is None:
                continue
            want = (L.embedding_group(rank, field) if field in hcg.EMBEDDINGS
                    else L.group_of_rank(pgs.keys[field], rank).members)
            t = torch.tensor([float(rank)], dtype=torch.float64, device=device)
            dist.all_reduce(t, group=pg)
            if (members != want or dist.get_world_size(pg) != len(want)
                    or dist.get_rank(pg) != want.index(rank)
                    or t.item() != sum(want)):
                bad.append("%s.%s" % (name, field))
            objects.setdefault(pgs.keys[field], pg)
            fields += 1
    return bad, fields, len(objects), cols


def main() -> int:
    backend = sys.argv[1] if len(sys.argv) > 1 else "gloo"  # CPU tensors
    task = ht.init(backend=backend, timeout=60)
    rank = task.rank
    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    bad, fields, groups, cols = check_every_group(task)
    # The whole world agrees the job worked (and nobody leaves early).
    t = torch.tensor([len(bad)], dtype=torch.float64, device=device)
    dist.all_reduce(t)
    if bad or t.item():
        print("bad %d: %s (job total %d)" % (rank, ", ".join(bad), t.item()))
        return 1
    # The store it met the default group at: rank 0's, or its slice head's
    # (reading rank 0's publication on every rank is what init() avoids).
    met = STATE.places.route(range(task.world_size), rank, "the default group").first
    print("ok %d fields=%d groups=%d store=%s" % (rank, fields, groups, met.address))
    own = STATE.places.rank(rank, "this rank's")
    where = os.environ.get("HCGTEST_SECRET_DIR")
    if where and own.secret is not None:
        # For torch.bats's wire test to look for in what went over TCP:
        # a file of its own, never the output the other tests search.
        with open(os.path.join(where, "secret.%d" % rank), "w") as f:
            f.write(own.secret.hex())
        # Where its node's PMIx server listens: the publication goes there.
        with open(os.path.join(where, "pmix.%d" % rank), "w") as f:
            f.write("\n".join(v for k, v in os.environ.items()
                              if k.startswith("PMIX_SERVER_URI")))
    if own.rank == rank and own.secret is not None:
        from hcg.torch import store as jobstore

        proven, requests = jobstore.served(own.host, own.port, own.secret, rank)
        print("served %d proven=%d requests=%d" % (rank, proven, requests))
    next(iter(cols.values())).factory.destroy()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except hcg.HcgError as exc:
        print("hcg-error %s" % exc, file=sys.stderr)
        sys.exit(2)
