"""A task of tests/cluster/megatron.bats: Megatron-LM's job script,

    ARGS="--tensor-model-parallel-size 2 ..."
    srun --mpi=pmix --hcg-layout="$(hcg layout --megatron "$ARGS" -n N)" \
         python3 megatron_job.py $ARGS

with Megatron's parallel arguments parsed as Megatron names them (its
argparse names and defaults; the other words are ignored). The task
checks its arguments against the launcher's layout
(hcg.torch.check_megatron_args), then builds Megatron's groups: for one
model HyperCommGrid's (created before torch.distributed starts, as Megatron
does) and to_megatron(); with the MIMO arguments, Megatron's MIMO topology
(hcg.torch.megatron.create_topology) from the specs Megatron's example makes
of them. Every group is checked against the task's HCG_* sizes and with an
all-reduce. Prints "ok RANK ..." or "refused RANK: message" (exit 3) or
"bad RANK: what" (exit 1).
"""

import argparse
import os
import sys

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht
from hcg.torch import megatron as hm


def parse(argv):
    p = argparse.ArgumentParser(allow_abbrev=False)
    for name in ("--tensor-model-parallel-size", "--pipeline-model-parallel-size",
                 "--context-parallel-size", "--expert-model-parallel-size"):
        p.add_argument(name, type=int, default=1)
    for name in ("--expert-tensor-parallel-size", "--tensor-parallel-num-weight-shards",
                 "--llm-expt-tp"):
        p.add_argument(name, type=int, default=None)
    p.add_argument("--use-tp-pp-dp-mapping", action="store_true")
    p.add_argument("--llm-only", action="store_true")
    mimo = {"--encoder-tp": 2, "--encoder-dp": 2, "--llm-offset": 4, "--llm-tp": 2,
            "--llm-cp": 1, "--llm-pp": 1, "--llm-dp": 2, "--llm-ep": 1}
    for name, default in mimo.items():
        p.add_argument(name, type=int, default=default)
    args, _ = p.parse_known_args(argv)
    args.mimo = any(a.split("=")[0] in mimo or a in ("--llm-expt-tp", "--llm-only")
                    for a in argv)
    if not args.mimo:  # the MIMO arguments are not Megatron's stock ones
        for name in mimo:
            delattr(args, name[2:].replace("-", "_"))
        del args.llm_expt_tp, args.llm_only
    return args


def sum_of(pg, rank):
    t = torch.tensor([float(rank)], dtype=torch.float64)
    dist.all_reduce(t, group=pg)
    return int(t.item())


def main() -> int:
    args = parse(sys.argv[1:])
    world = int(os.environ["HCG_WORLD_SIZE"])
    rank = int(os.environ["HCG_RANK"])
    bad = []
    if not args.mimo:
        # Megatron builds its grid before torch.distributed starts.
        os.environ["WORLD_SIZE"] = str(world)
        tp = args.tensor_model_parallel_size
        pp = args.pipeline_model_parallel_size
        cp = args.context_parallel_size
        grid = ht.HyperCommGrid([tp, cp, world // (tp * cp * pp), pp],
                                ["tp", "cp", "dp", "pp"])
    task = ht.init(backend="gloo", timeout=60)
    try:
        sizes = ht.check_megatron_args(args)
    except ht.MegatronError as exc:
        print("refused %d: %s" % (rank, exc.message.replace("\n", " | ")))
        dist.destroy_process_group()
        return 3
    env = os.environ
    if not args.mimo:
        for dim in ("tp", "cp", "dp", "pp"):
            pg = grid.create_pg(dim)
            if dist.get_world_size(pg) != int(env["HCG_WORLD_%s_SIZE" % dim.upper()]):
                bad.append("grid %s" % dim)
        pgs = ht.new_collection().to_megatron(hm.ProcessGroupCollection)
        for field, dim in (("tp", "TP"), ("dp", "DP"), ("pp", "PP"),
                           ("ep", "EXPERT_EP"), ("expt_dp", "EXPERT_EXPT_DP")):
            pg = getattr(pgs, field)
            if dist.get_world_size(pg) != int(env["HCG_WORLD_%s_SIZE" % dim]):
                bad.append("to_megatron %s" % field)
        what = "tp=%d ep=%d" % (sizes.tensor_model_parallel_size,
                                sizes.expert_model_parallel_size)
        grid.destroy()
    else:
        # The specs Megatron's MIMO example makes of its arguments.
        llm = (args.llm_tp * args.llm_cp * args.llm_pp * args.llm_dp)
        specs = [hm.ModuleGridSpec("language", llm, tp=args.llm_tp, cp=args.llm_cp,
                                   pp=args.llm_pp, ep=args.llm_ep,
                                   rank_offset=args.llm_offset,
                                   expt_tp=args.llm_expt_tp or 1)]
        if not args.llm_only:
            specs.insert(0, hm.ModuleGridSpec("encoder", args.encoder_tp * args.encoder_dp,
                                              tp=args.encoder_tp))
        topo = hm.create_topology(specs, timeout=60)
        for name in env["HCG_GRIDS"].split(","):
            pgc = topo.module_pgs[name]
            for field, dim in (("tp", "TP"), ("dp", "DP"), ("pp", "PP"),
                               ("ep", "EXPERT_EP")):
                pg = getattr(pgc, field)
                if dist.get_world_size(pg) != int(env["HCG_%s_%s_SIZE" % (name.upper(), dim)]):
                    bad.append("%s.%s" % (name, field))
                sum_of(pg, rank)
        sched = topo.schedule_pg_collection
        if sorted(sched.module_pgs) != sorted(env["HCG_GRIDS"].split(",")):
            bad.append("schedule %s" % sorted(sched.module_pgs))
        what = "modules=%s" % ",".join(sorted(sched.module_pgs))
        topo.destroy()
    t = torch.tensor([len(bad)], dtype=torch.float64)
    dist.all_reduce(t)
    dist.barrier()
    dist.destroy_process_group()
    if bad or t.item():
        print("bad %d: %s (job total %d)" % (rank, ", ".join(bad), t.item()))
        return 1
    print("ok %d %s layout=%s" % (rank, what, task.layout.text))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except hcg.HcgError as exc:
        print("hcg-error %s" % exc, file=sys.stderr)
        sys.exit(2)
