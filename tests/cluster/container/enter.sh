#!/bin/bash
# enter.sh [--no-pmix] ROOT CMD [ARGS...] - what a container runtime does for a Slurm
# task (enroot under pyxis, here with a Debian root standing for the image):
# run CMD with ROOT as its /, in a mount namespace of its own, with the
# host's /proc, /sys and /dev (so /dev/shm), a private /tmp, and the PMIx
# server's directory of this step mounted in at the same path, and RANK and
# LOCAL_RANK set from SLURM_PROCID and SLURM_LOCALID as pyxis sets them in
# PyTorch images. Run by srun as root (tests/cluster/container.bats).
#
# --no-pmix: an image without PMIx's client library (its directory is
# hidden under an empty tmpfs, so libpmix.so.2 does not resolve).
set -euo pipefail
nopmix=0
if [ "${1:-}" = --no-pmix ]; then
  nopmix=1
  shift
fi
root=${1:?usage: enter.sh [--no-pmix] ROOT CMD [ARGS...]}
shift

# The server's directory: PMIX_SERVER_TMPDIR, as Slurm's mpi/pmix sets it
# (the runtime also finds it in PMIX_SERVER_URI*'s rendezvous file).
dirs=()
for v in PMIX_SERVER_TMPDIR PMIX_SYSTEM_TMPDIR; do
  d=${!v:-}
  [ -n "$d" ] && [ -d "$d" ] && dirs+=("$d")
done

if [ -n "${SLURM_PROCID:-}" ]; then
  export RANK=$SLURM_PROCID LOCAL_RANK=${SLURM_LOCALID:-0}
fi

# shellcheck disable=SC2016 # expanded by the inner shell
exec unshare --mount --propagation private /bin/bash -euc '
root=$1 nopmix=$2 ndirs=$3
shift 3
mount --rbind /proc "$root/proc"
mount --rbind /sys "$root/sys"
mount --rbind /dev "$root/dev"
mount -t tmpfs -o mode=1777 hcg-ct-tmp "$root/tmp"
for ((i = 0; i < ndirs; i++)); do
  d=$1
  shift
  # Under the private /tmp the mount point leaves no trace in the root;
  # elsewhere it is an empty directory.
  mkdir -p "$root$d"
  mount --bind "$d" "$root$d"
done
if [ "$nopmix" = 1 ]; then
  # Debian keeps PMIx in pmix2/; libpmix.so.2 beside it is a link there.
  for d in "$root"/usr/lib/*/pmix2; do
    [ -d "$d" ] && mount -t tmpfs -o ro hcg-ct-nopmix "$d"
  done
fi
exec chroot "$root" "$@"
' enter "$root" "$nopmix" "${#dirs[@]}" "${dirs[@]}" "$@"
