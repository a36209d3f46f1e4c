#!/bin/bash
# Sets up everything and runs the whole hcg test suite, as root, on every
# supported stack (what CI runs): the tiers debian12, debian13 and sid
# (README.md, "Supported platforms", says what each has; scripts/tier.sh).
# The tier this machine is runs here, the others each in a Debian root made
# with debootstrap (kept under /var/cache/hcg/roots, made again only when
# missing or broken), in the background at the same time. HCG_PLATFORMS picks tiers (default all three, which
# is what CI runs), e.g. HCG_PLATFORMS=sid for a quick look at one stack.
#
# Every tier: its packages (scripts/deps.sh), the build with -Werror and its
# compiler, unit and hcg command tests (make check), valgrind, the Python
# binding with its torch, and the integration tests on a private Slurm
# cluster of its Slurm (plugin, libhcg, hcg.torch; two-node and
# heterogeneous steps included).
# The machine's own tier also: make check under AddressSanitizer + UBSan,
# libhcg opening PMIx at run time (--with-pmix=dlopen: test_pmix_dl),
# deps.sh beside a held dpkg lock, libhcg's NCCL code against older nccl.h,
# the ABI check, clang-format, no circle among the C files
# (scripts/deps-graph.sh), make distcheck and the fuzzers (HCG_FUZZ_SECONDS,
# default 60, split among four targets): these test the sources, not the
# stack, and CI's time (45 minutes for every tier on 2 cores) pays for them
# once.
#
# A tier that fails does not stop the others: the summary gives each
# step's time and its tests and skips, each skip's reason, and the disk
# left; the exit status is 1 when any step failed. Every step is bounded
# (HCG_STEP_LIMIT, default 1800 s), and so is each tier in a root
# (HCG_TIER_LIMIT, default 3000 s: the tiers share the machine, and a fresh
# run's Debian 13 tier, its root made first, took 2400 s and more).
# Safe to run twice; builds go to build/, build-asan/, build-dl/ in the
# source tree (in a root: in the root's copy of it). Nothing it caches need
# exist: no /var/cache/hcg, no roots, no builds (a step proves it, below).
# HCG_SUITE=start runs only the set-up: packages, roots and theirs.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
jobs=$(nproc 2>/dev/null || echo 2)
started=$(date +%s)
tiers_all="debian12 debian13 sid"
platforms=${HCG_PLATFORMS:-$tiers_all}
# Set by scripts/tier.sh: this run is one tier, inside its root.
inner=${HCG_TIER:-}
# HCG_SUITE=start: only the start of every tier, what depends on what the
# machine has (its packages, its root and the root's packages), as a new
# machine's first minutes run it; tests/setup/fresh-start.sh.
suite=${HCG_SUITE:-all}
case $suite in all | start) ;; *)
  echo "test-all: HCG_SUITE is 'all' or 'start', got '$suite'" >&2
  exit 2
  ;;
esac
declare -a summary=()
failed=0
prefix= # "TIER: " before the steps' names in the summary, for the host's tier
logs=$src/build/test-all-logs
mkdir -p "$logs"

step_limit=${HCG_STEP_LIMIT:-1800}
tier_limit=${HCG_TIER_LIMIT:-3000}
for v in "$step_limit" "$tier_limit"; do
  case $v in '' | *[!0-9]*)
    echo "test-all: HCG_STEP_LIMIT and HCG_TIER_LIMIT are seconds, got '$v'" >&2
    exit 2
    ;;
  esac
done

# Check's bound on one test case, in every Check program the suite runs
# (make check in each tier and under ASan, make distcheck, test_pmix_dl):
# Check stops a case that runs past it, 4 s unless the case sets its own.
# A busy machine (the tiers, their builds and other work beside the suite,
# load 8 to 34 on 2 cores) once kept a case of a few microseconds waiting
# for a CPU past those 4 s under ASan. The cases that take no bound of
# their own get 60 s instead; the long ones keep theirs (tcase_set_timeout:
# 60 s to 600 s). Under ASan every bound doubles (asan_suite); the longest,
# 1200 s, stays inside the step's 1800 (HCG_STEP_LIMIT's default), so that
# Check, not the step's watchdog, names a case that hangs.
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}

kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    kill_tree "$child"
  done
  kill -TERM "$1" 2>/dev/null || true
}

# bounded SECONDS CMD...: a command that hangs fails with its name, not
# in CI's own limit (90 min); it and everything it started are stopped.
bounded() {
  local limit=$1
  shift
  "$@" &
  local pid=$! rc=0
  # `&&`: when the command ends first, kill_tree stops this sleep, and
  # the watchdog must then say and stop nothing (it once wrote its line
  # into a finished tier's log, which root_tier_done went on to read).
  # Its own stderr goes nowhere: killed mid-sleep, this subshell would
  # print "Terminated" into the step's log. Its one line goes to fd 3.
  (
    exec 3>&2 2>/dev/null
    sleep "$limit" &&
      echo "test-all: still running after ${limit}s: stopping it" >&3 &&
      kill_tree "$pid"
  ) &
  local dog=$!
  # The command runs with SIGINT ignored (a background job's lot): an
  # interrupted run stops it here rather than leave it running on.
  trap 'kill_tree "$pid"; kill_tree "$dog"; exit 130' INT TERM HUP
  wait "$pid" || rc=$?
  trap - INT TERM HUP
  kill_tree "$dog"
  wait "$dog" 2>/dev/null || true
  # The CPU the command and everything it started used (this shell's
  # reaped children; `times` only by redirection: a subshell starts at 0).
  if [ -n "${cpu_file:-}" ]; then times >"$cpu_file"; fi
  return "$rc"
}

# cpu_seconds FILE: the children's user + system seconds that `times`
# wrote to FILE (its second line, "1m2.500s 0m0.250s"), rounded.
cpu_seconds() {
  awk 'NR == 2 {
    t = 0
    for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] }
    printf "%d", t + 0.5
  }' "$1" 2>/dev/null
}

# What a step's log says it ran: "N tests, K skipped" from check_in's
# count, else bats (TAP) and Python's unittest, added up; nothing when the
# step runs no tests.
counts() {
  awk '
    /^@count [0-9]+ [0-9]+$/ { ctotal += $2; cskipped += $3; cseen = 1; next }
    /^ok [0-9]+ / { total++; seen = 1; if (/ # skip/) skipped++ }
    /^not ok [0-9]+ / { total++; seen = 1 }
    /^Ran [0-9]+ tests? in / { total += $2; seen = 1 }
    /^OK \(.*skipped=[0-9]+/ || /^FAILED \(.*skipped=[0-9]+/ {
      s = $0; sub(/.*skipped=/, "", s); sub(/[^0-9].*/, "", s); skipped += s
    }
    END {
      if (cseen) printf "%d tests, %d skipped", ctotal, cskipped
      else if (seen) printf "%d tests, %d skipped", total, skipped
    }
  ' "$1"
}

# The reasons of the skips in a step's log, one per line: bats's
# "# skip REASON", unittest's "skipped 'REASON'" and a whole step's
# "SKIP: REASON" (tests/gpu/check.sh without a GPU); a line gives one
# reason at most (t: on to the next line once one matched).
skip_reasons() {
  sed -n -e 's/^ok [0-9]* .* # skip *//p' -e t \
    -e "s/.* \.\.\. skipped '\(.*\)'\$/\1/p" -e t -e 's/^SKIP: //p' "$1"
}

# step NAME CMD...: runs CMD bounded, its output shown and kept in a log.
step() {
  local name=$1
  shift
  local t0 n=${#summary[@]} log rc=0 c cpu line
  t0=$(date +%s)
  log=$logs/$(printf '%02d' "$n")-$(tr -c 'a-zA-Z0-9\n' '-' <<<"$name" | head -c 40).log
  printf '\n==== %s%s\n' "${inner:+$inner: }" "$name"
  # A pipe, not a process substitution: the tiers in the background are
  # this shell's children too, and `wait` would wait for them.
  set +e
  cpu_file=$log.cpu bounded "$step_limit" "$@" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  c=$(counts "$log")
  cpu=$(cpu_seconds "$log.cpu")
  rm -f "$log.cpu"
  # What a step costs on a shared machine is its CPU as much as its time.
  # Only what the step itself waited for counts: the tasks Slurm's daemons
  # start and the ranks a test's forkserver starts are not in it, so for
  # the cluster and Python steps it is a lower bound.
  c="${cpu:+cpu ${cpu}s}${c:+${cpu:+, }$c}"
  skip_reasons "$log" | sed "s/^/$prefix/" >>"$logs/skips"
  if [ "$rc" -eq 0 ]; then
    summary+=("PASS  $(($(date +%s) - t0))s  $prefix$name${c:+ ($c)}")
  else
    summary+=("FAIL  $(($(date +%s) - t0))s  $prefix$name${c:+ ($c)} (log: $log)")
    # Which tests failed, where the summary is read: a failed cluster
    # step's log ends in the daemons' logs, far below its "not ok" lines,
    # and CI keeps only the end of the output.
    while IFS= read -r line; do
      summary+=("      ! $line")
    done < <(failed_tests "$log")
    echo "test-all: '$name' failed (log: $log)" >&2
    failed=1
    return 1
  fi
}

# failed_tests LOG: the first failed tests a step's log names, a line each:
# bats's "not ok", unittest's "FAIL:"/"ERROR:", Check's "file:line:F:".
failed_tests() {
  grep -aE '^not ok [0-9]+ |^(FAIL|ERROR): |^[^ :]+:[0-9]+:[EF]:' "$1" | head -n 10 | cut -c 1-200 || true
}

print_summary() {
  printf '\n==== summary%s (%ss)\n' "${inner:+ of $inner}" "$(($(date +%s) - started))"
  printf '%s\n' "${summary[@]}"
  if [ -s "$logs/skips" ]; then
    echo "skipped, by reason:"
    sort "$logs/skips" | uniq -c | sort -rn | sed 's/^ */  /'
  fi
  [ -n "$inner" ] || disk_left
}

# The space left where the roots and the builds live: a full disk fails
# steps in ways that do not say so. Only a report: it never fails the run.
# The roots' directory need not exist yet (a new machine, HCG_ROOTS
# anywhere new): df then looks at the nearest directory above it that does,
# the file system the roots will be made on.
disk_left() {
  local d
  for d in "$src" "$(scripts/tier.sh roots 2>/dev/null || echo /var/cache)"; do
    while [ ! -d "$d" ] && [ "$d" != / ]; do d=$(dirname "$d"); done
    df -Ph "$d" 2>/dev/null | awk -v d="$d" 'NR == 2 { printf "disk: %s free of %s at %s\n", $4, $2, d }'
  done | sort -u || true
}

# make check, then what its programs ran: Check's test cases and bats's
# tests (with their skip lines) from the test logs, as "@count N K".
check_in() {
  make -C "$1" -j"$jobs" check || {
    find "$1/tests" -name '*.log' -newer "$1/Makefile" -exec tail -n 40 {} + >&2
    return 1
  }
  local logs
  logs=$(find "$1/tests" -name '*.log' ! -name test-suite.log)
  # shellcheck disable=SC2086 # file names without blanks
  grep -h '^ok [0-9]* .* # skip' $logs || true
  # shellcheck disable=SC2086
  cat $logs | awk '
    /[0-9]+%: Checks: [0-9]+/ { s = $0; sub(/.*Checks: /, "", s); sub(/[^0-9].*/, "", s); n += s }
    /^ok [0-9]+ / { n++; if (/ # skip/) k++ }
    /^not ok [0-9]+ / { n++ }
    END { printf "@count %d %d\n", n, k }'
}

# The unit tests again, instrumented. The property tests take 300 random
# layouts here instead of 3000 (test_core under ASan, idle machine: 3.8 s
# with 300, ten times that with 3000): the plain run takes the 3000, and
# what ASan looks for, a bad access or a leak, is on the paths that 300
# already take.
asan_suite() {
  # Instrumented code runs slower: Check's bounds (above) doubled.
  CK_TIMEOUT_MULTIPLIER=2 HCG_PROP_ITERS=300 check_in build-asan
}

valgrind_suite() {
  # shellcheck disable=SC2054 # the commas belong to one flag
  local vg=(valgrind -q --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect,possible --track-fds=no)
  # Check forks per test by default; in one process valgrind sees it all.
  # Check bounds no case there (its timeouts need the fork), so however
  # slow valgrind and the machine are, the step's bound is the only one.
  CK_FORK=no HCG_PROP_ITERS=100 "${vg[@]}" build/tests/core/test_core
  local hcg=build/runtime/hcg
  local l='vision:tp=2,pp=2,dp=2; llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'
  "${vg[@]}" "$hcg" check -n 24 "$l" > /dev/null
  "${vg[@]}" "$hcg" enum -n 24 "$l" llm/expert:ep,pp > /dev/null
  "${vg[@]}" "$hcg" explain -n 24 "$l" --format json > /dev/null
  "${vg[@]}" "$hcg" explain -n 8 'vision@0:tp=2,dp=4; llm@0:tp=4,dp=2' > /dev/null
  "${vg[@]}" "$hcg" explain -n 24 "$l" --rank 13 > /dev/null
  # error paths: exit 2 expected, no valgrind error (99)
  local rc=0
  "${vg[@]}" "$hcg" check -n 8 'llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4' 2> /dev/null || rc=$?
  [ "$rc" -eq 2 ]
  rc=0
  "${vg[@]}" "$hcg" check -n 8 @/nonexistent 2> /dev/null || rc=$?
  [ "$rc" -eq 1 ]
  # libhcg's own unit tests, when built
  if [ -x build/tests/runtime/test_runtime ]; then
    CK_FORK=no "${vg[@]}" build/tests/runtime/test_runtime
  fi
}

# libhcg built with --with-pmix=dlopen, and the test only that build has:
# that library and that program only (the whole tree and every check
# program again cost CI some 80 CPU seconds for nothing).
pmix_dlopen_suite() {
  local log=build-dl/tests/runtime/test_pmix_dl.log
  HCG_BUILD_SUBDIR=runtime scripts/build.sh build-dl --with-pmix=dlopen &&
    make -C build-dl/tests -j"$jobs" runtime/test_pmix_dl || return 1
  build-dl/tests/runtime/test_pmix_dl >"$log" 2>&1 || {
    tail -n 40 "$log" >&2
    return 1
  }
  cat "$log"
  grep -h '^[0-9]*%: Checks:' "$log" | awk '{ n += $3 } END { printf "@count %d 0\n", n }'
}

# The suite every tier runs, on its own stack: stack_suite TIER.
# Stops at its first failed step (the next ones need it); returns 1 then.
stack_suite() {
  step "README's platform row is this stack" tests/setup/platform-row.sh "$1" || return 1
  [ "$suite" = all ] || return 0
  step "build (-Werror, $(gcc -dumpfullversion 2>/dev/null || echo cc))" scripts/build.sh build &&
    step "unit and hcg command tests" check_in build &&
    step "tests under valgrind" valgrind_suite &&
    step "Python binding and hcg.torch (contrib/python)" contrib/python/run-tests.sh "$src/build" &&
    step "mypy --strict (hcg, hcg.torch)" contrib/python/typecheck.sh &&
    step "hcg.torch's NCCL groups on a GPU (tests/gpu)" tests/gpu/check.sh "$src/build" &&
    step "integration tests on a private Slurm cluster" tests/cluster/run.sh "$src/build"
}

# The steps that test the sources rather than the stack: once, here. Each
# runs whatever the one before it gave.
source_suite() {
  local rc=0
  # First: a later step's failure must not hide that a new machine would
  # not get this far.
  step "a fresh start: test-all's set-up with no cache, no roots, no builds" \
    tests/setup/fresh-start.sh || rc=1
  step "tier.sh: the Debian mirror from apt's sources, a root cache not made yet" \
    bats tests/setup/tier.bats || rc=1
  step "build with AddressSanitizer + UBSan" scripts/build.sh build-asan \
    CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
    LDFLAGS="-fsanitize=address,undefined" &&
    step "tests under AddressSanitizer + UBSan" asan_suite || rc=1
  # test_pmix_dl is built only where libhcg opens PMIx at run time (the
  # wheel's way), which the tiers' builds do not.
  step "libhcg opening PMIx at run time (--with-pmix=dlopen): test_pmix_dl" \
    pmix_dlopen_suite || rc=1
  step "deps.sh beside a held dpkg lock" tests/setup/deps-lock.sh || rc=1
  step "NCCL guards: compile against older nccl.h (2.17 refused, 2.18, 2.26, 2.27)" \
    tests/runtime/nccl-compat.sh build || rc=1
  step "ABI check: libhcg against abi/libhcg.abi (abidiff)" scripts/abi-check.sh build || rc=1
  step "C sources follow .clang-format (clang-format --dry-run)" scripts/check-format.sh || rc=1
  # The tree's check first; the small trees after it prove the check sees
  # the circles it is there for (a second or two, under the step's bound).
  step "no circle among the C files (scripts/deps-graph.sh)" \
    bats tests/setup/deps-graph.bats || rc=1
  # The tarball builds, passes its tests (300 random layouts in the
  # property tests, as under ASan), installs and cleans up.
  step "make distcheck" env HCG_PROP_ITERS=300 make -C build -j"$jobs" distcheck || rc=1
  step "fuzz the layout parser, plugstack arguments, hand-over, domains, Megatron's arguments, plans (${HCG_FUZZ_SECONDS:-60} s)" \
    env HCG_FUZZ_DIR="$src/build/fuzz" tests/fuzz/run-fuzz.sh "${HCG_FUZZ_SECONDS:-60}" || rc=1
  return "$rc"
}

# The tiers in roots run in the background, all at once and beside this
# machine's own: most of a tier's time is spent waiting (srun, timeouts,
# daemons), and CI has 45 minutes for all of them. Each one's output goes
# to its log only; what it did joins the summary when it is done.
declare -a tier_pids=()

# An interrupted run (^C, a CI limit) stops its tiers too: the shell starts
# them with SIGINT ignored, as it does every background job, and one left
# running would hold its root's copy, and the next run would be refused it.
stop_tiers() {
  local p
  for p in "${tier_pids[@]}"; do
    kill_tree "$p"
  done
}
trap stop_tiers EXIT
trap 'echo "test-all: interrupted" >&2; exit 130' INT TERM HUP

# root_tier_start TIER: the root (made when missing) and its packages, on
# the host's network, then the tier's own test-all.sh there, on a network
# of its own; its times and exit statuses in tier-TIER.status.
root_tier_start() {
  local t=$1
  (
    set +e
    t0=$(date +%s)
    bounded "$step_limit" scripts/tier.sh root "$t"
    root_rc=$?
    [ "$root_rc" -ne 0 ] || bounded "$step_limit" scripts/tier.sh deps "$t" || root_rc=$?
    t1=$(date +%s)
    run_rc=1
    if [ "$root_rc" -eq 0 ]; then
      bounded "$tier_limit" scripts/tier.sh run "$t"
      run_rc=$?
    fi
    echo "$root_rc $((t1 - t0)) $run_rc $(($(date +%s) - t1))" >"$logs/tier-$t.status"
  ) >"$logs/tier-$t.log" 2>&1 &
  tier_pids+=("$!")
}

# root_tier_done TIER: its lines in the summary (the inner summary's, each
# step named with the tier), its skips, and on failure the end of its log.
root_tier_done() {
  local t=$1
  local log=$logs/tier-$t.log line root_rc=1 root_s=0 run_rc=1 run_s=0
  read -r root_rc root_s run_rc run_s <"$logs/tier-$t.status" 2>/dev/null || true
  local what
  what="$t: the root ($(scripts/tier.sh list | awk -v t="$t" '$1 == t { print $2 }'), debootstrap when missing) and its packages"
  if [ "$root_rc" -ne 0 ]; then
    summary+=("FAIL  ${root_s}s  $what (log: $log)")
  else
    summary+=("PASS  ${root_s}s  $what")
    while IFS= read -r line; do
      summary+=("$line")
    done < <(sed -n '/^==== summary of /,$p' "$log" |
      sed -nE -e "s/^(PASS|FAIL)  ([0-9]+s)  /\1  \2  $t: /p" -e '/^      ! /p')
    sed -n '/^skipped, by reason:/,$p' "$log" | sed 1d |
      awk -v t="$t" '$1 ~ /^[0-9]+$/ { n = $1 + 0; $1 = ""; sub(/^ /, ""); for (i = 0; i < n; i++) print t ": " $0 }' \
        >>"$logs/skips"
    if [ "$run_rc" -eq 0 ]; then
      summary+=("PASS  ${run_s}s  $t: the whole tier")
      return 0
    fi
    summary+=("FAIL  ${run_s}s  $t: the whole tier (log: $log)")
  fi
  printf '\n==== %s failed: the end of %s\n' "$t" "$log"
  tail -n 80 "$log"
  failed=1
  return 1
}

: >"$logs/skips"
if [ -n "$inner" ]; then
  # Inside a root (scripts/tier.sh run): this tier's stack suite only.
  # `if`, not `&&`: under set -e a failed stack_suite would end the run
  # here, and the summary the host reads this tier's steps from with it.
  if step "dependencies (scripts/deps.sh)" scripts/deps.sh; then stack_suite "$inner" || true; fi
  print_summary
  exit "$failed"
fi

for t in $platforms; do
  case " $tiers_all " in
  *" $t "*) ;;
  *)
    echo "test-all: HCG_PLATFORMS names '$t'; the tiers are: $tiers_all" >&2
    exit 2
    ;;
  esac
done
host=$(scripts/tier.sh list | awk '/\(this host\)/ { print $1 }')

disk_left
if step "dependencies (scripts/deps.sh)" scripts/deps.sh; then
  roots=
  for t in $platforms; do
    [ "$t" = "$host" ] && continue
    root_tier_start "$t"
    roots="$roots $t"
  done
  [ -z "$roots" ] ||
    printf '\n==== in their roots, in the background:%s (logs: %s/tier-TIER.log)\n' "$roots" "$logs"
  if [[ " $platforms " == *" $host "* ]]; then
    printf '\n==== %s: this machine\n' "$host"
    prefix="$host: "
    if stack_suite "$host" && [ "$suite" = all ]; then source_suite || true; fi
    prefix=
  fi
  [ -z "$roots" ] || printf '\n==== waiting for the tiers in roots:%s\n' "$roots"
  wait "${tier_pids[@]}" 2>/dev/null || true
  for t in $roots; do
    root_tier_done "$t" || true
  done
  # hcg in a container: this host's Slurm (its tier's build) starts tasks
  # in the Debian 13 root, which its tier has just made and given its
  # packages (skips, saying why, where HCG_PLATFORMS leaves it out or this
  # host is Debian 13).
  if [[ " $platforms " == *" $host "* ]] && [ "$suite" = all ] && [ -x "$src/build/runtime/hcg" ]; then
    step "container: this host's Slurm, tasks in the debian13 root, hcg from its wheel" \
      tests/cluster/run.sh "$src/build" tests/cluster/container.bats || true
  fi
fi
print_summary
if [ "$failed" -ne 0 ]; then
  echo "test-all: FAILED: $(printf '%s\n' "${summary[@]}" | grep -c '^FAIL') step(s), listed above" >&2
fi
exit "$failed"
