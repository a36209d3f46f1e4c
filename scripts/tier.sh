#!/bin/bash
# tier.sh - the Debian stacks hcg is tested on, each in a root of its own.
#
#   scripts/tier.sh list                 the tiers and which one this host is
#   scripts/tier.sh root TIER            make TIER's root if it is missing or
#                                        broken; print its path
#   scripts/tier.sh deps TIER            copy this tree into TIER's root and
#                                        install its packages (scripts/deps.sh)
#   scripts/tier.sh run TIER [CMD...]    copy this tree into TIER's root and
#                                        run CMD there, on a network of its
#                                        own (default: deps.sh, then the
#                                        tier's suite, scripts/test-all.sh)
#   scripts/tier.sh shell TIER           a shell in TIER's root, in the copy,
#                                        on the host's network
#   scripts/tier.sh roots                the directory the roots are kept in
#   scripts/tier.sh mirror               the Debian mirror roots are made from
#
# Tiers: debian12 (bookworm), debian13 (trixie), sid. A root is a Debian
# system made by debootstrap from the mirror this machine's apt uses
# (HCG_DEBIAN_MIRROR overrides it), kept under HCG_ROOTS
# (default /var/cache/hcg/roots) and reused by later runs: it is made again
# when it is missing or broken (no stamp, or its /bin/true does not run),
# when scripts/deps.sh changed since, or after a shell in it. The packages
# hcg needs are installed in it by scripts/deps.sh, the same script a
# native machine runs: a root holds nothing else.
#
# A command runs in private mount, PID and IPC namespaces (unshare) and,
# but for deps.sh and the shell, a network namespace of its own: the root is
# bound onto itself (a mount point, as / is on a booted system), /proc, /sys,
# /dev with a /dev/shm of its own, a tmpfs on /run (ip netns needs it) and,
# when the host has it,
# /usr/local/cuda (read-only, so every tier builds libhcg against the same
# NCCL) are mounted for it alone, and when it ends every process it started
# ends with it, and so do the mounts. Nothing is ever mounted in the host's
# namespace, so removing a root never reaches the host's /sys or /dev.
#
# The tree is copied (rsync, the files git does not ignore) to /hcg/src in
# the root (HCG_TIER_SRC picks another directory, so that two checkouts can
# share a root); build directories there are kept between runs. The
# command sees a clean environment plus the HCG_* variables of the caller
# and HCG_TIER=TIER. Must run as root.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
roots=${HCG_ROOTS:-/var/cache/hcg/roots}

die() {
  echo "tier: $*" >&2
  exit 1
}

# TIER -> Debian suite.
suite_of() {
  case $1 in
  debian12) echo bookworm ;;
  debian13) echo trixie ;;
  sid) echo sid ;;
  *) return 1 ;;
  esac
}

# The tier this machine is, if it is one: its os-release's codename.
host_tier() {
  local codename=
  # shellcheck disable=SC1091
  [ -r /etc/os-release ] && codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  case $codename in
  bookworm) echo debian12 ;;
  trixie) echo debian13 ;;
  sid) echo sid ;;
  esac
}

# The Debian mirror this machine's apt already uses, as a site with a
# mirror of its own has it set: the first URI of an enabled "deb" source
# for a plain suite (bookworm, not bookworm-security or bookworm-updates),
# from the deb822 .sources files, then the one-line .list files.
# HCG_DEBIAN_MIRROR, when set, is used instead.
apt_mirror() {
  local f etc=${HCG_APT_ETC:-/etc/apt} m
  m=$(for f in "$etc"/sources.list.d/*.sources; do
    if [ -r "$f" ]; then cat "$f" && echo; fi
  done | awk '
    BEGIN { RS = "" }
    {
      n = split($0, line, "\n"); text = ""
      for (i = 1; i <= n; i++) {
        if (line[i] ~ /^#/) continue
        if (line[i] ~ /^[ \t]/) text = text " " line[i]; else text = text "\n" line[i]
      }
      types = suites = uris = ""; enabled = "yes"
      n = split(text, field, "\n")
      for (i = 1; i <= n; i++) {
        k = tolower(field[i]); sub(/:.*/, "", k)
        v = field[i]; sub(/^[^:]*:[ \t]*/, "", v)
        if (k == "types") types = " " v " "
        else if (k == "suites") suites = " " v " "
        else if (k == "uris") uris = v
        else if (k == "enabled") enabled = tolower(v)
      }
      gsub(/[ \t]+/, " ", types); gsub(/[ \t]+/, " ", suites)
      if (enabled == "no" || types !~ / deb / || suites !~ / [a-z]+ /) next
      split(uris, u, /[ \t]+/)
      if (u[1] ~ /^(https?|ftp|file):/ && !found++) print u[1]
    }')
  [ -n "$m" ] || m=$(for f in "$etc"/sources.list "$etc"/sources.list.d/*.list; do
    if [ -r "$f" ]; then cat "$f"; fi
  done | sed -e 's/#.*//' -e 's/\[[^]]*\]//' | awk '
    $1 == "deb" && $2 ~ /^(https?|ftp|file):/ && $3 ~ /^[a-z]+\/?$/ && !found++ { print $2 }')
  echo "$m"
}

