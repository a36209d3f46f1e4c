# shellcheck shell=bash
#
# cluster.sh - a private, throw-away Slurm cluster on this machine, for the
# hcg integration tests, the demo and the srun benchmark.
#
# Contract (for tests/cluster/*.bats, bench/ and scripts/demo.sh):
#
#   source tests/cluster/cluster.sh
#   cluster_start BUILD_DIR      # start munged, slurmctld, slurmd; wait idle
#   ...                          # srun/sbatch/salloc now use this cluster
#   cluster_stop                 # cancel jobs, stop daemons, remove the dir
#
#   Or run everything at once:   tests/cluster/run.sh BUILD_DIR [FILE.bats...]
#   The demo: scripts/demo.sh
#
# cluster_start exports, for the commands and tests that follow:
#   SLURM_CONF     the cluster's slurm.conf (srun, sbatch, squeue use it)
#   CLUSTER_DIR    the private directory (conf, logs, state, spool, plugin)
#   CLUSTER_NODE   the (first) node's name; CLUSTER_PARTITION its partition
#   CLUSTER_NODES  all node names, comma-separated
#   CLUSTER_LOGS   directory of slurmctld.log, slurmd.log, munged.log
#   HCG_BUILD      BUILD_DIR, absolute
#   HCG_SRCDIR     the source tree (this file's ../..)
#   HCG            the hcg command built in BUILD_DIR (runtime/hcg)
#   CLUSTER_PLUGIN     the spank_hcg.so the cluster loads (a copy of the built one)
#   CLUSTER_PLUGSTACK  the node's plugstack.conf (also srun's, by default)
#   CLUSTER_PMIX   1 when this Slurm has the mpi_pmix plugin (srun
#                  --mpi=pmix), else 0 (Debian's Slurm 26.05 has none)
# Tasks inherit srun's environment: HCG_BUILD and HCG_SRCDIR appear among a
# task's HCG_* variables unless unset before srun (tests/cluster/helpers.bash
# does that).
#
# The cluster: one node (CPUs=2, NodeAddr=127.0.0.1) in one partition with
# OverSubscribe=FORCE, SlurmUser=root, proctrack/linuxproc, task/none,
# select/cons_tres, MpiDefault=none (use srun --mpi=pmix), its own munged
# (private key and socket), free TCP ports picked at start, and
# PlugStackConfig pointing at the freshly built plugin with `required`
# (PluginDir lists the cluster's plugins/ first, then Slurm's own).
# Everything lives in one mktemp directory, so several clusters (or a
# leftover of a killed run) never collide. Root is needed (slurmd starts
# jobs as their users). Missing Debian packages are installed with apt-get.
#
# Helpers for tests:
#   cluster_plugstack [ARG...]        rewrite the node's plugstack.conf with
#                                     these plugin arguments (slurmstepd reads
#                                     it at every step start; srun at start)
#   cluster_plugstack_raw TEXT        replace the node's plugstack.conf
#   cluster_conf_variant NAME [ARG...] a second slurm.conf whose plugstack
#                                     has these arguments; prints its path.
#                                     Use as SLURM_CONF=... srun ... to test
#                                     srun/sbatch with other arguments while
#                                     the node keeps its own.
#   cluster_node_state                 the node's state, e.g. "idle"
#   cluster_wait_idle [SECONDS]        wait until no job runs and node idle
#   cluster_logs                       print the tails of all logs
#   need_pmix                          in a bats test: skip it, saying why,
#                                      where this Slurm has no mpi_pmix
#   cluster_has_topology KIND          whether this Slurm has topology/KIND
#                                      (block, tree): a plugin file, not a
#                                      version number
#
# Set HCG_CLUSTER_KEEP=1 to keep the directory after cluster_stop.
#
# CLUSTER_NODE_COUNT=2 (before cluster_start) adds a second node, hcgn2, in a
# network namespace of its own (doc/interfaces.md section 5): a private bridge
# joins the host (first node, slurmctld) and the namespace, on a random
# 10.x.y.0/24 subnet. Multi-node steps and heterogeneous steps need it.
# CLUSTER_NODE_COUNT=N (2 to 8) adds hcgn2 .. hcgnN the same way, each in a
# namespace of its own at 10.x.y.K.
#
# CLUSTER_TOPOLOGY (before cluster_start) gives the cluster a topology.conf
# beside its slurm.conf, nodes in slurm.conf's order taken CLUSTER_BLOCK_NODES
# (default 2) at a time:
#   block  TopologyPlugin=topology/block: BlockName=b1 Nodes=..., b2, ...,
#          BlockSizes=B,2B (Slurm 23.11 on; cluster_has_topology block
#          says whether this Slurm has it)
#   tree   TopologyPlugin=topology/tree: one leaf switch s1, s2, ... per
#          CLUSTER_BLOCK_NODES nodes under a top switch s0
# Unset: no topology, as before. CLUSTER_TOPOLOGY_CONF is the file.

