#!/bin/sh
# deps-lock.sh - scripts/deps.sh on a busy machine, installing nothing: while
# another process holds dpkg's lock-frontend, deps.sh with every package
# present does not wait at all, and with one missing it waits, says for
# what, and gives up after HCG_LOCK_WAIT naming the lock. Holds the lock
# until both runs are done: no step here is timed by the clock, so that a
# busy machine (tiers, builds beside it) cannot fail it for lack of CPU.
# As root (deps.sh refuses otherwise); prints SKIP elsewhere.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
lock=/var/lib/dpkg/lock-frontend
if [ "$(id -u)" -ne 0 ] || [ ! -e "$lock" ] || ! command -v flock > /dev/null; then
  echo "SKIP: needs root, $lock and flock(1)"
  exit 0
fi
out=$(mktemp)
held=$(mktemp)
# The holder keeps the lock while $held exists and this script runs. It is
# ended by removing that file and waited for, not killed: a killed flock(1)
# leaves its child, which has the lock open, holding it.
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's
flock "$lock" sh -c 'while [ -e "$1" ] && kill -0 "$2" 2> /dev/null; do
  sleep 0.2
done' sh "$held" $$ &
holder=$!
trap 'rm -f "$held"; wait "$holder" 2> /dev/null || true; rm -f "$out"' EXIT
trap 'exit 130' INT TERM HUP

fail() {
  echo "deps-lock: $*" >&2
  cat "$out" >&2
  exit 1
}

# Until the holder has the lock (a probe that gets it lets it go at once),
# however long a busy machine takes to start it; the step's own bound
# (test-all.sh) stops a holder that never gets it.
while flock -n "$lock" true 2> /dev/null; do
  sleep 0.1
done

# deps.sh says "waiting for" the moment it finds a lock held; with nothing
# missing it must not look at all.
HCG_DEPS_PACKAGES=dpkg "$src/scripts/deps.sh" > "$out" 2>&1 ||
  fail "deps.sh failed with nothing missing"
grep -q "all packages present" "$out" || fail "no 'all packages present'"
! grep -q "waiting for" "$out" || fail "waited with nothing to install"

rc=0
HCG_DEPS_PACKAGES=hcg-no-such-package HCG_LOCK_WAIT=2 "$src/scripts/deps.sh" \
  > "$out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "exit status $rc, want 1"
grep -q "waiting for $lock (another apt-get or dpkg is running" "$out" ||
  fail "no waiting message"
# Not before HCG_LOCK_WAIT; how long after it depends on how busy the
# machine is (each probe of the locks takes its time), and that it ended at
# all, the lock still held, is the bound.
grep -Eq "$lock still held after ([2-9]|[1-9][0-9]+)s \(HCG_LOCK_WAIT=2\)" "$out" ||
  fail "no give-up message"
echo "deps-lock: no wait with nothing missing; waited, then gave up naming $lock"
