#!/bin/bash
# Configures and builds hcg out of tree: scripts/build.sh DIR [CONFIGURE ARGS]
# Reconfigures only when the build system changed, so it is cheap to rerun.
# HCG_BUILD_SUBDIR=runtime builds only that directory of the tree (a build
# that needs only libhcg, as test-all's --with-pmix=dlopen step).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: build.sh DIR [CONFIGURE ARGS]}
shift
jobs=$(nproc 2>/dev/null || echo 2)

cd "$src"
scripts/autogen.sh
mkdir -p "$dir"
cd "$dir"
# The stamp is written once configure succeeded: a configure that was
# interrupted (or failed) leaves none, and the next run configures again.
stamp=.hcg-configure-args
if [ ! -f Makefile ] || [ ! -f $stamp ] || [ "$(cat $stamp)" != "$*" ] ||
   [ config.status -ot "$src/configure" ]; then
  rm -f $stamp
  "$src/configure" "$@"
  printf '%s' "$*" > $stamp
fi
make -j"$jobs" ${HCG_BUILD_SUBDIR:+-C "$HCG_BUILD_SUBDIR"}