CLUSTER_PACKAGES="slurm-wlm slurmctld slurmd munge libpmix-bin libpmix-dev bats jq iproute2"

_cluster_log() { printf 'cluster: %s\n' "$*" >&2; }

# Installs what is missing; does nothing (and needs no network) otherwise.
cluster_install_deps() {
  local need=0 cmd
  for cmd in slurmctld slurmd munged srun sbatch sinfo bats jq ss ip; do
    command -v "$cmd" >/dev/null 2>&1 || need=1
  done
  # Not mpi_pmix: Debian's Slurm 26.05 (sid) ships none; tests that need
  # it skip there (need_pmix in helpers.bash).
  [ -n "$(_cluster_sys_plugindir)" ] || need=1
  [ "$need" = 0 ] && return 0
  _cluster_log "installing $CLUSTER_PACKAGES"
  # shellcheck disable=SC2086 # a list of package names
  DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends $CLUSTER_PACKAGES >/dev/null
}

# A TCP port nobody listens on now. Random, so that two clusters starting
# at once are unlikely to pick the same; a clash makes a daemon fail to
# start, which cluster_start detects and retries with other ports.
_cluster_free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 30000))
    if ! ss -Htan "( sport = :$p )" 2>/dev/null | grep -q .; then
      echo "$p"
      return 0
    fi
  done
  return 1
}

_cluster_write_plugstack() { # FILE ARG...
  local file=$1
  shift
  {
    echo "# hcg test cluster: written by tests/cluster/cluster.sh"
    echo "required $CLUSTER_PLUGIN $*"
  } >"$file.tmp" && mv -f "$file.tmp" "$file"
}

# shellcheck disable=SC2120 # arguments are optional
cluster_plugstack() {
  _cluster_write_plugstack "$CLUSTER_PLUGSTACK" "$@"
}

# Replaces the node's plugstack.conf with TEXT, e.g. an include line.
cluster_plugstack_raw() { # TEXT
  printf '%s\n' "$1" >"$CLUSTER_PLUGSTACK.tmp" &&
    mv -f "$CLUSTER_PLUGSTACK.tmp" "$CLUSTER_PLUGSTACK"
}

cluster_conf_variant() { # NAME ARG...
  local name=$1
  shift
  local d="$CLUSTER_DIR/variants/$name"
  mkdir -p "$d"
  chmod 755 "$CLUSTER_DIR/variants" "$d"
  _cluster_write_plugstack "$d/plugstack.conf" "$@"
  sed "s|^PlugStackConfig=.*|PlugStackConfig=$d/plugstack.conf|" \
    "$CLUSTER_DIR/etc/slurm.conf" >"$d/slurm.conf"
  chmod 644 "$d/slurm.conf" "$d/plugstack.conf"
  echo "$d/slurm.conf"
}

