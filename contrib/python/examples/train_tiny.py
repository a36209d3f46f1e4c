"""Train a tiny model with tensor and data parallelism over hcg's groups.

    srun --mpi=pmix -n 4 --hcg-layout='tp=2,dp=*' python3 train_tiny.py
    python3 train_tiny.py --reference      # the same model in one process

A two-layer MLP (float64, CPU): the first layer split by output features
over the tensor-parallel group (column parallel), the second by input
features (row parallel) with one all-reduce over ``tp``; each data-parallel
rank takes its slice of the batch, and gradients are averaged over ``dp``.
No Megatron ``parallel_state``: the groups come from hcg.torch. Rank 0
prints "step N loss L" per step; ``--reference`` prints the same lines from
one process holding the whole model and batch, and the two agree to
rounding (tests/cluster/torch.bats checks it).
"""

import argparse
import sys

import torch

IN, HIDDEN, OUT, BATCH = 16, 32, 8, 32


def full_model_and_data(steps: int):
    """Weights and one batch per step, the same on every rank (seeded)."""
    g = torch.Generator().manual_seed(1234)
    w1 = torch.randn(HIDDEN, IN, generator=g, dtype=torch.float64) / IN ** 0.5
    w2 = torch.randn(OUT, HIDDEN, generator=g, dtype=torch.float64) / HIDDEN ** 0.5
    batches = [(torch.randn(BATCH, IN, generator=g, dtype=torch.float64),
                torch.randn(BATCH, OUT, generator=g, dtype=torch.float64))
               for _ in range(steps)]
    return w1, w2, batches


def reference(steps: int, lr: float) -> None:
    w1, w2, batches = full_model_and_data(steps)
    w1.requires_grad_()
    w2.requires_grad_()
    for step, (x, y) in enumerate(batches):
        loss = torch.nn.functional.mse_loss(torch.relu(x @ w1.t()) @ w2.t(), y)
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                w -= lr * w.grad
                w.grad = None
        print("step %d loss %.17g" % (step, loss.item()))


def parallel(steps: int, lr: float) -> None:
    import torch.distributed as dist

    import hcg.torch

    hcg.torch.init(backend="gloo")  # this example trains on the CPU
    pgs = hcg.torch.new_collection()
    tp, dp = pgs.tp, pgs.dp
    tp_rank, tp_size = dist.get_rank(tp), dist.get_world_size(tp)
    dp_rank, dp_size = dist.get_rank(dp), dist.get_world_size(dp)
    if HIDDEN % tp_size or BATCH % dp_size:
        sys.exit("train_tiny: tp must divide %d and dp must divide %d"
                 % (HIDDEN, BATCH))

    class SumOverTp(torch.autograd.Function):
        """Row-parallel output: all-reduce forward, identity backward."""

        @staticmethod
        def forward(ctx, t):  # type: ignore[override]
            t = t.clone()
            dist.all_reduce(t, group=tp)
            return t

        @staticmethod
        def backward(ctx, grad):  # type: ignore[override]
            return grad

    w1, w2, batches = full_model_and_data(steps)
    shard = HIDDEN // tp_size
    w1 = w1[tp_rank * shard:(tp_rank + 1) * shard].clone().requires_grad_()
    w2 = w2[:, tp_rank * shard:(tp_rank + 1) * shard].clone().requires_grad_()
    rows = BATCH // dp_size
    for step, (x, y) in enumerate(batches):
        x = x[dp_rank * rows:(dp_rank + 1) * rows]
        y = y[dp_rank * rows:(dp_rank + 1) * rows]
        out = SumOverTp.apply(torch.relu(x @ w1.t()) @ w2.t())
        loss = torch.nn.functional.mse_loss(out, y)
        loss.backward()
        with torch.no_grad():
            for w in (w1, w2):
                dist.all_reduce(w.grad, group=dp)
                w -= lr * w.grad / dp_size
                w.grad = None
            # The loss of the whole batch: mean of the dp slices' losses.
            total = loss.detach().clone()
            dist.all_reduce(total, group=dp)
        if dist.get_rank() == 0:
            print("step %d loss %.17g" % (step, total.item() / dp_size), flush=True)
    pgs.factory.destroy()
    dist.destroy_process_group()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--lr", type=float, default=0.1)
    ap.add_argument("--reference", action="store_true",
                    help="run the whole model in this one process")
    args = ap.parse_args()
    (reference if args.reference else parallel)(args.steps, args.lr)


if __name__ == "__main__":
    main()
