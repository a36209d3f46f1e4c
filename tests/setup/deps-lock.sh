#!/bin/sh
# deps-lock.sh - scripts/deps.sh on a busy machine, installing nothing: while
# another process holds dpkg's lock-frontend, deps.sh with every package
# present does not wait at all, and with one missing it waits, says for
# what, and gives up after HCG_LOCK_WAIT naming the lock. Holds the lock for
# 5 s. As root (deps.sh refuses otherwise); prints SKIP elsewhere.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
lock=/var/lib/dpkg/lock-frontend
if [ "$(id -u)" -ne 0 ] || [ ! -e "$lock" ] || ! command -v flock > /dev/null; then
  echo "SKIP: needs root, $lock and flock(1)"
  exit 0
fi
out=$(mktemp)
flock "$lock" sleep 5 &
holder=$!
# The holder is waited for, not killed: its sleep would keep the lock.
trap 'wait "$holder" 2> /dev/null || true; rm -f "$out"' EXIT
sleep 1 # the holder takes the lock

fail() {
  echo "deps-lock: $*" >&2
  cat "$out" >&2
  exit 1
}

t0=$(date +%s)
HCG_DEPS_PACKAGES=dpkg "$src/scripts/deps.sh" > "$out" 2>&1 ||
  fail "deps.sh failed with nothing missing"
grep -q "all packages present" "$out" || fail "no 'all packages present'"
[ $(($(date +%s) - t0)) -le 1 ] || fail "waited with nothing to install"

rc=0
HCG_DEPS_PACKAGES=hcg-no-such-package HCG_LOCK_WAIT=2 "$src/scripts/deps.sh" \
  > "$out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "exit status $rc, want 1"
grep -q "waiting for $lock (another apt-get or dpkg is running" "$out" ||
  fail "no waiting message"
grep -Eq "$lock still held after [23]s \(HCG_LOCK_WAIT=2\)" "$out" ||
  fail "no give-up message"
echo "deps-lock: no wait with nothing missing; waited, then gave up naming $lock"
