"""A task of tests/cluster/torch.bats that goes wrong on purpose.

    python3 faults.py missing RANK   # RANK never makes its groups
    python3 faults.py init            # just hcg.torch.init()

Prints "error NAME: message" for an hcg error, "no error" otherwise; a
traceback from anywhere else fails the test.
"""

import sys
import time

import hcg
import hcg.torch as ht


def main() -> int:
    what = sys.argv[1]
    try:
        task = ht.init(backend="gloo", timeout=60)
        if what == "missing":
            if task.rank == int(sys.argv[2]):
                time.sleep(15)
                print("skipped")
                return 0
            ht.new_collection(timeout=5)
        print("no error")
    except hcg.HcgError as exc:
        print("error %s: %s" % (exc.name, exc.message))
    return 0


if __name__ == "__main__":
    sys.exit(main())
