#!/usr/bin/env bats
# hcg.torch on real torch (Debian's python3-torch, gloo on CPU) under
# srun --mpi=pmix --hcg-layout: hcg.torch.init() needs nothing but srun's
# environment, and every group of every grid of every rank is a torch group
# whose size, group rank and all-reduce match the layout. Where Slurm has
# no mpi_pmix (Debian's 26.05), the same tests run with MASTER_ADDR and
# MASTER_PORT instead (rendezvous in helpers.bash), and only those about
# the PMIx broadcast skip (need_pmix). Run by tests/cluster/run.sh. Every
# srun is bounded by `timeout`.

load helpers

MOE='llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'

setup() {
  torch_setup
}

# torch_run N LAYOUT SCRIPT [ARGS...]: the script on N tasks, each task's
# output in $OUT/out.R (stderr in $OUT/err.R), bounded by 150 s.
torch_run() {
  local n=$1 layout=$2 script=$3
  shift 3
  rm -f "$OUT"/out.* "$OUT"/err.*
  rendezvous
  run timeout -k 5 150 srun -n "$n" --overcommit "${RDV[@]}" \
    --hcg-layout="$layout" --output="$OUT/out.%t" --error="$OUT/err.%t" \
    "$PY" -B "$SCRIPTS/$script" "$@"
}

outs() { cat "$OUT"/out.* 2> /dev/null; }

show() {
  echo "--- srun (status $status): $output"
  echo "--- tasks:"
  outs | head -n 20
  cat "$OUT"/err.* 2> /dev/null | head -n 40
}

# all_ok N: N tasks printed "ok", none "bad".
all_ok() {
  [ "$(outs | grep -c '^ok ')" -eq "$1" ] || { show; return 1; }
  if outs | grep -q '^bad'; then show; return 1; fi
}

@test "one grid with an expert view, 8 tasks: every field of every rank" {
  torch_run 8 "$MOE" check_groups.py
  [ "$status" -eq 0 ] || { show; false; }
  all_ok 8
  # 8 tasks on one node: rank 0 published a loopback store address.
  outs | grep -q 'store=127.0.0.1:'
  if [ "${#RDV[@]}" -gt 0 ] && [ "${RDV[0]}" = --mpi=pmix ]; then
    # Under PMIx every group met at its first member's store: rank 0's
    # served the default group and its own groups, not the job's.
    echo "# served (rank proven requests): $(outs | awk '$1 == "served" { sub("proven=", "", $3); sub("requests=", "", $4); printf "%s %s %s; ", $2, $3, $4 }')" >&3
    local busy total r0
    busy=$(outs | awk '$1 == "served" && $4 != "requests=0"' | wc -l)
    total=$(outs | awk '$1 == "served" { sub("requests=", "", $4); t += $4 } END { print t + 0 }')
    r0=$(outs | awk '$1 == "served" && $2 == 0 { sub("requests=", "", $4); print $4 }')
    [ "$busy" -ge 2 ] || { show; false; }
    [ "$r0" -lt "$total" ] || { show; false; }
  fi
}

