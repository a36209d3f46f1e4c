"""``python3 -m hcg``: what this task got from srun --hcg-layout.

Meant as the first thing to run in a new job step::

    srun -n 16 --hcg-layout='llm:tp=2,pp=2,dp=*' python3 -m hcg

Prints, per task, its rank, grids, coordinates and the members of each of
its collection groups, or the reason the environment is unusable (exit 1).
"""

from __future__ import annotations

import sys

from .env import from_environ
from .errors import HcgError


def main() -> int:
    try:
        task = from_environ()
    except HcgError as exc:
        print("hcg: %s" % exc, file=sys.stderr)
        return 1
    with task:
        lines = ["rank %d/%d layout %s" % (task.rank, task.world_size,
                                           task.layout.text)]
        for grid in task.grids:
            stage = task.stage(grid)
            lines.append("  %s %s first=%s last=%s" % (
                grid, task.layout.all_coords(task.rank)[grid], stage.first,
                stage.last))
            for field, group in task.collection(grid).items():
                if group is not None:
                    lines.append("    %-26s %-24s %s" % (field, group.key,
                                                         group.members))
        embd = task.embedding_group("embd")
        if embd is not None:
            lines.append("  embd %s pos_embd %s"
                         % (embd, task.embedding_group("pos_embd")))
        # One write per task keeps the lines of different tasks apart.
        sys.stdout.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
