#!/bin/bash
# abi-check.sh [--update] BUILD_DIR - holds libhcg's ABI to the committed
# baseline abi/libhcg.abi: abidw (Debian's abigail-tools) describes the
# built library's exported functions and the public types they reach
# (those of runtime/hcg.h), and abidiff compares that with the baseline.
# Any change to an exported function's signature or to a public struct or
# enum fails; functions removed fail; functions added are listed and pass
# (an addition is compatible: bump libtool's revision and age and refresh
# the baseline).
#
# Changing the ABI deliberately: change the API, bump -version-info in
# configure.ac (libtool's rules: an incompatible change is a new soname),
# rebuild, then regenerate the baseline and commit it with the change:
#   scripts/build.sh build && scripts/abi-check.sh --update build
#
# The library must be built with debug information (the default -g).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
update=0
if [ "${1:-}" = --update ]; then
  update=1
  shift
fi
build=$(cd "${1:?usage: abi-check.sh [--update] BUILD_DIR}" && pwd)
base=$src/abi/libhcg.abi
suppr=$src/abi/libhcg.suppr

for tool in abidw abidiff; do
  command -v "$tool" > /dev/null || {
    echo "abi-check: $tool not found: install abigail-tools (scripts/deps.sh)" >&2
    exit 1
  }
done
lib=$(find "$build/runtime/.libs" -maxdepth 1 -name 'libhcg.so.*.*' -type f | head -n 1)
[ -n "$lib" ] || {
  echo "abi-check: no libhcg.so.* under $build/runtime/.libs: build first" >&2
  exit 1
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Only what the public header declares, without paths or locations, so the
# description does not depend on where the tree was built.
abidw --headers-dir "$src/runtime" --drop-private-types --no-corpus-path \
  --no-comp-dir-path --no-show-locs --suppressions "$suppr" \
  --out-file "$tmp/libhcg.abi" "$lib"

if [ "$update" = 1 ]; then
  cp "$tmp/libhcg.abi" "$base"
  echo "abi-check: wrote $base from $lib"
  exit 0
fi
[ -f "$base" ] || {
  echo "abi-check: no baseline $base (scripts/abi-check.sh --update BUILD_DIR)" >&2
  exit 1
}

rc=0
abidiff --suppressions "$suppr" --no-added-syms "$base" "$tmp/libhcg.abi" \
  > "$tmp/diff" || rc=$?
# abidiff's status is a bit field: 1 error, 2 usage, 4 a change, 8 an
# incompatible change.
if [ "$rc" -ne 0 ]; then
  cat "$tmp/diff"
  echo "abi-check: $(basename "$lib") differs from abi/libhcg.abi (abidiff" \
    "status $rc): an exported function or public type changed. If that is" \
    "meant, bump -version-info in configure.ac and run" \
    "scripts/abi-check.sh --update BUILD_DIR (see the top of this script)" >&2
  exit 1
fi
added=$(abidiff --suppressions "$suppr" "$base" "$tmp/libhcg.abi" |
  grep -c "^  \[A\]" || true)
if [ "$added" -gt 0 ]; then
  echo "abi-check: OK, with $added function(s) added since the baseline" \
    "(compatible; refresh it with --update and bump libtool's age)"
else
  echo "abi-check: OK: $(basename "$lib") matches abi/libhcg.abi"
fi
