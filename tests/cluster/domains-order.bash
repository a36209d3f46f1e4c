# shellcheck shell=bash
# shellcheck disable=SC2016,SC2154 # task commands in single quotes; bats sets status
# domains-order.bash - issue 41: the NVLink domain facts are where Slurm
# put the tasks, whatever order it dealt them in. Shared by
# domains-order.bats (topology/block) and domains-order-tree.bats
# (topology/tree): four nodes N0..N3 (Slurm's node order), 8 tasks, 2 on
# each, domains of two nodes out of name order (swapped: N2,N3 then N0,N1;
# interleaved: N0,N2 then N1,N3), reloaded with scontrol reconfigure on one
# cluster. No --overcommit: with it Slurm's plane gives its own task counts. Slurm 26.05 deals block (given or default) in topology order
# unless SelectTypeParameters has CR_NO_DIST_TOPO_BLOCK (a Slurm that knows
# the word is asked for both); earlier Slurms deal in name order.
#
# Nothing here predicts Slurm's order: every case reads each rank's domain
# from its own SLURM_TOPOLOGY_ADDR and checks against it, for the layouts
# LAYOUTS (tp and ep on the domain list, groups that fit and cross) and
# the distributions DISTS:
#   - every rank's HCG_WORLD_{TP,EP}_DOMAIN_LOCAL is what its group's
#     domains say; no "not checked";
#   - warn: one warning when a group crosses, none otherwise, and a
#     suggested --distribution holds when run;
#   - refuse: all tasks or none (no marker), as the crossing says.
# Each case prints "case: TOPO DIST LAYOUT: crosses|fits" on fd 3.

# tp=4 spans two nodes; ep=2 pairs ranks r and r+4. Both fit or cross
# depending on the order. Refuse runs for REFUSE_DISTS only, and
# CR_NO_DIST_TOPO_BLOCK (which changes block only) for FLAG_DISTS, to keep
# the file short; domains-order-tree.bats sets DISTS to fewer.
LAYOUTS=('tp=4,dp=2' 'tp=2,dp=2,ep=2')
DISTS=(none block cyclic plane=2)
REFUSE_DISTS=' none '
FLAG_DISTS=(none block)

# Whether this Slurm knows CR_NO_DIST_TOPO_BLOCK (the word in its library,
# not its version).
order_has_no_topo_flag() {
  local f
  for f in /usr/lib/*/slurm-wlm/libslurmfull*.so /usr/lib64/slurm/libslurmfull*.so \
    /usr/lib/slurm/libslurmfull*.so /usr/local/lib/slurm/libslurmfull*.so; do
    [ -f "$f" ] && grep -qa CR_NO_DIST_TOPO_BLOCK "$f" && return 0
  done
  return 1
}

# N0..N3: the node names in Slurm's node order (cyclic deals in it).
order_nodes() {
  local id name
  NODE=()
  while read -r id name; do NODE[id]=$name; done < <(
    timeout -k 5 60 srun -N 4 -n 4 --distribution=cyclic /bin/bash -c \
      'echo "$SLURM_NODEID $SLURMD_NODENAME"')
  [ "${#NODE[@]}" -eq 4 ]
}

# Writes topology.conf: domains of node indexes ("2 3" "0 1"), and the
# SelectTypeParameters (FLAG: CR_NO_DIST_TOPO_BLOCK or empty), then
# reloads the cluster and waits until every node's address says so.
#   order_config "2 3" "0 1" [FLAG]
order_config() {
  local a=$1 b=$2 flag=${3:-} i k addr
  local -a want
  {
    echo "# hcg test cluster: domains-order.bash"
    k=0
    for i in "$a" "$b"; do
      k=$((k + 1))
      local names
      # shellcheck disable=SC2086
      names=$(for x in $i; do printf '%s,' "${NODE[x]}"; done)
      if [ "$CLUSTER_TOPOLOGY" = block ]; then
        echo "BlockName=b$k Nodes=${names%,}"
      else
        echo "SwitchName=s$k Nodes=${names%,}"
      fi
      for x in $i; do want[x]=$k; done
    done
    if [ "$CLUSTER_TOPOLOGY" = block ]; then
      echo "BlockSizes=2,4"
    else
      echo "SwitchName=s0 Switches=s[1-2]"
    fi
  } >"$CLUSTER_TOPOLOGY_CONF"
  sed -i "s/^SelectTypeParameters=.*/SelectTypeParameters=CR_Core${flag:+,$flag}/" \
    "$CLUSTER_DIR/etc/slurm.conf"
  scontrol reconfigure || return 1
  for k in $(seq 1 60); do
    sleep 1
    addr=$(timeout -k 5 30 srun -N 4 -n 4 --distribution=cyclic /bin/bash -c \
      'echo "$SLURM_NODEID $SLURM_TOPOLOGY_ADDR"' 2>/dev/null | sort) || continue
    local ok=1 id ad
    while read -r id ad; do
      [[ $ad =~ [bs]${want[id]}\.[^.]*$ ]] || ok=0
    done <<<"$addr"
    [ "$ok" = 1 ] && [ "$(wc -l <<<"$addr")" -eq 4 ] && return 0
  done
  echo "the nodes' addresses never matched: $addr"
  return 1
}

