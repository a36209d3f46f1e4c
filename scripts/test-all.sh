#!/bin/bash
# Sets up everything and runs the whole hcg test suite on Debian 12, as root:
#   1. Debian packages (scripts/deps.sh), and deps.sh beside a held dpkg lock
#   2. build, unit tests (Check) and hcg command tests (bats): make check;
#      libhcg's NCCL code compiled against older nccl.h stand-ins; libhcg's
#      ABI held to abi/libhcg.abi (scripts/abi-check.sh)
#   3. the same tests built with AddressSanitizer + UBSan
#   4. the unit tests and the hcg command under valgrind
#   5. the Python binding's tests (contrib/python), make distcheck
#   6. the fuzzers (layout, plugstack arguments, hand-over, domains) for HCG_FUZZ_SECONDS (default 60, split)
#   7. the integration tests on a private Slurm cluster (plugin, libhcg)
# Safe to run twice; builds go to build/, build-asan/ in the source tree.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cd "$src"
jobs=$(nproc 2>/dev/null || echo 2)
started=$(date +%s)
declare -a summary=()

# A step that hangs must fail with its name, not run into CI's own limit
# (90 min): each step gets HCG_STEP_LIMIT seconds (default 30 min), then
# it and everything it started are stopped.
step_limit=${HCG_STEP_LIMIT:-1800}

kill_tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do
    kill_tree "$child"
  done
  kill -TERM "$1" 2>/dev/null || true
}

bounded() {
  "$@" &
  local pid=$! rc=0
  (
    sleep "$step_limit"
    echo "test-all: still running after ${step_limit}s (HCG_STEP_LIMIT): stopping it" >&2
    kill_tree "$pid"
  ) &
  local dog=$!
  wait "$pid" || rc=$?
  kill_tree "$dog"
  wait "$dog" 2>/dev/null || true
  return "$rc"
}

step() {
  local name=$1
  shift
  local t0
  t0=$(date +%s)
  printf '\n==== %s\n' "$name"
  if bounded "$@"; then
    summary+=("PASS  $(($(date +%s) - t0))s  $name")
  else
    summary+=("FAIL  $(($(date +%s) - t0))s  $name")
    print_summary
    echo "test-all: '$name' failed" >&2
    exit 1
  fi
}

print_summary() {
  printf '\n==== summary (%ss)\n' "$(($(date +%s) - started))"
  printf '%s\n' "${summary[@]}"
}

check_in() {
  make -C "$1" -j"$jobs" check || {
    find "$1/tests" -name '*.log' -newer "$1/Makefile" -exec tail -n 40 {} + >&2
    return 1
  }
}

valgrind_suite() {
  # shellcheck disable=SC2054 # the commas belong to one flag
  local vg=(valgrind -q --error-exitcode=99 --leak-check=full
    --errors-for-leak-kinds=definite,indirect,possible --track-fds=no)
  # Check forks per test by default; in one process valgrind sees it all.
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

step "dependencies" scripts/deps.sh
step "deps.sh beside a held dpkg lock (5 s)" tests/setup/deps-lock.sh
step "build" scripts/build.sh build
step "unit and hcg command tests" check_in build
step "NCCL guards: compile against older nccl.h (2.17 refused, 2.18, 2.26, 2.27)" \
  tests/runtime/nccl-compat.sh build
step "ABI check: libhcg against abi/libhcg.abi (abidiff)" scripts/abi-check.sh build
step "build with AddressSanitizer + UBSan" scripts/build.sh build-asan \
  CFLAGS="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all" \
  LDFLAGS="-fsanitize=address,undefined"
step "tests under AddressSanitizer + UBSan" check_in build-asan
step "tests under valgrind" valgrind_suite
step "Python binding (contrib/python)" contrib/python/run-tests.sh "$src/build"
step "make distcheck" make -C build -j"$jobs" distcheck
step "fuzz the layout parser, plugstack arguments, hand-over, domains (${HCG_FUZZ_SECONDS:-60} s)" \
  env HCG_FUZZ_DIR="$src/build/fuzz" tests/fuzz/run-fuzz.sh "${HCG_FUZZ_SECONDS:-60}"
step "integration tests on a private Slurm cluster" tests/cluster/run.sh "$src/build"
print_summary
