#!/bin/sh
# Installs what hcg needs to build, test and run its demo on Debian 12, as
# root. Safe to run again: with everything present it touches nothing.
set -eu

packages="
  build-essential autoconf automake libtool pkg-config
  check bats jq valgrind clang-14 libclang-rt-14-dev time man-db
  slurm-wlm slurmctld slurmd slurm-client munge libslurm-dev
  libpmix-dev libpmix-bin
  procps iproute2 hostname python3 python3-torch
"

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: run as root (apt-get installs packages, the test cluster runs daemons)" >&2
  exit 1
fi

missing=""
for p in $packages; do
  dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
    missing="$missing $p"
done
if [ -z "$missing" ]; then
  echo "deps: all packages present"
  exit 0
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing
