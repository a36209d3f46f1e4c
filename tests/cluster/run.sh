#!/bin/bash
# run.sh - start one private Slurm cluster, run every cluster test
# (tests/cluster/*.bats: the plugin, libhcg and hcg.torch) against it, check the node's health afterwards, and tear it down, also
# on failure or interruption.
#
#   tests/cluster/run.sh BUILD_DIR [FILE.bats...]
#
# BUILD_DIR is a configured and built tree (spank/.libs/spank_hcg.so and
# runtime/hcg). Must run as root. Exit status: that of the tests.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/cluster/run.sh BUILD_DIR [FILE.bats...]}
shift

# shellcheck source=tests/cluster/cluster.sh
source "$here/cluster.sh"
trap 'cluster_stop' EXIT
trap 'exit 130' INT TERM HUP

cluster_start "$build" || exit 1

files=()
for f in "$@"; do
  [ "$(basename "$f")" = health.bats ] || files+=("$f")
done
if [ $# -eq 0 ]; then
  for f in "$here"/*.bats; do
    # container.bats needs the Debian 13 root with its packages:
    # scripts/test-all.sh runs it after the tiers.
    case $(basename "$f") in health.bats | container.bats) continue ;; esac
    [ -f "$f" ] && files+=("$f")
  done
fi

rc=0
bats --timing "${files[@]}" || rc=1
# After everything else: the node survived.
bats --timing "$here/health.bats" || rc=1
if [ "$rc" -ne 0 ]; then
  cluster_logs
fi
exit "$rc"
