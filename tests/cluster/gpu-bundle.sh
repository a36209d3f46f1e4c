#!/bin/bash
# gpu-bundle.sh - run the cluster tests on a throw-away GPU machine that has
# CUDA, NCCL and torch but no Slurm, no PMIx and no package registry.
#
#   tests/cluster/gpu-bundle.sh pack DIR      # here (Debian 12, deps.sh done,
#                                             # build/ built): DIR/root.tgz,
#                                             # about 12 MB
#   tests/cluster/gpu-bundle.sh unpack DIR    # there, as root, in the source
#                                             # tree with its built build/
#
# pack collects Debian's Slurm, munge, PMIx, bats, jq and iproute2 files and
# every library they load that is not glibc or the C++ runtime. unpack
# copies them under /usr without replacing any file the machine has (its
# newer libraries stay), points the dynamic loader at the NCCL and CUDA
# runtime of its torch, and, where /sys/fs/cgroup is cgroup2 without the
# dbus that Slurm 22.05's cgroup/v2 plugin needs, mounts a tmpfs with a
# named v1 hierarchy over it, as the CI containers have. Never unpack on a
# machine you keep: it changes /usr, /etc/ld.so.conf.d and /sys/fs/cgroup.
#
# Then: HCG_TEST_PYTHON=$(command -v python3) tests/cluster/run.sh \
#   "$PWD/build" tests/cluster/nccl.bats tests/cluster/agreement.bats \
#   tests/cluster/torch.bats
# The build's libtool wrappers name the directory it was built in: unpack
# links that path to this tree when it is missing.
set -euo pipefail

PACKAGES="slurm-wlm slurmctld slurmd slurm-client slurm-wlm-basic-plugins libslurm38
munge libmunge2 libpmix2 libpmix-bin bats jq libjq1 libonig5 iproute2 libhwloc15"

die() {
  echo "gpu-bundle: $*" >&2
  exit 1
}

# The libraries glibc and the compiler provide: the target's own are used.
SYSTEM_LIBS='/(libc|libm|libdl|libresolv|libpthread|librt|libgcc_s|libstdc\+\+)\.so'

STAGE=
pack() {
  local out=$1 src f g
  src=$(cd "$(dirname "$0")/../.." && pwd)
  STAGE=$(mktemp -d)
  trap 'rm -rf "$STAGE"' EXIT
  local stage=$STAGE
  # shellcheck disable=SC2086 # a list of package names
  for p in $PACKAGES; do dpkg -L "$p" || die "package $p is not installed (scripts/deps.sh)"; done |
    sort -u | grep -v -E '^/usr/share/(doc|man|locale)' >"$stage/files"
  : >"$stage/libs"
  while read -r f; do
    [ -f "$f" ] || [ -L "$f" ] || continue
    g=${f#/}
    case $g in lib/* | bin/* | sbin/*) g=usr/$g ;; esac # merged /usr
    mkdir -p "$stage/root/$(dirname "$g")"
    cp -a "$f" "$stage/root/$g"
    if [ -f "$f" ] && file -b "$f" | grep -q ELF; then
      ldd "$f" 2>/dev/null | awk '/=> \// {print $3}' >>"$stage/libs"
    fi
  done <"$stage/files"
  # And what the build's programs and tests load (Check's libsubunit).
  if [ -d "$src/build" ]; then
    find "$src/build" -type f -perm -u+x | while read -r f; do
      file -b "$f" | grep -q ELF && ldd "$f" 2>/dev/null | awk '/=> \// {print $3}'
    done | grep -v -E 'cuda|nccl' >>"$stage/libs" || true
  fi
  # Debian names the daemons through alternatives, which are not files.
  for d in slurmd slurmctld slurmstepd; do
    ln -sf "$d-wlm" "$stage/root/usr/sbin/$d"
  done
  sort -u "$stage/libs" | grep -v -E "$SYSTEM_LIBS" | while read -r f; do
    g=${f#/}
    case $g in lib/*) g=usr/$g ;; esac
    [ -e "$stage/root/$g" ] && continue
    mkdir -p "$stage/root/$(dirname "$g")"
    cp -L "$f" "$stage/root/$g"
  done
  mkdir -p "$out"
  tar -C "$stage/root" -czf "$out/root.tgz" .
  ls -l "$out/root.tgz"
}

unpack() {
  local in=$1 here src nccl cudart
  [ "$(id -u)" = 0 ] || die "unpack runs as root"
  [ -f "$in/root.tgz" ] || die "$in/root.tgz is missing (gpu-bundle.sh pack $in)"
  src=$(cd "$(dirname "$0")/../.." && pwd)
  here=$(mktemp -d)
  tar -C "$here" -xzf "$in/root.tgz"
  # -n: nothing the machine has is replaced (newer coreutils warn that -n
  # is not portable; --update=none, its new name, is unknown to older ones).
  local log
  log=$(cp -an "$here/usr/." /usr/ 2>&1) || die "copying the bundle into /usr failed: $log"
  printf '%s\n' "$log" | grep -v -e 'behavior of -n is non-portable' -e '^$' >&2 || true
  rm -rf "$here"
  # The build's libtool wrappers name the tree it was built in.
  local built
  built=$(sed -n 's/^abs_top_builddir = //p' "$src/build/Makefile" 2>/dev/null || true)
  built=${built%/build}
  if [ -n "$built" ] && [ ! -e "$built" ]; then
    mkdir -p "$(dirname "$built")"
    ln -s "$src" "$built"
  fi
  nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  cudart=$(python3 -c 'import nvidia.cuda_runtime as m; print(list(m.__path__)[0])' 2>/dev/null || true)
  {
    [ -n "$nccl" ] && echo "$nccl/lib"
    [ -d /usr/local/cuda/lib64 ] && echo /usr/local/cuda/lib64
    [ -n "$cudart" ] && echo "$cudart/lib"
  } >/etc/ld.so.conf.d/hcg-gpu-bundle.conf || true
  ldconfig
  if [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] && [ ! -S /run/dbus/system_bus_socket ]; then
    mount -t tmpfs none /sys/fs/cgroup
  fi
  if [ "$(stat -fc %T /sys/fs/cgroup)" = tmpfs ]; then
    mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/freezer
    mountpoint -q /sys/fs/cgroup/systemd ||
      mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
    mountpoint -q /sys/fs/cgroup/freezer ||
      mount -t cgroup -o freezer cgroup /sys/fs/cgroup/freezer
  fi
  ldd "$src/build/runtime/.libs/libhcg.so.1" | grep -E 'nccl|cudart|pmix|not found' || true
}

case ${1:-} in
pack) pack "${2:?usage: gpu-bundle.sh pack DIR}" ;;
unpack) unpack "${2:?usage: gpu-bundle.sh unpack DIR}" ;;
*) die "usage: gpu-bundle.sh pack DIR | unpack DIR" ;;
esac
