"""A task of tests/cluster/torch.bats that goes wrong on purpose.

    python3 faults.py missing RANK    # RANK never makes its groups
    python3 faults.py init [TIMEOUT]   # just hcg.torch.init() (timeout 60)
    python3 faults.py absent0 SECONDS  # rank 0 sleeps that long and never
                                       # calls init(); the others, timeout 10

Prints "error NAME: message" for an hcg error, "no error" otherwise, then
"after SECONDS s" (how long the hcg call took), "started EPOCH" and "ended
EPOCH" (the call's start and end by the node's clock: tasks that start
seconds apart on a loaded node are timed from the last one's start), and
"peer RANK" after a PeerError; a traceback from anywhere else fails the
test.
"""

import os
import sys
import time

import torch.distributed  # noqa: F401  (imported before any clock starts)

import hcg
import hcg.torch as ht


def main() -> int:
    what = sys.argv[1]
    start = time.monotonic()
    started = time.time()
    try:
        if what == "absent0":
            if os.environ.get("SLURM_PROCID") == "0":
                time.sleep(float(sys.argv[2]))
                print("skipped")
                return 0
            ht.init(backend="gloo", timeout=10)
            print("no error")
            return 0
        timeout = float(sys.argv[2]) if what == "init" and len(sys.argv) > 2 else 60
        task = ht.init(backend="gloo", timeout=timeout)
        if what == "missing":
            if task.rank == int(sys.argv[2]):
                time.sleep(15)
                print("skipped")
                return 0
            start, started = time.monotonic(), time.time()
            ht.new_collection(timeout=5)
        print("no error")
    except hcg.HcgError as exc:
        print("error %s: %s" % (exc.name, exc.message))
        if isinstance(exc, hcg.PeerError):
            print("peer %d" % exc.rank)
    finally:
        print("after %.1f s" % (time.monotonic() - start))
        print("started %.3f" % started)
        print("ended %.3f" % time.time(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
