# shellcheck shell=bash
# timing.bash - how long the tasks of a step took, counted from the last
# task's start: on a loaded node (three tiers side by side on 2 cores) srun
# starts tasks seconds apart, and a step that needs all of them can end
# only once the last one is there. Loaded by helpers.bash and runtime.bash.

# STAMP DIR COMMAND...: the task wrapper that writes those starts and ends.
# shellcheck disable=SC2034 # used by the .bats files
STAMP=$BATS_TEST_DIRNAME/stamp.sh

# _ended_within WHAT LIMIT: reads "started EPOCH" and "ended EPOCH" lines;
# the last end less than LIMIT seconds after the last start, the figure
# printed to the test's output (fd 3) as "WHAT ended ...".
_ended_within() {
  local took
  took=$(awk '
    $1 == "started" && $2 > last { last = $2 }
    $1 == "ended" && $2 > end { end = $2 }
    END { if (end == "" || last == "") exit 1; printf "%.1f", end - last }') || {
    echo "$1: no task noted its start (or none its end)" >&2
    return 1
  }
  echo "$1 ended ${took}s after the last task started (limit ${2}s)" >&3
  awk -v t="$took" -v l="$2" 'BEGIN { exit !(t < l) }'
}

# ended_soon FILES... LIMIT: every task of FILES ended ("ended EPOCH")
# less than LIMIT seconds after the last of them started ("started
# EPOCH").
ended_soon() {
  cat "${@:1:$#-1}" | _ended_within "the tasks" "${*: -1}"
}

# step_ended_soon FILES... LIMIT: the step (srun, which has just returned)
# ended less than LIMIT seconds after the last task of FILES started, for
# steps whose tasks Slurm may kill before they note their end.
step_ended_soon() {
  { cat "${@:1:$#-1}"; echo "ended $(date +%s.%N)"; } |
    _ended_within "the step" "${*: -1}"
}
