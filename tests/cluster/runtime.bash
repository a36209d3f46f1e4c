# shellcheck shell=bash
#
# runtime.bash - shared by the libhcg tests on the private Slurm cluster
# (exchange, failures, nccl and agreement.bats). tests/cluster/run.sh
# starts the cluster and exports
# SLURM_CONF, HCG (the hcg command), HCG_BUILD, HCG_SRCDIR and CLUSTER_DIR.
#
# The tasks run hcg-hello (runtime/examples/hcg-hello.c), which prints, per
# task, one line per group it belongs to:
#   group RANK KEY members=A,B,... index=I leader=L id=DIGEST
# and "fences RANK F exchanges E" at the end.

# need_pmix
# shellcheck source=tests/cluster/cluster.sh
source "$BATS_TEST_DIRNAME/cluster.sh"
# STAMP, ended_soon
# shellcheck source=tests/cluster/timing.bash
source "$BATS_TEST_DIRNAME/timing.bash"

runtime_setup() {
  [ -n "${SLURM_CONF:-}" ] && [ -n "${HCG_BUILD:-}" ] || {
    echo "run through tests/cluster/run.sh BUILD_DIR (no cluster here)" >&2
    return 1
  }
  HELLO=$HCG_BUILD/runtime/hcg-hello
  HCG=${HCG:-$HCG_BUILD/runtime/hcg}
  [ -x "$HELLO" ] || {
    echo "build first: $HELLO is missing" >&2
    return 1
  }
  OUT=$BATS_TEST_TMPDIR/out
  mkdir -p "$OUT"
  # Task output lands in files that other users' tasks could write too.
  chmod 777 "$BATS_TEST_TMPDIR" "$OUT"
}

# hello N LAYOUT [HELLO-ARGS...]: runs hcg-hello on N tasks under PMIx with
# the layout, each task's stdout and stderr in $OUT/out.R and $OUT/err.R;
# srun's status in $status, its own output in $output. Never hangs: the
# whole step is bounded by `timeout`.
hello() {
  local n=$1 layout=$2
  shift 2
  hello_cmd "$n" "$layout" "$HELLO" "$@"
}

# hello_cmd N LAYOUT [SRUN-OPTIONS...] COMMAND...: the same with any
# command as the task (srun options, if any, start with "--").
hello_cmd() {
  local n=$1 layout=$2
  shift 2
  need_pmix
  rm -f "$OUT"/out.* "$OUT"/err.* "$OUT"/stamp.*
  run timeout -k 5 120 srun -n "$n" --overcommit --mpi=pmix \
    --hcg-layout="$layout" --output="$OUT/out.%t" --error="$OUT/err.%t" \
    "$@"
}

# All tasks' stdout, or stderr.
task_out() { cat "$OUT"/out.* 2>/dev/null; }
task_err() { cat "$OUT"/err.* 2>/dev/null; }

show() {
  echo "--- srun (status $status):"
  echo "$output"
  echo "--- task stderr:"
  task_err | head -n 40
  echo "--- task stdout (head):"
  task_out | head -n 40
}

# check_groups N LAYOUT: the group lines of all N tasks are consistent:
#  - every member of a group printed it, with the same id digest, its own
#    index in the members, and the first member as leader;
#  - different groups (key + members) got different ids;
#  - for every key GRID[/VIEW]:DIMS, the member lists printed are exactly
#    the groups `hcg enum` gives for that spec;
# and every task printed a fence count. Prints what is wrong.
check_groups() {
  local n=$1 layout=$2 lists key spec want got
  task_out >"$BATS_TEST_TMPDIR/all"
  [ "$(grep -c '^fences ' "$BATS_TEST_TMPDIR/all")" -eq "$n" ] || {
    echo "not every task finished: $(grep -c '^fences ' "$BATS_TEST_TMPDIR/all") of $n"
    return 1
  }
  grep '^group ' "$BATS_TEST_TMPDIR/all" | awk '
    {
      rank = $2; key = $3
      split($4, mv, "="); members = mv[2]
      split($5, iv, "="); index_ = iv[2]
      split($6, lv, "="); leader = lv[2]
      split($7, dv, "="); id = dv[2]
      nm = split(members, m, ",")
      if (m[index_ + 1] != rank) { print "rank " rank " " key ": index " index_ " is not its place in " members; bad = 1 }
      if (m[1] != leader) { print "rank " rank " " key ": leader " leader " is not the first of " members; bad = 1 }
      gid = key " " members
      if (gid in digest && digest[gid] != id) { print "group " gid ": ids differ: " digest[gid] " and " id " (rank " rank ")"; bad = 1 }
      digest[gid] = id
      size[gid] = nm
      seen[gid] = seen[gid] + 1
      if ((gid SUBSEP rank) in printed) { print "rank " rank " printed " gid " twice"; bad = 1 }
      printed[gid, rank] = 1
    }
    END {
      for (g in digest) {
        split(g, parts, " "); nm = split(parts[2], m, ",")
        for (i = 1; i <= nm; i++)
          if (!((g SUBSEP m[i]) in printed)) { print "member " m[i] " of " g " did not print it"; bad = 1 }
        if (seen[g] != size[g]) { print g ": printed by " seen[g] " of " size[g] " members"; bad = 1 }
        if (digest[g] in owner) { print "groups " owner[digest[g]] " and " g " got the same id"; bad = 1 }
        owner[digest[g]] = g
      }
      if (length(digest) == 0) { print "no group lines at all"; bad = 1 }
      exit bad
    }' || return 1

  # Member lists per key, against the enumeration of the same spec.
  for key in $(grep '^group ' "$BATS_TEST_TMPDIR/all" | awk '{print $3}' | sort -u); do
    case $key in *'#'*) continue ;; esac
    spec=$(printf '%s' "$key" | sed 's/:\(.*\)/:\1/; s/-/,/g')
    want=$("$HCG" enum -n "$n" "$layout" "$spec" | jq -c '.[]' | sort) || {
      echo "hcg enum -n $n '$layout' $spec failed"
      return 1
    }
    got=$(grep "^group [0-9]* $key " "$BATS_TEST_TMPDIR/all" |
      awk '{split($4, mv, "="); print "[" mv[2] "]"}' | sort -u)
    if [ "$want" != "$got" ]; then
      echo "key $key: the tasks formed"
      echo "$got" | head -n 8
      echo "but hcg enum $spec gives"
      echo "$want" | head -n 8
      return 1
    fi
  done
}

# The fence counts all tasks printed, one per line, deduplicated.
fence_counts() {
  task_out | awk '/^fences /{print $3}' | sort -u
}

# The number of group lines rank R printed.
groups_of_rank() {
  task_out | awk -v r="$1" '$1 == "group" && $2 == r' | wc -l
}

# valgrind_wrapper PATH: writes a task wrapper running hcg-hello under
# valgrind (log in $OUT/vg.RANK.log, exit 9 on an error); a task whose
# HCG_RANK equals $EXIT_RANK exits at once instead.
valgrind_wrapper() {
  {
    echo '#!/bin/bash'
    echo '[ "$HCG_RANK" = "${EXIT_RANK:-}" ] && exit 0'
    echo "exec $HCG_BUILD/libtool --mode=execute valgrind -q --leak-check=full \\"
    echo "  --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \\"
    echo "  --error-exitcode=9 \\"
    echo "  --suppressions=$HCG_SRCDIR/tests/cluster/valgrind.supp \\"
    echo "  --log-file=$OUT/vg.\$HCG_RANK.log $HELLO \"\$@\""
  } >"$1"
  chmod 755 "$1"
}