cluster_node_state() { # [NODE]
  sinfo -h -N -n "${1:-$CLUSTER_NODE}" -o '%T' 2>/dev/null | head -n 1
}

# "idle" when every node is idle.
_cluster_all_state() {
  sinfo -h -N -o '%T' 2>/dev/null | sort -u | tr '\n' ' ' | sed 's/ $//'
}

cluster_wait_idle() {
  local limit=${1:-60}
  for _ in $(seq 1 $((limit * 4))); do
    if [ -z "$(squeue -h -o %i 2>/dev/null)" ] &&
      [ "$(_cluster_all_state)" = idle ]; then
      return 0
    fi
    sleep 0.25
  done
  return 1
}

cluster_logs() {
  local f
  for f in "$CLUSTER_LOGS"/*.log; do
    [ -f "$f" ] || continue
    echo "===== $f (last 40 lines) ====="
    tail -n 40 "$f"
  done >&2
}

# After a failed test: what the cluster was doing (the queue with its steps,
# every job left, the end of every daemon's log), printed to stderr where
# bats shows it with the failure; then every job left is cancelled so that
# the next test starts on an idle cluster.
cluster_after_failure() {
  {
    echo "===== squeue (jobs, then steps) ====="
    squeue -a 2>&1
    squeue -a -s 2>&1
    local id
    for id in $(squeue -h -a -o %i 2>/dev/null); do
      echo "===== scontrol show job $id ====="
      scontrol -d show job "$id" 2>&1
    done
  } >&2
  cluster_logs
  squeue -h -a -o %i 2>/dev/null | xargs -r scancel 2>/dev/null
  cluster_wait_idle 30 || echo "cluster: not idle 30 s after the failed test" >&2
}

# Whether this Slurm ships topology/KIND (its plugin file is installed).
cluster_has_topology() { # KIND
  local dir
  dir=$(_cluster_sys_plugindir)
  [ -n "$dir" ] && [ -f "$dir/topology_$1.so" ]
}

# Skips a bats test that needs srun --mpi=pmix where this Slurm cannot do it.
need_pmix() {
  [ "${CLUSTER_PMIX:-1}" = 1 ] ||
    skip "SKIP: this Slurm has no mpi_pmix plugin (srun --mpi=pmix cannot run)"
}

_cluster_pid_alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

_cluster_stop_pid() { # PID NAME
  local pid=$1
  _cluster_pid_alive "$pid" || return 0
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 40); do
    _cluster_pid_alive "$pid" || return 0
    sleep 0.25
  done
  _cluster_log "$2 ($pid) did not stop; killing it"
  kill -KILL "$pid" 2>/dev/null
}

# slurmstepd processes of THIS cluster: they hold files in its directory.
_cluster_stepd_pids() {
  local p fd
  for p in $(pgrep -x slurmstepd 2>/dev/null); do
    for fd in "/proc/$p/fd"/*; do
      if [[ "$(readlink "$fd" 2>/dev/null)" == "$CLUSTER_DIR/"* ]]; then
        echo "$p"
        break
      fi
    done
  done
}

cluster_stop() {
  [ -n "${CLUSTER_DIR:-}" ] && [ -d "$CLUSTER_DIR" ] || return 0
  local ids p
  if _cluster_pid_alive "${CLUSTER_CTLD_PID:-}"; then
    ids=$(squeue -h -o %i 2>/dev/null)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      scancel $ids 2>/dev/null
      cluster_wait_idle 15 || true
    fi
  fi
  _cluster_stop_pid "${CLUSTER_SLURMD_PID:-}" slurmd
  _cluster_stop_pid "${CLUSTER_SLURMD2_PID:-}" slurmd
  for p in ${CLUSTER_SLURMD_MORE_PIDS:-}; do
    _cluster_stop_pid "$p" slurmd
  done
  _cluster_stop_pid "${CLUSTER_CTLD_PID:-}" slurmctld
  for p in $(_cluster_stepd_pids); do
    _cluster_stop_pid "$p" slurmstepd
  done
  _cluster_stop_pid "${CLUSTER_MUNGED_PID:-}" munged
  _cluster_net_down
  if [ "${HCG_CLUSTER_KEEP:-0}" = 1 ]; then
    _cluster_log "kept $CLUSTER_DIR"
  else
    rm -rf "$CLUSTER_DIR"
  fi
  unset CLUSTER_DIR CLUSTER_CTLD_PID CLUSTER_SLURMD_PID CLUSTER_MUNGED_PID
  unset CLUSTER_SLURMD2_PID CLUSTER_SLURMD_MORE_PIDS
  unset SLURM_CONF
}

# Multi-node mode: a bridge on the host and a namespace for each node after
# the first (hcgn2 .. hcgnN), named after the cluster directory's random
# suffix so that clusters never share them. The node K is at 10.x.y.K.
_cluster_net_up() { # NODES
  local id=${CLUSTER_DIR##*.} k ns veth
  id=$(printf '%s' "$id" | tr -dc 'a-zA-Z0-9' | head -c 6)
  CLUSTER_NETNS=hcgns$id
  CLUSTER_BRIDGE=hcgb$id
  local a=$((RANDOM % 200 + 20)) b=$((RANDOM % 250 + 1))
  CLUSTER_ADDR=10.$a.$b.1
  CLUSTER_ADDR2=10.$a.$b.2
  CLUSTER_NET_PREFIX=10.$a.$b
  echo "$CLUSTER_BRIDGE" >"$CLUSTER_DIR/run/net"
  ip link add "$CLUSTER_BRIDGE" type bridge &&
    ip addr add "$CLUSTER_ADDR/24" dev "$CLUSTER_BRIDGE" &&
    ip link set "$CLUSTER_BRIDGE" up || return 1
  # nsenter rather than `ip -n`, which remounts "/" and so fails in a
  # chroot (the tiers of scripts/tier.sh).
  for k in $(seq 2 "$1"); do
    # hcgn2 keeps the names two-node clusters always had.
    ns=$CLUSTER_NETNS veth=hcgv$id
    [ "$k" = 2 ] || ns=$CLUSTER_NETNS-$k veth=hcgv$id$k
    echo "$ns $veth" >>"$CLUSTER_DIR/run/net"
    ip netns add "$ns" &&
      ip link add "${veth}a" type veth peer name "${veth}b" &&
      ip link set "${veth}a" master "$CLUSTER_BRIDGE" &&
      ip link set "${veth}a" up &&
      ip link set "${veth}b" netns "$ns" &&
      nsenter --net="/run/netns/$ns" \
        ip addr add "$CLUSTER_NET_PREFIX.$k/24" dev "${veth}b" &&
      nsenter --net="/run/netns/$ns" ip link set "${veth}b" up &&
      nsenter --net="/run/netns/$ns" ip link set lo up || return 1
  done
}

_cluster_net_down() {
  [ -f "$CLUSTER_DIR/run/net" ] || return 0
  local br ns veth
  {
    read -r br
    while read -r ns veth; do
      ip link del "${veth}a" 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    done
  } <"$CLUSTER_DIR/run/net"
  ip link del "$br" 2>/dev/null
  rm -f "$CLUSTER_DIR/run/net"
}

# How a node after the first gets its mount namespace (unshare's
# propagation option), or nothing when it cannot. In a chroot (the tiers of
# scripts/tier.sh) "/" is no mount point and unshare cannot make it
# private; where the mount holding the cluster's directory is private
# already (a tier runs in a namespace whose mounts were all made private,
# and says so in HCG_TIER), a new namespace's mounts reach no other, so
# propagation is left unchanged.
_cluster_propagation() { # [DIR]
  local prop
  if unshare --mount --propagation private true 2>/dev/null; then
    echo private
    return
  fi
  prop=$(findmnt -no PROPAGATION --target "${1:-/tmp}" 2>/dev/null)
  if { [ "$prop" = private ] || { [ -z "$prop" ] && [ -n "${HCG_TIER:-}" ]; }; } &&
    unshare --mount --propagation unchanged true 2>/dev/null; then
    echo unchanged
  fi
}

# Why nodes after the first cannot run here, or nothing (for tests that
# start a cluster of several nodes).
cluster_multinode_unavailable() {
  command -v ip >/dev/null && command -v nsenter >/dev/null &&
    command -v unshare >/dev/null || {
    echo "needs ip, nsenter and unshare"
    return
  }
  local probe=hcgprobe$$
  { ip netns add "$probe" && ip netns del "$probe"; } 2>/dev/null || {
    echo "network namespaces are not available here"
    return
  }
  [ -n "$(_cluster_propagation)" ] ||
    echo "mount namespaces are not available here"
}

# The namespace of node K (2 ..).
_cluster_netns_of() { # K
  if [ "$1" = 2 ]; then echo "$CLUSTER_NETNS"; else echo "$CLUSTER_NETNS-$1"; fi
}

# The cluster's nodes as a sorted Slurm host list orders them: by the name
# before the trailing number, then by that number (hcgn2, hcgn3, hcgn4, vm).
_cluster_sorted_nodes() {
  local n
  for n in ${CLUSTER_NODES//,/ }; do
    [[ $n =~ ^(.*[^0-9])?([0-9]*)$ ]]
    printf '%s\t%s\t%s\n' "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]:-0}" "$n"
  done | LC_ALL=C sort -t "$(printf '\t')" -k1,1 -k2,2n | cut -f3
}

# topology.conf for CLUSTER_TOPOLOGY (see the top of this file). Its nodes,
# and slurm.conf's, are in sorted order: Slurm gives a step its nodes in
# slurm.conf's order or in sorted order, depending on the version and the
# topology plugin (22.05 sorts; 24.11 with topology/block does not), and
# a domain must be consecutive nodes of a step, as hcg check
# --domain-size models them.
_cluster_write_topology() {
  local per=${CLUSTER_BLOCK_NODES:-2} kind=$CLUSTER_TOPOLOGY
  local -a nodes
  mapfile -t nodes < <(_cluster_sorted_nodes)
  local i k=0 members
  {
    echo "# hcg test cluster: written by tests/cluster/cluster.sh"
    for ((i = 0; i < ${#nodes[@]}; i += per)); do
      k=$((k + 1))
      members=$(IFS=,; echo "${nodes[*]:i:per}")
      if [ "$kind" = block ]; then
        echo "BlockName=b$k Nodes=$members"
      else
        echo "SwitchName=s$k Nodes=$members"
      fi
    done
    if [ "$kind" = block ]; then
      echo "BlockSizes=$per,$((2 * per))"
    else
      echo "SwitchName=s0 Switches=s[1-$k]"
    fi
  } >"$CLUSTER_TOPOLOGY_CONF"
  chmod 644 "$CLUSTER_TOPOLOGY_CONF"
}

# Slurm's own plugins; the cluster's PluginDir puts ours first, so that
# plugstack.conf may name the plugin without a path, as sites do.
# Found by a plugin every Slurm has (select/cons_tres); prints nothing
# when Slurm's plugins are not installed.
_cluster_sys_plugindir() {
  local f
  for f in /usr/lib/*/slurm-wlm/select_cons_tres.so \
    /usr/lib64/slurm/select_cons_tres.so /usr/lib/slurm/select_cons_tres.so \
    /usr/local/lib/slurm/select_cons_tres.so; do
    [ -f "$f" ] && { dirname "$f"; return; }
  done
}