@test "no secret on the wire: 8 tasks through relays, every TCP byte of every task and store traced" {
  need_pmix # the secrets and the relays are PMIx's
  command -v strace > /dev/null || skip "no strace"
  rm -f "$OUT"/out.* "$OUT"/err.* "$OUT"/trace.* "$OUT"/secret.*
  rendezvous
  # HCG_FANIN=8: slices of 2, so the default group and every group of 3 or
  # more meet through relays up to 3 hops. strace follows each task and its
  # store's process and writes every byte they send, in hex; only what
  # goes over TCP is searched, but for each task's connection to its
  # node's PMIx server (Slurm's, on loopback here), which carries its
  # publication: PMIx's channel, as a head's pipe to its store is its own.
  # shellcheck disable=SC2016 # expanded by the task's shell
  HCG_FANIN=8 HCGTEST_SECRET_DIR=$OUT run timeout -k 5 300 srun -n 8 --overcommit \
    "${RDV[@]}" --hcg-layout="$MOE" --output="$OUT/out.%t" --error="$OUT/err.%t" \
    /bin/bash -c 'exec strace -f -qq -yy -xx -s 1048576 -e trace=sendto,sendmsg,write,writev \
      -o "$0/trace.$SLURM_PROCID" "$1" -B "$2"' "$OUT" "$PY" "$SCRIPTS/check_groups.py"
  [ "$status" -eq 0 ] || { show; false; }
  all_ok 8
  [ "$(find "$OUT" -name 'secret.*' | wc -l)" -eq 8 ] || { show; false; }
  run "$PY" - "$OUT" <<'EOF'
import glob, os, re, sys
out = sys.argv[1]
secrets = [open(f).read().strip() for f in glob.glob(os.path.join(out, "secret.*"))]
pmix = set()
for name in glob.glob(os.path.join(out, "pmix.*")):
    pmix |= set(re.findall(r"tcp4?://([^;,\s]*:\d+)", open(name).read()))
tcp = []
for name in glob.glob(os.path.join(out, "trace.*")):
    with open(name) as f:
        for line in f:
            # strace -yy: "sendto(5<TCP:[HOST:PORT->HOST:PORT]>, ..."
            m = re.search(r"<TCP[^\[]*\[([^\]]*)\]>", line)
            if m and m.group(1).split("->")[-1] not in pmix:
                tcp.append(line)
text = "".join(tcp)
found = 0
for hexed in secrets:
    raw = bytes.fromhex(hexed)
    for form in (raw, hexed.encode(), hexed.upper().encode()):
        found += text.count("".join("\\x%02x" % b for b in form))
print("%d secrets, %d sends over TCP (%d bytes traced), found %d times"
      % (len(secrets), len(tcp), len(text) // 4, found))
print("PMIx servers left out: %s" % " ".join(sorted(pmix)))
sys.exit(1 if found or len(secrets) != 8 or len(tcp) < 100 or not pmix else 0)
EOF
  sed "s/^/# /" <<<"$output" >&3
  [ "$status" -eq 0 ] || { show; false; }
}

@test "two steps at once on one node: no port collision" {
  need_pmix # the free port rank 0 picks goes through PMIx
  local a=$BATS_TEST_TMPDIR/a b=$BATS_TEST_TMPDIR/b
  mkdir -p "$a" "$b"
  chmod 777 "$a" "$b"
  # Two tasks each: every rank of both picks a port of its own.
  timeout -k 5 150 srun -n 2 --overcommit --mpi=pmix --hcg-layout='tp=2' \
    --output="$a/out.%t" "$PY" -B "$SCRIPTS/check_groups.py" &
  local pa=$!
  timeout -k 5 150 srun -n 2 --overcommit --mpi=pmix --hcg-layout='tp=2' \
    --output="$b/out.%t" "$PY" -B "$SCRIPTS/check_groups.py" &
  local pb=$!
  wait "$pa"
  wait "$pb"
  [ "$(cat "$a"/out.* | grep -c '^ok ')" -eq 2 ]
  [ "$(cat "$b"/out.* | grep -c '^ok ')" -eq 2 ]
}

@test "MASTER_ADDR and MASTER_PORT, when set, are honoured (no PMIx needed)" {
  local port
  port=$(_cluster_free_port)
  # No --mpi=pmix: the variables are all init() needs.
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port torch_run 2 'tp=2' check_groups.py
  [ "$status" -eq 0 ] || { show; false; }
  all_ok 2
  [ "$(outs | grep -c "store=127.0.0.1:$port\$")" -eq 2 ]
}

# after_below FILES... LIMIT: every "after S s" line of these task outputs
# has S below LIMIT seconds.
after_below() {
  local limit=${*: -1}
  cat "${@:1:$#-1}" | awk -v l="$limit" '$1 == "after" && $2 >= l { bad = 1 } END { exit bad }'
}

# one_rank_fails R [D...]: rank R's RANK disagrees with the layout, so it
# fails in init() before the others could know; they must name it at once.
# Ranks D (rank 0's when R is 0) read its failure in its publication (R is
# the head of their slice; under PMIx only); the others at the store they
# meet at. NTASKS:
# the job's tasks (default 4).
one_rank_fails() {
  local bad=$1 r n=${NTASKS:-4}
  rendezvous
  rm -f "$OUT"/out.* "$OUT"/err.*
  # shellcheck disable=SC2016 # expanded by the task's shell
  run timeout -k 5 150 srun -n "$n" --overcommit "${RDV[@]}" --hcg-layout='tp=2,dp=*' \
    --output="$OUT/out.%t" --error="$OUT/err.%t" /bin/bash -c \
    'if [ "$SLURM_PROCID" = "$2" ]; then export RANK=7; fi; exec "$0" -B "$1" init' \
    "$PY" "$SCRIPTS/faults.py" "$bad"
  [ "$status" -eq 0 ] || { show; return 1; }
  grep -q "error EMISMATCH: RANK=7 but the hcg layout says $bad" "$OUT/out.$bad" || { show; return 1; }
  local others=()
  for ((r = 0; r < n; r++)); do
    [ "$r" = "$bad" ] && continue
    others+=("$OUT/out.$r")
    if [ "$bad" = 0 ] || { [ "${#RDV[@]}" -gt 0 ] && [[ " ${*:2} " == *" $r "* ]]; }; then
      # Its publication says its failure instead of its store's address
      # (under PMIx: with MASTER_ADDR and MASTER_PORT there is none, and
      # every rank meets at rank 0's store, where it reads the failure).
      grep -q "error EMISMATCH: hcg.torch.init: rank $bad failed before it published the address of its store: EMISMATCH: RANK=7" "$OUT/out.$r" || { show; return 1; }
    else
      grep -q "error EMISMATCH: the default process group ($n ranks, store .*) cannot form: rank $bad failed: EMISMATCH: RANK=7" "$OUT/out.$r" || { show; return 1; }
    fi
    grep -q "^peer $bad\$" "$OUT/out.$r" || { show; return 1; }
  done
  echo "# rank $bad failed after $(grep '^after' "$OUT/out.$bad" | cut -d' ' -f2) s; the others after: $(cat "${others[@]}" | grep '^after' | cut -d' ' -f2 | tr '\n' ' ')s (timeout 60 s)" >&3
  # At once: well inside init's 60 s timeout, counted from the last start.
  ended_soon "$OUT"/out.* 30 || { show; return 1; }
  if cat "$OUT"/err.* | grep -q Traceback; then show; return 1; fi
}

@test "rank 0 fails before the broadcast (its RANK disagrees): the others name it at once" {
  need_pmix # rank 0 tells the others through the PMIx broadcast
  one_rank_fails 0
}

@test "another rank fails in init (its RANK disagrees): the others name it at once" {
  # HCG_FANIN=8: 2 members a store, so rank 3 would meet through rank 2's
  # store, which never opened: it reads why in rank 2's publication (its
  # only read); rank 2 reports at rank 0's store, where 0 and 1 read it.
  HCG_FANIN=8 one_rank_fails 2 3
}

@test "a slice head fails in init, 8 tasks through relays: every rank names it at once" {
  need_pmix # the relays are PMIx's: MASTER_ADDR has one store
  # HCG_FANIN=8: slices of 2, 3 levels (rank 7 meets through 6 and 4 to 0).
  # Rank 4 never opens its store: 5 reads why in its publication; 6, whose
  # next store up it was, too, and its store becomes 7's meeting, where 6
  # reports it; 4 reports at rank 0's store, where 0 to 3 read it.
  HCG_FANIN=8 NTASKS=8 one_rank_fails 4 5 6
}

@test "rank 0 cannot open its store: the others name it and its reason" {
  need_pmix # rank 0 tells the others through the PMIx broadcast
  # 192.0.2.1 (TEST-NET-1) is no address of this node: rank 0 cannot
  # publish it (torch's store itself would find out only when its own
  # client gave up, after init's timeout or later).
  # init's timeout is the default 60 s: the tasks may start many seconds
  # apart on a loaded node (torch's import), and they must not time out
  # waiting for rank 0's publication.
  MASTER_ADDR=192.0.2.1 torch_run 4 'tp=2,dp=*' faults.py init
  [ "$status" -eq 0 ] || { show; false; }
  grep -q "error EIO: rank 0 could not open hcg.torch's store on 192.0.2.1: that is no address of this host" "$OUT/out.0" || { show; false; }
  local r t0
  for r in 1 2 3; do
    grep -q "error EIO: hcg.torch.init: rank 0 failed before it published the address of its store: EIO: rank 0 could not open hcg.torch's store" "$OUT/out.$r" || { show; false; }
    grep -q '^peer 0$' "$OUT/out.$r" || { show; false; }
  done
  t0=$(grep '^after' "$OUT/out.0" | cut -d' ' -f2)
  echo "# rank 0 failed after $t0 s; the others after: $(cat "$OUT"/out.[123] | grep '^after' | cut -d' ' -f2 | tr '\n' ' ')s" >&3
  # As soon as rank 0 failed (they used to wait for the fence and then the
  # get, the timeout twice after it): within 8 s of the last one's start.
  ended_soon "$OUT"/out.[0123] 8 || { show; false; }
  if cat "$OUT"/err.* | grep -q Traceback; then show; false; fi
}

@test "rank 0 never calls init: the others fail once the timeout passes, not twice" {
  need_pmix # the PMIx publication's fence, then a get, within one timeout
  torch_run 4 'tp=2,dp=*' faults.py absent0 25
  [ "$status" -eq 0 ] || { show; false; }
  local r
  for r in 1 2 3; do
    grep -q "error ETIMEOUT: .*a publication by every process timed out" "$OUT/out.$r" || { show; false; }
  done
  echo "# timeout 10 s; the others failed after: $(cat "$OUT"/out.[123] | grep '^after' | cut -d' ' -f2 | tr '\n' ' ')s" >&3
  # The fence's 10 s and the get's 10 s were 20 s and more.
  after_below "$OUT"/out.[123] 18 || { show; false; }
}

@test "a RANK that disagrees with the layout: a clear error, no hang" {
  RANK=5 torch_run 2 'tp=2' faults.py init
  [ "$(outs | grep -c 'error EMISMATCH: RANK=5 but the hcg layout says')" -ge 1 ] || { show; false; }
  if cat "$OUT"/err.* | grep -q Traceback; then show; false; fi
}

@test "not under srun --hcg-layout: a clear error" {
  run env -u HCG_LAYOUT -u HCG_VERSION timeout 60 "$PY" -B "$SCRIPTS/faults.py" init
  [ "$status" -eq 0 ]
  [[ "$output" == *"error EENV: hcg.torch.init: this process has no hcg layout"* ]]
}

@test "a member that never arrives: the others name the group and the rank" {
  torch_run 4 'tp=2,dp=*' faults.py missing 3
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(outs | grep -c "error ETIMEOUT: process group 'world:.*ranks 3 never arrived")" -eq 3 ] || { show; false; }
  if cat "$OUT"/err.* | grep -q Traceback; then show; false; fi
}

@test "the example: tp=2, dp=2 training matches one process to rounding" {
  local ex=$SRCDIR/contrib/python/examples/train_tiny.py
  rm -f "$OUT"/out.* "$OUT"/err.*
  rendezvous
  run timeout -k 5 150 srun -n 4 --overcommit "${RDV[@]}" --hcg-layout='tp=2,dp=*' \
    --output="$OUT/out.%t" --error="$OUT/err.%t" "$PY" -B "$ex"
  [ "$status" -eq 0 ] || { show; false; }
  "$PY" -B "$ex" --reference > "$OUT/reference" 2> /dev/null
  [ "$(grep -c '^step' "$OUT/out.0")" -eq 5 ] || { show; false; }
  [ "$(grep -c '^step' "$OUT/reference")" -eq 5 ] || { cat "$OUT/reference"; false; }
  same_losses "$OUT/reference" "$OUT/out.0"
}

# The colocated bridges, every check on every rank of 8 (forward rows,
# full-sequence backward, the cp control when dest cp > 1, the oracle), all
# pairs in one srun over five colocated grids, and then bad input on the
# fan-out audio -> vision: one start of torch per task instead of one per
# pair (each srun of 8 costs CI about 20 CPU seconds of imports per tier).
BRIDGE_GRIDS='vision@0:tp=2,dp=4; audio@0:tp=4,dp=2; llm@0:tp=2,cp=2,dp=2; video@0:tp=1,cp=2,dp=4; image@0:tp=1,dp=8'
# NAME SRC:DEST (SRC -> DEST)
BRIDGE_PAIRS='fan-in vision:audio (TP2/DP4 -> TP4/DP2)
fan-in-cp2 vision:llm (TP2/DP4 -> TP2/CP2/DP2)
fan-out audio:vision (TP4/DP2 -> TP2/DP4)
fan-out-cp2 audio:video (TP4/DP2 -> TP1/CP2/DP4)
fan-in-4 image:audio (TP1/DP8 -> TP4/DP2)
fan-in-4-cp2 image:llm (TP1/DP8 -> TP2/CP2/DP2)
passthrough-cp2 vision:video (TP2/DP4 -> TP1/CP2/DP4)'

# bridge_bad_input: rank 0's checks of bad input name the values, and no
# task printed a traceback (hcg's errors, nothing sent).
bridge_bad_input() {
  local o
  o=$(outs | grep '^check 0 ')
  [[ "$o" == *"fan-out batch 3 => EBRIDGE: bridge audio -> vision (fan-out, scale 2): a batch of 3 rows does not split in 2"* ]] &&
    [[ "$o" == *"wrong rows => EINVAL: bridge audio -> vision: input has 5 rows, the bridge was set up for 4"* ]] &&
    [[ "$o" == *"src cp 2 => EBRIDGE"*"cp"* ]] &&
    [[ "$o" == *"cp after dp => EBRIDGE"*"cp before dp"* ]] &&
    [[ "$o" == *"src pp 2 => EBRIDGE"* ]] &&
    [[ "$o" == *"device name => EINVAL: NonColocatedBridge: device='nowhere' is not a torch device"* ]] &&
    [[ "$o" == *"device mismatch => EINVAL: bridge vision -> llm: the tensor to send is on meta; this bridge sends and receives on cpu"* ]] &&
    ! cat "$OUT"/err.* | grep -q Traceback
}

@test "colocated MIMO, 8 tasks, groups through relays: every module's groups on every rank, then the bridges: fan-in, fan-out, by 4, to cp 2, passthrough (7 pairs), bad input" {
  local pairs=() name pair rest want src dest p
  while read -r name pair rest; do pairs+=("$pair"); done <<<"$BRIDGE_PAIRS"
  # HCG_FANIN=8: 2 members a store, so every group of 3 or more, the
  # default group too, meets through its slices' heads (rank 7 through 6
  # and 4 to rank 0), under PMIx; without it, at rank 0's store.
  HCG_FANIN=8 torch_run 8 "$BRIDGE_GRIDS" check_bridge.py colocated "${pairs[@]}" bad=audio:vision
  [ "$status" -eq 0 ] || { show; false; }
  if outs | grep -q '^bad'; then show; false; fi
  # Every rank is in all five grids: their groups, every field, first.
  [ "$(outs | grep -c '^ok [0-9]* groups fields=')" -eq 8 ] || { show; false; }
  if [ "${#RDV[@]}" -gt 0 ] && [ "${RDV[0]}" = --mpi=pmix ]; then
    # The heads' stores forwarded the groups' keys to their leaders'.
    echo "# relays (rank forwarded links proven): $(outs | awk '$1 == "relayed" { printf "%s %s %s %s; ", $2, $3, $4, $5 }')" >&3
    [ "$(outs | awk '$1 == "relayed" { sub("forwarded=", "", $3); t += $3 } END { print t + 0 }')" -gt 0 ] || { show; false; }
  fi
  bridge_bad_input || { show; false; }
  while read -r name pair rest; do
    src=${pair%%:*} dest=${pair#*:} p="${pair%%:*}>${pair#*:}"
    # forward, backward, oracle on 8 ranks; the cp control too into cp 2
    want=24
    case $dest in llm | video) want=32 ;; esac
    [ "$(outs | grep -c "^ok [0-9]* $p ")" -eq "$want" ] || {
      echo "$name $rest: $(outs | grep -c "^ok [0-9]* $p ") checks passed, want $want"
      show
      false
    }
    echo "# $name $rest: $(outs | grep -m1 "$p forward" | cut -d' ' -f5-); oracle $(outs |
      grep "$p oracle" | awk '{print $NF}' | sort -g | tail -n 1)" >&3
  done <<<"$BRIDGE_PAIRS"
}

@test "non-colocated MIMO, 12 tasks: each module only makes its own groups, then the bridges' fan-in and fan-out between lane leaders" {
  # vision (ranks 0-3) -> audio (4-7) -> llm (8-11): the same 12 tasks make both.
  torch_run 12 'vision:tp=1,dp=4; audio:tp=2,dp=2; llm:tp=1,dp=4' check_bridge.py noncolocated \
    vision:audio audio:llm
  [ "$status" -eq 0 ] || { show; false; }
  if outs | grep -q '^bad'; then show; false; fi
  # Each rank checked the groups of its own module only (new_collections).
  [ "$(outs | grep -c '^ok [0-9]* groups fields=')" -eq 12 ] || { show; false; }
  # 4 src leaders (0-3) send to 2 dest leaders (4, 6): fan-in.
  [ "$(outs | grep -c '^ok [0-3] vision>audio backward')" -eq 4 ] || { show; false; }
  [ "$(outs | grep -cE '^ok (4|6) vision>audio forward fan-in')" -eq 2 ] || { show; false; }
  # 2 src leaders (5, 7) send to 4 dest leaders (8-11): fan-out.
  [ "$(outs | grep -cE '^ok (5|7) audio>llm backward')" -eq 2 ] || { show; false; }
  [ "$(outs | grep -cE '^ok (8|9|10|11) audio>llm forward fan-out')" -eq 4 ] || { show; false; }
  [ "$(outs | grep -c '^ok ')" -eq 24 ] || { show; false; }
}

@test "NCCL backend (one GPU per communicator)" {
  "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    skip "SKIP: no CUDA device"
  local n
  n=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
  [ "$n" -ge 1 ]
  torch_run 1 'tp=1' check_groups.py nccl
  [ "$status" -eq 0 ] || { show; false; }
  all_ok 1
}

@test "NCCL path of the bridge: a passthrough and a one-rank group, one rank" {
  "$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' ||
    skip "SKIP: no CUDA device"
  torch_run 1 'vision@0:tp=1,dp=1; llm@0:tp=1,dp=1' nccl_bridge.py
  [ "$status" -eq 0 ] || { show; false; }
  all_ok 3
}
