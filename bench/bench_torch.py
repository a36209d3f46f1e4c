"""One task of bench_torch.sh: time one rank's whole collection of process
groups, made by hcg.torch or the way Megatron-LM makes them.

    srun --mpi=pmix --hcg-layout=LAYOUT python3 bench_torch.py hcg|megatron

Both start from the same default group (hcg.torch.init, gloo) and a
barrier. 'hcg': hcg.torch.new_collection() (every field of the language
grid, its expert view and the embedding groups; each rank makes its own
groups with their members; keys holding the same ranks share one group).
'hcg_per_key': the same with share_equal=False, one group per key as
Megatron makes them. 'megatron': for each of the same group keys,
every rank calls torch.distributed.new_group for every group of the key's
enumeration, as new_subgroups_by_enumeration does (collective over the
world). Rank 0 prints "time MODE SECONDS groups G calls C members M", the
slowest rank's time and rank 0's counts (G: group keys holding rank 0; C:
process groups made (hcg) or new_group calls (megatron); M: members of the
process groups rank 0 made, what its connection work follows).
"""

import sys
import time

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht


def enumerations(L) -> dict:
    """Every group key of the language grid (its fields and embedding
    groups) -> the ranks of each of its groups, as Megatron-LM enumerates
    them (bench_job.py makes the same groups this way)."""
    grid = L.grid(L.language)
    enums = {}
    for field in hcg.FIELDS:
        req = L.field_request(grid.name, field)
        if req is not None:
            enums[req.key] = L.enumerate(req)
    for kind in hcg.EMBEDDINGS:
        enums["%s#%s" % (grid.name, kind)] = L.embedding_groups(kind)
    return enums


def main() -> int:
    mode = sys.argv[1]
    task = ht.init(backend="gloo", timeout=600)
    L, rank = task.layout, task.rank
    dist.barrier()
    t0 = time.perf_counter()
    if mode in ("hcg", "hcg_per_key"):
        pgs = ht.new_collection(share_equal=(mode == "hcg"))
        keys = {k for k, m in zip(pgs.keys.values(), pgs.ranks.values()) if m}
        groups = len(keys)
        # Process groups made: fewer than keys where keys share their ranks.
        made = {id(pgs[f]): len(pgs.ranks[f]) for f in ht.ATTRIBUTES
                if pgs[f] is not None}
        calls = len(made)
        members = sum(made.values())
    else:
        enums = enumerations(L)
        groups = calls = members = 0
        for key in sorted(enums):
            for ranks in enums[key]:
                pg = dist.new_group(ranks=ranks)
                calls += 1
                if rank in ranks:
                    groups += 1
                    members += len(ranks)
                    assert pg is not None
    elapsed = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
    dist.all_reduce(elapsed, op=dist.ReduceOp.MAX)
    if rank == 0:
        print("time %s %.4f groups %d calls %d members %d"
              % (mode, elapsed.item(), groups, calls, members), flush=True)
    dist.barrier()
    return 0


if __name__ == "__main__":
    sys.exit(main())