_cluster_write_conf() { # CTLD_PORT SLURMD_PORT
  local d=$CLUSTER_DIR
  cat >"$d/etc/slurm.conf" <<CONF
# hcg test cluster: written by tests/cluster/cluster.sh
ClusterName=hcgtest
SlurmctldHost=$CLUSTER_NODE($CLUSTER_ADDR)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket.2
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/run/slurmctld.pid
SlurmdPidFile=$d/run/slurmd-%n.pid
SlurmctldLogFile=$CLUSTER_LOGS/slurmctld.log
SlurmdLogFile=$CLUSTER_LOGS/slurmd.log
SlurmctldDebug=info
SlurmdDebug=verbose
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_hetjob_immediate
PlugStackConfig=$CLUSTER_PLUGSTACK
PluginDir=$d/plugins:$(_cluster_sys_plugindir)
SlurmdParameters=config_overrides
ReturnToService=2
InactiveLimit=0
KillWait=2
MinJobAge=2
MessageTimeout=20
MailProg=/bin/true
TmpFS=$d/tmp
CONF
  # The nodes, in sorted order where there is a topology (see
  # _cluster_write_topology).
  local k n
  local -a order=("$CLUSTER_NODE")
  for k in $(seq 2 "${CLUSTER_NODE_COUNT:-1}"); do
    [ -n "${CLUSTER_ADDR2:-}" ] && order+=("hcgn$k")
  done
  [ -z "${CLUSTER_TOPOLOGY:-}" ] || mapfile -t order < <(_cluster_sorted_nodes)
  for n in "${order[@]}"; do
    if [ "$n" = "$CLUSTER_NODE" ]; then
      echo "NodeName=$CLUSTER_NODE NodeAddr=$CLUSTER_ADDR NodeHostname=$CLUSTER_NODE CPUs=2 State=UNKNOWN"
    else
      echo "NodeName=$n NodeAddr=$CLUSTER_NET_PREFIX.${n#hcgn} CPUs=2 State=UNKNOWN"
    fi
  done >>"$d/etc/slurm.conf"
  echo "PartitionName=$CLUSTER_PARTITION Nodes=$CLUSTER_NODES Default=YES" \
    "MaxTime=INFINITE State=UP OverSubscribe=FORCE" >>"$d/etc/slurm.conf"
  if [ -n "${CLUSTER_TOPOLOGY:-}" ]; then
    _cluster_write_topology
    echo "TopologyPlugin=topology/$CLUSTER_TOPOLOGY" >>"$d/etc/slurm.conf"
  fi
  chmod 644 "$d/etc/slurm.conf"
}

