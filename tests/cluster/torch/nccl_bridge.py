"""A task of tests/cluster/torch.bats, run only where CUDA is: the bridge's
and the groups' NCCL path with one rank per communicator (NCCL refuses two
ranks of one communicator on one GPU). Prints "ok 0 ..." per check."""

import sys

import torch
import torch.distributed as dist

import hcg
import hcg.torch as ht


def main() -> int:
    ht.init(backend="nccl", timeout=60)
    torch.cuda.set_device(0)
    # A one-rank group made the members-only way, used for an all-reduce.
    pg = ht.GroupFactory().group("llm:dp")
    t = torch.full((4,), 3.0, device="cuda")
    dist.all_reduce(t, group=pg)
    ok = bool((t == 3.0).all())
    print("%s 0 one-rank group all-reduce on cuda" % ("ok" if ok else "bad"))
    # The colocated bridge, a passthrough on one rank, forward and backward.
    br = ht.ColocatedBridge("vision", "llm")
    x = torch.arange(12.0, device="cuda").view(4, 3).requires_grad_()
    y = br(x)
    y.backward(torch.ones_like(y))
    ok = br.kind == "passthrough" and torch.equal(y.detach(), x.detach()) and \
        bool((x.grad == 1).all())
    print("%s 0 passthrough bridge on cuda" % ("ok" if ok else "bad"))
    # A CPU tensor cannot travel on nccl groups: hcg's error, not torch's.
    try:
        br(torch.zeros(4, 3))
        print("bad 0 a cpu input was accepted by an nccl bridge")
    except hcg.HcgError as exc:
        ok = exc.code == hcg.Status.EINVAL and "nccl backend" in str(exc)
        print("%s 0 cpu input refused: %s" % ("ok" if ok else "bad", exc))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
