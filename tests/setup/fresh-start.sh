#!/bin/bash
# fresh-start.sh - the start of scripts/test-all.sh as a new machine meets
# it: a copy of the tree as a fresh clone has it (no build directories), a
# root cache (HCG_ROOTS) whose directory and parents do not exist, the
# suite's set-up on this machine's tier (HCG_SUITE=start: disk report,
# packages, platform row), and another tier's root made in that cache up
# to debootstrap (which is given no mirror, so as to cost nothing). An
# empty build directory needs no step of its own: CI's clone has nothing
# else, and the suite's first build starts from it. CI runs where earlier runs left their
# caches, which once hid a run that ended in its first second on a new
# machine; this step fails the same way that run did.
#
# Packages already installed stay installed (deps.sh then checks them); the
# roots in the real cache are not touched.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
limit=${HCG_FRESH_LIMIT:-600}
tmp=$(mktemp -d /tmp/hcg-fresh.XXXXXX)
trap 'rm -rf --one-file-system "$tmp"' EXIT

fail() {
  echo "fresh-start: $*" >&2
  exit 1
}

# What a clone has, plus changes not yet committed: the files git tracks
# or would (not ignored), nothing built.
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
  (cd "$src" && rsync -a --from0 --files-from=- ./ "$tmp/src/") ||
  fail "could not copy the tree to $tmp/src"
for d in build build-asan build-dl configure; do
  [ ! -e "$tmp/src/$d" ] || fail "the copy has $d: it is not a fresh clone's"
done

host=$("$tmp/src/scripts/tier.sh" list | awk '/\(this host\)/ { print $1 }')
[ -n "$host" ] || {
  echo "SKIP: this machine is none of the tiers (scripts/tier.sh list)"
  exit 0
}

# A cache two directories below one that does not exist either.
roots=$tmp/no-cache/hcg/roots
rc=0
HCG_ROOTS=$roots HCG_PLATFORMS=$host HCG_SUITE=start HCG_STEP_LIMIT=$limit \
  timeout "$limit" "$tmp/src/scripts/test-all.sh" >"$tmp/out" 2>&1 || rc=$?
sed 's/^/  | /' "$tmp/out"
[ "$rc" -eq 0 ] || fail "test-all.sh's set-up exited $rc on a fresh state (output above)"
grep -q "^PASS .* $host: README's platform row" "$tmp/out" ||
  fail "test-all.sh's set-up did not reach its first step of $host (output above)"
grep -q "^disk: .* at $tmp$" "$tmp/out" ||
  fail "no disk report for the root cache that does not exist yet (output above)"
[ ! -e "$tmp/no-cache" ] ||
  fail "the set-up of $host alone made $tmp/no-cache (only a root tier needs it)"
echo "fresh-start: test-all.sh got past its set-up in a fresh copy with no root cache"

# A root tier's start in the same cache, up to debootstrap, from a mirror
# that is not there (file:, nothing fetched): everything tier.sh does
# before it (the cache's directories, its lock, the check of a root that
# does not exist, the space, the mirror) must run, and debootstrap's
# failure must be the one reported, with nothing half-made left.
other=$("$tmp/src/scripts/tier.sh" list | awk '!/\(this host\)/ { print $1; exit }')
suite=$("$tmp/src/scripts/tier.sh" list | awk -v t="$other" '$1 == t { print $2 }')
rc=0
HCG_ROOTS=$roots HCG_DEBIAN_MIRROR=file://$tmp/no-mirror \
  timeout 300 "$tmp/src/scripts/tier.sh" root "$other" >"$tmp/root.out" 2>&1 || rc=$?
sed 's/^/  | /' "$tmp/root.out"
[ "$rc" -eq 1 ] || fail "tier.sh root $other exited $rc, not 1, from a mirror that is not there"
grep -q "making the $other root ($suite) in $roots/$other" "$tmp/root.out" ||
  fail "tier.sh root $other stopped before debootstrap in a cache that did not exist (output above)"
grep -q "debootstrap $suite failed" "$tmp/root.out" ||
  fail "tier.sh root $other did not report debootstrap's failure (output above)"
[ ! -e "$roots/$other" ] && [ ! -e "$roots/$other.new" ] ||
  fail "a failed debootstrap left $roots/$other or $roots/$other.new behind"
echo "fresh-start: tier.sh got to debootstrap for $other in a root cache that did not exist"
