#!/bin/sh
# Installs what hcg needs to build, test and run its demo on Debian 12, as
# root. Safe to run again: with everything present it touches nothing.
#
# On a fresh machine another apt-get (unattended-upgrades, cloud-init) often
# holds the dpkg lock: deps.sh waits for it, saying so every 30 s, but never
# longer than HCG_LOCK_WAIT seconds (default 600), so a stuck holder fails
# the set-up with its name instead of running into CI's own limit.
# HCG_DEPS_PACKAGES replaces the package list (tests/setup/deps-lock.sh).
set -eu

# What every tier's steps need: the build, the unit, valgrind, Python and
# cluster tests, the demo.
stack="
  build-essential autoconf automake libtool pkg-config
  check bats jq valgrind time man-db
  slurm-wlm slurmctld slurmd slurm-client munge libslurm-dev
  libpmix-dev libpmix-bin
  procps iproute2 hostname python3 python3-torch
  python3-setuptools python3-wheel python3-pip python3-venv mypy
"
# What only the machine itself needs: the steps that test the sources once
# (the fuzzers and the format check want clang, the ABI check abigail-tools)
# and the making of the other tiers' roots (debootstrap, rsync). A tier in
# its root (scripts/tier.sh sets HCG_TIER there) runs none of them: its
# root does without these, about 400 MB of LLVM less to fetch and unpack.
machine="
  clang libclang-rt-dev clang-format abigail-tools
  debootstrap rsync
"
if [ -n "${HCG_TIER:-}" ]; then machine=; fi
packages=${HCG_DEPS_PACKAGES:-"$stack $machine"}
lock_wait=${HCG_LOCK_WAIT:-600}
locks="/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock
  /var/lib/apt/lists/lock /var/cache/apt/archives/lock"

if [ "$(id -u)" -ne 0 ]; then
  echo "deps: run as root (apt-get installs packages, the test cluster runs daemons)" >&2
  exit 1
fi
case $lock_wait in
'' | *[!0-9]*)
  echo "deps: HCG_LOCK_WAIT='$lock_wait' is not a number of seconds" >&2
  exit 2
  ;;
esac

# A package counts as present once dpkg has unpacked and configured it; a
# trigger still to run (man-db's, typically) does not make it missing.
present() {
  case $(dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null) in
  installed | triggers-pending | triggers-awaited) return 0 ;;
  *) return 1 ;;
  esac
}

# Prints the first lock someone holds, if any. fuser sees any process that
# has the file open (apt and dpkg keep their lock files open while they hold
# them); without it, a non-blocking flock(1) probe is the fallback.
held_lock() {
  for l in $locks; do
    [ -e "$l" ] || continue
    if command -v fuser > /dev/null 2>&1; then
      if fuser "$l" > /dev/null 2>&1; then
        echo "$l"
        return 0
      fi
    elif command -v flock > /dev/null 2>&1; then
      if ! flock -n "$l" true 2> /dev/null; then
        echo "$l"
        return 0
      fi
    fi
  done
  return 1
}

# Seconds by the clock: a probe of every lock takes a while itself.
wait_for_locks() {
  start=$(date +%s)
  next_note=0
  while l=$(held_lock); do
    waited=$(($(date +%s) - start))
    if [ "$waited" -ge "$lock_wait" ]; then
      echo "deps: $l still held after ${waited}s (HCG_LOCK_WAIT=$lock_wait):" \
        "another package manager is running; try again when it is done" >&2
      exit 1
    fi
    if [ "$waited" -ge "$next_note" ]; then
      echo "deps: waiting for $l (another apt-get or dpkg is running;" \
        "${waited}s of at most ${lock_wait}s)" >&2
      next_note=$((next_note + 30))
    fi
    sleep 1
  done
}

find_missing() {
  missing=""
  for p in $packages; do
    present "$p" || missing="$missing $p"
  done
}

# While another apt-get or dpkg runs, a package it is configuring (or whose
# trigger it is running: man-db) looks half-installed: look again once it
# is done, so that only what is really missing gets installed.
find_missing
if [ -n "$missing" ]; then
  wait_for_locks
  find_missing
fi
if [ -z "$missing" ]; then
  echo "deps: all packages present"
  exit 0
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
# The probe above and apt's own lock timeout cover each other: between our
# check and apt taking the lock, another apt-get may start again.
apt_lock="-o DPkg::Lock::Timeout=$lock_wait"
# shellcheck disable=SC2086
apt-get $apt_lock update -q || {
  echo "deps: 'apt-get update' failed (see above)" >&2
  exit 1
}
wait_for_locks
# A run killed while dpkg was unpacking (this script's own, a CI job's)
# leaves packages half-configured, and apt refuses to install until they
# are finished: finish them first.
if [ -n "$(dpkg --audit 2>/dev/null)" ]; then
  echo "deps: finishing packages an interrupted dpkg left half-configured"
  dpkg --configure -a || {
    echo "deps: 'dpkg --configure -a' failed (see above)" >&2
    exit 1
  }
fi
# The package files this install downloads are removed once installed
# (torch's alone are hundreds of MB): CI's disk also holds two roots.
# shellcheck disable=SC2086
apt-get $apt_lock -o APT::Keep-Downloaded-Packages=false \
  install -y -q --no-install-recommends $missing || {
  echo "deps: 'apt-get install$missing' failed (see above)" >&2
  exit 1
}
