#!/usr/bin/env python3
"""agreement_counts.py HCG [F] - the gets one rank makes per phase of
hcg_comm_create's agreement (runtime/lib/agree.c), at 1k, 16k and 100k
ranks, for the two layouts of doc/scaling.md, counted from what
`hcg explain --rank R --format json` lists (members, or ranges for big
groups). Prints, per layout, N and rank (0, which heads every sliced group
it is in, and N/2 + 3): statuses read (its groups of at most F members and
the slices it heads, each rank once), slice verdicts read as a head, group
verdicts read from its heads, the total, and what reading every member's
status directly would cost (N - 1 with the whole-grid group).
"""

import json
import math
import subprocess
import sys

LAYOUTS = {
    "grid": "llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8; "
            "llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp",
    "MIMO": "audio@0:tp=4,dp=*; vision@0:tp=8,dp=*; llm@0:tp=8,cp=2,dp=*,pp=4; "
            "llm/expert:expt_tp=2,ep=8,expt_dp=*,pp",
}


def members(group):
    if "members" in group:
        return group["members"]
    r = group["ranges"]
    out = [r["first"]]
    for t in r["terms"]:
        out = [x + k * t["stride"] for x in out for k in range(t["count"])]
    return out


def groups_of(hcg, layout, n, rank):
    doc = json.loads(subprocess.check_output(
        [hcg, "explain", "-n", str(n), layout, "--rank", str(rank),
         "--format", "json"]))
    found = {}

    def walk(o):
        if isinstance(o, dict):
            if "key" in o and "size" in o:
                found[o["key"]] = (o["size"], members(o), o.get("index", 0))
            else:
                for v in o.values():
                    walk(v)
    walk(doc.get("groups", {}))
    walk(doc.get("embedding", {}))
    return found


def count(hcg, layout, n, rank, f):
    statuses, direct = set(), set()
    head_gets = member_gets = 0
    for key, (size, mem, index) in groups_of(hcg, layout, n, rank).items():
        if size < 2:
            continue
        direct.update(mem)
        if n > f and size > f and "#" not in key:  # sliced
            if index % f == 0:
                statuses.update(mem[index:min(index + f, size)])
                head_gets += math.ceil(size / f) - 1
            else:
                member_gets += 1
        else:
            statuses.update(mem)
    statuses.discard(rank)
    direct.discard(rank)
    return len(statuses), head_gets, member_gets, len(direct)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    hcg, f = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 512
    print("layout N rank statuses slice_verdicts group_verdicts total direct")
    for name, layout in LAYOUTS.items():
        for n in (1024, 16384, 102400):
            for rank in (0, n // 2 + 3):
                s, h, m, d = count(hcg, layout, n, rank, f)
                print(name, n, rank, s, h, m, s + h + m, d)


if __name__ == "__main__":
    main()