mirror_of_host() {
  local m
  if [ -n "${HCG_DEBIAN_MIRROR:-}" ]; then
    echo "$HCG_DEBIAN_MIRROR"
    return
  fi
  m=$(apt_mirror) || m=
  [ -n "$m" ] ||
    die "no Debian mirror in this machine's apt sources (${HCG_APT_ETC:-/etc/apt}/sources.list.d/*.sources," \
      "${HCG_APT_ETC:-/etc/apt}/sources.list): set HCG_DEBIAN_MIRROR to one"
  echo "$m"
}

# Which scripts/deps.sh a root was made for: a root must hold only what
# debootstrap and the current deps.sh put there, as a new machine would,
# or a package dropped from deps.sh (or installed by hand) would go unseen.
deps_id() {
  sha256sum "$src/scripts/deps.sh" | cut -c1-16
}

# Why ROOT must be made (again), or nothing when it is fine. A root counts
# as made once debootstrap finished and the stamp is written.
root_stale() { # ROOT
  if [ ! -e "$1" ]; then
    return 0 # not made yet: nothing to say
  elif [ ! -f "$1/etc/hcg-tier" ]; then
    echo "has no stamp (its debootstrap did not finish)"
  elif ! chroot "$1" /bin/true 2>/dev/null; then
    echo "does not run (half removed, or a killed dpkg)"
  elif [ "$(sed -n 's/.* deps=//p' "$1/etc/hcg-tier")" != "$(deps_id)" ]; then
    echo "was made for another scripts/deps.sh"
  elif [ -e "$1/etc/hcg-tier-by-hand" ]; then
    echo "was changed by hand (tier.sh shell)"
  fi
}

root_ok() {
  [ -e "$1" ] && [ -z "$(root_stale "$1")" ]
}

make_root() { # TIER DIR
  local tier=$1 dir=$2 suite
  suite=$(suite_of "$tier")
  command -v debootstrap >/dev/null ||
    die "debootstrap is not installed (scripts/deps.sh installs it)"
  local new=$dir.new mirror
  mirror=$(mirror_of_host)
  rm -rf --one-file-system "$new"
  echo "tier: making the $tier root ($suite) in $dir with debootstrap from $mirror" >&2
  # minbase: apt, dpkg and the essential packages, nothing else; the rest
  # comes from scripts/deps.sh, as on a fresh machine.
  if ! debootstrap --variant=minbase --include=ca-certificates \
    "$suite" "$new" "$mirror" >"$dir.debootstrap.log" 2>&1; then
    tail -n 20 "$dir.debootstrap.log" >&2
    rm -rf --one-file-system "$new"
    die "debootstrap $suite failed (log: $dir.debootstrap.log)"
  fi
  echo "$tier $suite $(date -u +%Y-%m-%dT%H:%M:%SZ) deps=$(deps_id)" >"$new/etc/hcg-tier"
  rm -rf --one-file-system "$dir"
  mv "$new" "$dir"
}

