#!/bin/bash
# stamp.sh DIR COMMAND...: runs COMMAND as a task of a step and notes, in
# DIR/stamp.RANK, when it started and when it ended ("started EPOCH",
# "ended EPOCH"), for ended_soon (timing.bash). A task killed by Slurm
# notes no end.
dir=$1
shift
f=$dir/stamp.${SLURM_PROCID:?stamp.sh runs as a task of srun}
echo "started $(date +%s.%N)" > "$f"
"$@"
rc=$?
echo "ended $(date +%s.%N)" >> "$f"
exit $rc
