#!/bin/bash
# fresh-start.sh - the start of scripts/test-all.sh as a new machine meets
# it: a copy of the tree as a fresh clone has it (no build directories), a
# root cache (HCG_ROOTS) whose directory and parents do not exist, and the
# suite's set-up on this machine's tier (HCG_SUITE=start: disk report,
# packages, platform row, build). CI runs where earlier runs left their
# caches, which once hid a run that ended in its first second on a new
# machine; this step fails the same way that run did.
#
# Packages already installed stay installed (deps.sh then checks them); the
# roots in the real cache are not touched.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
limit=${HCG_FRESH_LIMIT:-900}
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
grep -q "^PASS .* $host: build " "$tmp/out" ||
  fail "test-all.sh's set-up did not reach its build (output above)"
grep -q "^disk: .* at $tmp$" "$tmp/out" ||
  fail "no disk report for the root cache that does not exist yet (output above)"
[ ! -e "$tmp/no-cache" ] ||
  fail "the set-up of $host alone made $tmp/no-cache (only a root tier needs it)"
echo "fresh-start: test-all.sh got past its set-up in a fresh copy with no root cache"