_cluster_start_daemons() {
  local d=$CLUSTER_DIR
  # munged: its own key, socket, pid, seed and log, all private.
  if ! _cluster_pid_alive "${CLUSTER_MUNGED_PID:-}"; then
    munged --foreground --force \
      --key-file="$d/munge/munge.key" \
      --socket="$d/munge/munge.socket.2" \
      --pid-file="$d/munge/munged.pid" \
      --seed-file="$d/munge/munged.seed" \
      --log-file="$CLUSTER_LOGS/munged.log" \
      </dev/null >>"$CLUSTER_LOGS/munged.out" 2>&1 &
    CLUSTER_MUNGED_PID=$!
    for _ in $(seq 1 40); do
      [ -S "$d/munge/munge.socket.2" ] && break
      sleep 0.25
    done
    [ -S "$d/munge/munge.socket.2" ] || return 1
  fi
  slurmctld -D -i -f "$d/etc/slurm.conf" </dev/null \
    >>"$CLUSTER_LOGS/slurmctld.out" 2>&1 &
  CLUSTER_CTLD_PID=$!
  for _ in $(seq 1 60); do
    scontrol ping 2>/dev/null | grep -q 'is UP' && break
    _cluster_pid_alive "$CLUSTER_CTLD_PID" || return 1
    sleep 0.25
  done
  slurmd -D -f "$d/etc/slurm.conf" -N "$CLUSTER_NODE" </dev/null \
    >>"$CLUSTER_LOGS/slurmd.out" 2>&1 &
  CLUSTER_SLURMD_PID=$!
  local k propagation
  propagation=$(_cluster_propagation "$d/tmp")
  CLUSTER_SLURMD_MORE_PIDS=
  for k in $(seq 2 "${CLUSTER_NODE_COUNT:-1}"); do
    [ -n "${CLUSTER_ADDR2:-}" ] || break
    # nsenter, not `ip netns exec`: that one mounts a fresh /sys, without
    # the cgroup file system slurmd wants to see. A mount namespace gives
    # the node its own TmpFS, as real nodes have (PMIx keeps per-step
    # directories there, named the same on every node).
    mkdir -p "$d/tmp-hcgn$k"
    chmod 1777 "$d/tmp-hcgn$k"
    # shellcheck disable=SC2016 # expanded by that sh
    nsenter --net="/run/netns/$(_cluster_netns_of "$k")" \
      unshare --mount --propagation "$propagation" \
      sh -c 'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh \
      "$d/tmp-hcgn$k" "$d/tmp" \
      slurmd -D -f "$d/etc/slurm.conf" -N "hcgn$k" \
      -L "$CLUSTER_LOGS/slurmd-hcgn$k.log" </dev/null \
      >>"$CLUSTER_LOGS/slurmd-hcgn$k.out" 2>&1 &
    if [ "$k" = 2 ]; then
      CLUSTER_SLURMD2_PID=$!
    else
      CLUSTER_SLURMD_MORE_PIDS="$CLUSTER_SLURMD_MORE_PIDS $!"
    fi
  done
  export CLUSTER_SLURMD_MORE_PIDS
  for _ in $(seq 1 240); do
    [ "$(_cluster_all_state)" = idle ] && return 0
    _cluster_pid_alive "$CLUSTER_SLURMD_PID" || return 1
    _cluster_pid_alive "$CLUSTER_CTLD_PID" || return 1
    sleep 0.25
  done
  return 1
}