# What a root is told besides Debian's defaults; written on every use, so
# that roots made by an older tier.sh get it too.
configure_root() { # TIER DIR
  local dir=$2
  if [ "$(suite_of "$1")" = sid ]; then
    # The registry serves sid with a Release file past its Valid-Until
    # date; apt refuses it unless told. Only this root is told.
    cat >"$dir/etc/apt/apt.conf.d/90hcg-sid-valid-until" <<'EOF'
// hcg's sid tier: Debian's registry serves sid with an expired Release file.
Acquire::Check-Valid-Until "false";
EOF
  fi
  # The packages' files once installed (half a GiB a root): a CI machine's
  # disk is not ours to fill.
  cat >"$dir/etc/apt/apt.conf.d/90hcg-no-archives" <<'EOF'
// hcg's tiers: downloaded packages are removed once installed.
APT::Keep-Downloaded-Packages "false";
EOF
  rm -f "$dir"/var/cache/apt/archives/*.deb
  # Nor the packages' documentation and translations (200 MB a root).
  cat >"$dir/etc/dpkg/dpkg.cfg.d/90hcg-no-docs" <<'EOF'
# hcg's tiers: no package documentation or translations in a test root.
path-exclude=/usr/share/doc/*
path-exclude=/usr/share/locale/*
EOF
  # No daemon may start while packages install (slurmd, munge): a root is
  # not a booted system.
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 755 "$dir/usr/sbin/policy-rc.d"
}

# A root with hcg's packages takes about 3 GiB; say so before debootstrap
# rather than fail halfway through an install.
need_space() { # DIR
  local free_k need_k=$((4 * 1024 * 1024))
  free_k=$(df -Pk "$1" | awk 'NR == 2 { print $4 }')
  [ "${free_k:-0}" -ge "$need_k" ] ||
    die "$1 has $((${free_k:-0} / 1024)) MiB free; a root needs about 4 GiB" \
      "(HCG_ROOTS picks another place)"
}

ensure_root() { # TIER -> prints the root's path
  local tier=$1
  suite_of "$tier" >/dev/null || die "unknown tier '$tier' (tiers: debian12 debian13 sid)"
  [ "$(id -u)" = 0 ] || die "run as root (debootstrap, chroot and mounts need it)"
  mkdir -p "$roots"
  local dir=$roots/$tier
  # One maker at a time per root; a second run waits for the first.
  exec 9>"$roots/$tier.lock"
  flock -w 1800 9 || die "$roots/$tier.lock is held by another run"
  local why
  why=$(root_stale "$dir")
  if [ ! -e "$dir" ] || [ -n "$why" ]; then
    [ -z "$why" ] || echo "tier: the $tier root in $dir $why: making it again" >&2
    rm -rf --one-file-system "$dir" "$dir.new"
    need_space "$roots"
    make_root "$tier" "$dir"
  fi
  configure_root "$tier" "$dir"
  # The host's name lookups (the registry, for deps.sh), but this node's
  # own name on the loopback: a tier's tests run in a network namespace of
  # their own, where the host's addresses do not exist.
  root_hosts >"$dir/etc/hosts"
  cp -f /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  echo "$dir"
}

# The host's /etc/hosts with this node's names moved to 127.0.1.1 (Debian's
# address for them), which is on the loopback in any network namespace.
root_hosts() {
  local short full
  short=$(hostname -s 2>/dev/null || hostname)
  full=$(hostname -f 2>/dev/null || echo "$short")
  awk -v a="$short" -v b="$full" '
    /^[ \t]*(#|$)/ { print; next }
    {
      out = $1
      for (i = 2; i <= NF; i++) if ($i != a && $i != b) out = out " " $i
      if (out != $1) print out
    }' /etc/hosts
  if [ "$full" = "$short" ]; then
    echo "127.0.1.1 $short"
  else
    echo "127.0.1.1 $full $short"
  fi
}

sync_tree() { # ROOT DEST
  local dest=$1$2
  command -v rsync >/dev/null || die "rsync is not installed (scripts/deps.sh installs it)"
  mkdir -p "$dest"
  # Every file git does not ignore, as a fresh clone plus the caller's
  # changes; ignored files on the other side (the builds) are kept.
  rsync -a --delete --filter=':- .gitignore' --exclude=/.git "$src/" "$dest/"
}

# Runs CMD in ROOT, in DIR, in new mount, PID and IPC namespaces, with a
# /dev/shm of its own and, with NET "own", a network namespace of its own
# with only the loopback up, so that no port, abstract socket, shared
# memory segment or network device of one tier can be taken or seen by
# another, nor by the host's tier ("host": the host's network, for apt).
enter() { # NET ROOT DIR CMD...
  local net=$1 root=$2 dir=$3
  shift 3
  local -a netns=()
  [ "$net" = own ] && netns=(--net)
  local -a envs=(HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}"
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
    HCG_TIER="$tier")
  local v
  while IFS='=' read -r v _; do
    case $v in
    HCG_TIER | HCG_PLATFORMS | HCG_ROOTS | HCG_TIER_SRC) ;;
    HCG_*) envs+=("$v=${!v}") ;;
    esac
  done < <(env)
  # The host's CUDA (with NCCL) as /usr/local/cuda, and the loader's path
  # to its libraries (the host's, under that name), as on the host.
  local cuda= conf=$root/etc/ld.so.conf.d/zz-hcg-cuda.conf
  [ -d /usr/local/cuda/include ] && cuda=$(readlink -f /usr/local/cuda)
  if [ -n "$cuda" ]; then
    { grep -hs "^$cuda/" /etc/ld.so.conf.d/*.conf || echo "$cuda/lib64"; } |
      sed "s|^$cuda/|/usr/local/cuda/|" >"$conf"
  else
    rm -f "$conf"
  fi
  # --kill-child: when unshare goes (a step's time limit), the namespace's
  # first process gets SIGKILL, and with it every process of the tier.
  # shellcheck disable=SC2016 # expanded by the inner shell
  unshare --mount --pid --ipc "${netns[@]}" --fork --kill-child --propagation private -- \
    /bin/bash -c '
      set -e
      root=$1 dir=$2 cuda=$3 net=$4
      shift 4
      # 127.0.1.1, the node'"'"'s name in the root'"'"'s /etc/hosts, as an address
      # of its own: Slurm'"'"'s daemons find the address to listen on with
      # AI_ADDRCONFIG, which glibc answers with nothing on a network whose
      # only addresses are 127.0.0.1 and ::1 (slurmctld: "Unable to
      # resolve (null)").
      if [ "$net" = own ]; then
        ip link set lo up
        ip addr add 127.0.1.1/8 dev lo
      fi
      # The root a mount point of its own, as / is on a booted system:
      # unshare --mount (the second node of the cluster tests) changes the
      # propagation of /, which fails where / is a plain directory.
      mount --bind "$root" "$root"
      mount -t proc proc "$root/proc"
      mount --rbind /sys "$root/sys"
      mount --rbind /dev "$root/dev"
      # Its own /dev/shm (and, with --ipc, message queues and System V
      # IPC): every tier'"'"'s private cluster numbers its jobs from 1, so the
      # names PMIx and Slurm derive from job ids repeat from tier to tier.
      mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$root/dev/shm"
      mount -t tmpfs -o mode=755 tmpfs "$root/run"
      mkdir -p "$root/run/lock"
      if [ -n "$cuda" ]; then
        mkdir -p "$root/usr/local/cuda"
        mount --bind "$cuda" "$root/usr/local/cuda"
        mount -o remount,bind,ro "$root/usr/local/cuda"
      fi
      chroot "$root" /sbin/ldconfig
      exec chroot "$root" /usr/bin/env -i "$@"
    ' tier "$root" "$dir" "$cuda" "$net" "${envs[@]}" /bin/bash -c 'cd "$0" && exec "$@"' "$dir" "$@"
}

tier=
cmd=${1:-}
case $cmd in
list)
  host=$(host_tier)
  for t in debian12 debian13 sid; do
    note=
    [ "$t" = "$host" ] && note=" (this host)"
    root_ok "$roots/$t" 2>/dev/null && note="$note (root: $roots/$t)"
    echo "$t $(suite_of "$t")$note"
  done
  ;;
roots)
  echo "$roots"
  ;;
mirror)
  mirror_of_host
  ;;
root)
  tier=${2:?usage: tier.sh root TIER}
  ensure_root "$tier"
  ;;
run | shell | deps)
  tier=${2:?usage: tier.sh $cmd TIER [CMD...]}
  shift 2
  root=$(ensure_root "$tier")
  dir=${HCG_TIER_SRC:-/hcg/src}
  case $dir in /*) ;; *) die "HCG_TIER_SRC='$dir' must be an absolute path" ;; esac
  # One run at a time in one copy: a second would rewrite the tree and the
  # builds under the first.
  exec 8>"$roots/$tier$(tr / . <<<"$dir").lock"
  flock -n 8 || die "another run is using $dir in the $tier root;" \
    "wait for it, or give this one its own copy with HCG_TIER_SRC=/hcg/NAME"
  sync_tree "$root" "$dir"
  if [ "$cmd" = shell ]; then
    # What a person does there is no new machine's: the next run that
    # needs this root makes it again.
    : >"$root/etc/hcg-tier-by-hand"
    echo "tier: $root will be made again before its next run (changed by hand)" >&2
    enter host "$root" "$dir" /bin/bash -i
  elif [ "$cmd" = deps ]; then
    enter host "$root" "$dir" scripts/deps.sh
  elif [ $# -eq 0 ]; then
    # The packages first, on the host's network; then the suite on its own.
    enter host "$root" "$dir" scripts/deps.sh
    enter own "$root" "$dir" scripts/test-all.sh
  else
    enter own "$root" "$dir" "$@"
  fi
  ;;
*)
  echo "usage: tier.sh list | roots | mirror | root TIER | deps TIER | run TIER [CMD...] | shell TIER" >&2
  exit 2
  ;;
esac