# One step of 8 tasks; each writes its domain and HCG_*_DOMAIN_LOCAL.
#   order_run LAYOUT DIST POLICY   (output and status as `run` sets them)
order_run() {
  local -a d=()
  [ "$2" = none ] || d=(--distribution="$2")
  rm -f "$OUT"/t.*
  run timeout -k 5 60 srun -N 4 -n 8 "${d[@]}" \
    --hcg-layout="$1" --hcg-placement="$3" /bin/bash -c \
    '{ a=${SLURM_TOPOLOGY_ADDR%.*}; echo "DOMAIN=${a##*.}"; env | grep -E "^HCG_WORLD_.*DOMAIN_LOCAL=" | sort; } >"$0/t.$SLURM_PROCID"' \
    "$OUT"
}

# From the t.* files of a run: DOM[r], the domain of rank r.
order_domains() {
  local r
  DOM=()
  for r in 0 1 2 3 4 5 6 7; do
    DOM[r]=$(sed -n 's/^DOMAIN=//p' "$OUT/t.$r")
    [ -n "${DOM[r]}" ] || return 1
  done
}

# The HCG_WORLD_{TP,EP}_DOMAIN_LOCAL lines rank r must have (dims listed
# fastest first), from DOM.
order_expect() { # LAYOUT RANK
  local stride=1 dim n base j m loc
  local -a parts
  IFS=, read -ra parts <<<"$1"
  for p in "${parts[@]}"; do
    dim=${p%%=*} n=${p#*=}
    if [ "$dim" = tp ] || [ "$dim" = ep ]; then
      base=$(($2 - (($2 / stride) % n) * stride))
      loc=1
      for ((j = 0; j < n; j++)); do
        m=$((base + j * stride))
        [ "${DOM[m]}" = "${DOM[$2]}" ] || loc=0
      done
      echo "HCG_WORLD_${dim^^}_DOMAIN_LOCAL=$loc"
    fi
    stride=$((stride * n))
  done
}

warnings() { grep -c 'hcg: warning: placement' <<<"$output" || true; }

# Every layout and distribution on the configuration in place (NAME says
# which, for fd 3).
order_cases() { # NAME DIST...
  local l dist r sug name=$1
  shift
  for dist in "$@"; do
    for l in "${LAYOUTS[@]}"; do
      order_run "$l" "$dist" warn
      [ "$status" -eq 0 ] || { echo "$name $dist $l: $output"; return 1; }
      ! grep -q 'not checked' <<<"$output" || { echo "$name $dist $l: $output"; return 1; }
      order_domains || { echo "$name $dist $l: no domain"; return 1; }
      for r in 0 1 2 3 4 5 6 7; do
        diff -u <(order_expect "$l" "$r" | sort) \
          <(grep -v '^DOMAIN=' "$OUT/t.$r") >/dev/null ||
          { echo "$name $dist $l: rank $r (domains ${DOM[*]}):"; order_expect "$l" "$r"; cat "$OUT/t.$r"; return 1; }
      done
      # Whether a group crosses (order_expect's lines, read here).
      CROSSES=0
      for r in 0 1 2 3 4 5 6 7; do
        order_expect "$l" "$r" >"$OUT/e"
        grep -q '=0$' "$OUT/e" && CROSSES=1
      done
      echo "case: $name $dist $l: domains ${DOM[*]}: $([ "$CROSSES" = 1 ] && echo crosses || echo fits)" >&3
      [ "$(warnings)" -eq "$CROSSES" ] || { echo "$name $dist $l: $output"; return 1; }
      # A suggested distribution keeps every group inside when run.
      sug=$(grep -o 'use --distribution=[a-z]*\(=[0-9]*\)\?' <<<"$output" | head -1)
      if [ -n "$sug" ]; then
        order_run "$l" "${sug#use --distribution=}" warn
        [ "$(warnings)" -eq 0 ] || { echo "$name $dist $l, suggested $sug: $output"; return 1; }
      fi
      # refuse: all or nothing.
      [[ $REFUSE_DISTS == *" $dist "* ]] || continue
      rm -f "$MARKER".*
      run timeout -k 5 60 srun -N 4 -n 8 \
        $([ "$dist" = none ] || echo "--distribution=$dist") \
        --hcg-layout="$l" --hcg-placement=refuse \
        /bin/bash -c 'touch "$0.$SLURM_PROCID"' "$MARKER"
      local ran
      ran=$(find "$(dirname "$MARKER")" -name "$(basename "$MARKER").*" | wc -l)
      if [ "$CROSSES" = 1 ]; then
        [ "$status" -ne 0 ] && [ "$ran" -eq 0 ] ||
          { echo "$name $dist $l refuse: $ran tasks ran: $output"; return 1; }
      else
        [ "$status" -eq 0 ] && [ "$ran" -eq 8 ] ||
          { echo "$name $dist $l refuse: $ran tasks ran: $output"; return 1; }
      fi
    done
  done
}

order_test() { # "A B" "C D" NAME
  order_nodes || { echo "cannot tell the node order"; return 1; }
  cluster_plugstack intra_domain_dims=tp,ep intra_node_dims=tp,ep
  order_config "$1" "$2" || return 1
  order_cases "$3" "${DISTS[@]}" || return 1
  if [ -n "${FLAG_DISTS[*]}" ] && order_has_no_topo_flag; then
    order_config "$1" "$2" CR_NO_DIST_TOPO_BLOCK || return 1
    order_cases "$3+CR_NO_DIST_TOPO_BLOCK" "${FLAG_DISTS[@]}" || return 1
  fi
  cluster_plugstack
}