cluster_start() { # BUILD_DIR
  local build=${1:?usage: cluster_start BUILD_DIR}
  if [ "$(id -u)" != 0 ]; then
    _cluster_log "must run as root (slurmd starts jobs as their users)"
    return 1
  fi
  HCG_BUILD=$(cd "$build" && pwd) || return 1
  HCG_SRCDIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  HCG=$HCG_BUILD/runtime/hcg
  local so=$HCG_BUILD/spank/.libs/spank_hcg.so
  if [ ! -f "$so" ] || [ ! -x "$HCG" ]; then
    _cluster_log "build first: $so and $HCG are needed"
    return 1
  fi
  cluster_install_deps || {
    _cluster_log "cannot install $CLUSTER_PACKAGES"
    return 1
  }

  CLUSTER_DIR=$(mktemp -d /tmp/hcg-cluster.XXXXXX) || return 1
  # Readable by all: tests also run srun as an unprivileged user.
  chmod 755 "$CLUSTER_DIR"
  mkdir -p "$CLUSTER_DIR"/{etc,munge,state,spool,run,log,plugins,tmp}
  chmod 700 "$CLUSTER_DIR/state"
  chmod 1777 "$CLUSTER_DIR/tmp"
  chmod 755 "$CLUSTER_DIR/munge"
  CLUSTER_LOGS=$CLUSTER_DIR/log
  CLUSTER_NODE=$(hostname -s)
  CLUSTER_NODES=$CLUSTER_NODE
  CLUSTER_PARTITION=debug
  CLUSTER_ADDR=127.0.0.1
  CLUSTER_ADDR2=
  local count=${CLUSTER_NODE_COUNT:-1} k
  case $count in
  [1-8]) ;;
  *)
    _cluster_log "CLUSTER_NODE_COUNT=$count: 1 to 8 nodes"
    cluster_stop
    return 1
    ;;
  esac
  if [ "$count" -gt 1 ]; then
    if ! _cluster_net_up "$count"; then
      _cluster_log "cannot set up the network namespaces for $count nodes"
      cluster_stop
      return 1
    fi
    for k in $(seq 2 "$count"); do
      CLUSTER_NODES=$CLUSTER_NODES,hcgn$k
    done
  fi
  CLUSTER_TOPOLOGY_CONF=
  case ${CLUSTER_TOPOLOGY:-} in
  '') ;;
  block | tree)
    CLUSTER_TOPOLOGY_CONF=$CLUSTER_DIR/etc/topology.conf
    if ! cluster_has_topology "$CLUSTER_TOPOLOGY"; then
      _cluster_log "this Slurm has no topology/$CLUSTER_TOPOLOGY plugin"
      cluster_stop
      return 1
    fi
    ;;
  *)
    _cluster_log "CLUSTER_TOPOLOGY=$CLUSTER_TOPOLOGY: block or tree"
    cluster_stop
    return 1
    ;;
  esac
  export CLUSTER_TOPOLOGY_CONF
  local n
  for n in ${CLUSTER_NODES//,/ }; do
    mkdir -p "$CLUSTER_DIR/spool/$n"
  done
  # A copy, so that rebuilding while the cluster runs changes nothing.
  install -m 755 "$so" "$CLUSTER_DIR/plugins/spank_hcg.so"
  CLUSTER_PLUGIN=$CLUSTER_DIR/plugins/spank_hcg.so
  CLUSTER_PLUGSTACK=$CLUSTER_DIR/etc/plugstack.conf
  SLURM_CONF=$CLUSTER_DIR/etc/slurm.conf
  export SLURM_CONF CLUSTER_DIR CLUSTER_NODE CLUSTER_NODES CLUSTER_PARTITION
  export CLUSTER_LOGS
  export HCG HCG_BUILD HCG_SRCDIR CLUSTER_PLUGIN CLUSTER_PLUGSTACK
  # Variables of an enclosing job would point srun at another cluster.
  unset SLURM_JOB_ID SLURM_JOBID SLURM_STEP_ID SLURM_NTASKS SLURM_NPROCS

  dd if=/dev/urandom of="$CLUSTER_DIR/munge/munge.key" bs=1024 count=1 \
    status=none && chmod 400 "$CLUSTER_DIR/munge/munge.key" || return 1
  # shellcheck disable=SC2119 # no arguments: the defaults
  cluster_plugstack
  chmod 644 "$CLUSTER_PLUGSTACK"

  local attempt
  for attempt in 1 2 3; do
    _cluster_write_conf "$(_cluster_free_port)" "$(_cluster_free_port)"
    if _cluster_start_daemons; then
      # Whether this Slurm can run --mpi=pmix: Debian's 26.05 (sid) ships
      # no mpi_pmix plugin.
      CLUSTER_PMIX=0
      ls "$(_cluster_sys_plugindir)"/mpi_pmix*.so >/dev/null 2>&1 &&
        CLUSTER_PMIX=1
      export CLUSTER_PMIX
      _cluster_log "up: $CLUSTER_DIR (node $CLUSTER_NODE idle; mpi_pmix: $CLUSTER_PMIX)"
      return 0
    fi
    _cluster_log "start attempt $attempt failed"
    _cluster_stop_pid "${CLUSTER_SLURMD_PID:-}" slurmd
    _cluster_stop_pid "${CLUSTER_SLURMD2_PID:-}" slurmd
    for k in ${CLUSTER_SLURMD_MORE_PIDS:-}; do
      _cluster_stop_pid "$k" slurmd
    done
    _cluster_stop_pid "${CLUSTER_CTLD_PID:-}" slurmctld
    rm -rf "$CLUSTER_DIR/state"/*
  done
  _cluster_log "the cluster did not come up"
  cluster_logs
  cluster_stop
  return 1
}
