# shellcheck shell=bash
# timing.bash - how long the tasks of a step took, counted from the last
# task's start: on a loaded node (three tiers side by side on 2 cores) srun
# starts tasks seconds apart, and a step that needs all of them can end
# only once the last one is there. Loaded by helpers.bash and runtime.bash.

# STAMP DIR COMMAND...: the task wrapper that writes those starts and ends.
# shellcheck disable=SC2034 # used by the .bats files
STAMP=$BATS_TEST_DIRNAME/stamp.sh

# ended_soon FILES... LIMIT: every task of FILES ended ("ended EPOCH")
# less than LIMIT seconds after the last of them started ("started
# EPOCH"); prints that figure to the test's output (fd 3).
ended_soon() {
  local limit=${*: -1} took
  took=$(cat "${@:1:$#-1}" | awk '
    $1 == "started" && $2 > last { last = $2 }
    $1 == "ended" && $2 > end { end = $2 }
    END { if (end == "" || last == "") exit 1; printf "%.1f", end - last }') || {
    echo "ended_soon: no task noted both its start and its end" >&2
    return 1
  }
  echo "the tasks ended ${took}s after the last one started (limit ${limit}s)" >&3
  awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t < l) }'
}

# step_ended_soon FILES... LIMIT: the step (srun, which has just returned)
# ended less than LIMIT seconds after the last task of FILES started, for
# steps whose tasks Slurm may kill before they note their end.
step_ended_soon() {
  local limit=${*: -1} now took
  now=$(date +%s.%N)
  took=$(cat "${@:1:$#-1}" | awk -v now="$now" '
    $1 == "started" && $2 > last { last = $2 }
    END { if (last == "") exit 1; printf "%.1f", now - last }') || {
    echo "step_ended_soon: no task noted its start" >&2
    return 1
  }
  echo "the step ended ${took}s after the last task started (limit ${limit}s)" >&3
  awk -v t="$took" -v l="$limit" 'BEGIN { exit !(t < l) }'
}
