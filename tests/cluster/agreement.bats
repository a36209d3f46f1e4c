#!/usr/bin/env bats
# The agreement of hcg_comm_create on the private cluster, with no GPU: the
# test backend's HCGTEST_COMM_FAIL=RANK:STAGE (hcg-hello-test, which is
# hcg-hello linked with runtime/testing's libhcgtesting; doc/runtime.md) makes
# hcg_comm_create skip the device and NCCL and makes one rank fail on
# purpose, before the exchange (prepare) or at NCCL initialization (init).
# The PMIx exchange and agreement are real: every member of a group of the
# failed rank must return the error naming the group and the rank, at once
# rather than after a timeout, keeping no communicator; every other rank
# succeeds; each takes the documented 2 fences (plus hcg-hello's own
# exchange: 3). Run by tests/cluster/run.sh.

load runtime

setup() {
  runtime_setup
  # Without NCCL, hcg_comm_create refuses at once (HCG_ENOTSUP), hook or
  # not: there is no agreement to test (configure's summary says
  # "NCCL communicators: no").
  grep -qx '#define HCG_HAVE_NCCL 1' "$HCG_BUILD/config.h" ||
    skip "libhcg was built without NCCL: hcg_comm_create returns HCG_ENOTSUP"
  HELLO=$HCG_BUILD/runtime/hcg-hello-test # libhcg has no hook
  LAYOUT='llm:tp=2,dp=*,pp=2'
}

# failed_lines: the "comms R failed kept K fences F" lines of all tasks.
failed_lines() { task_out | grep '^comms [0-9]* failed '; }

# one_fails RANK:STAGE MESSAGE-OF-RANK MESSAGE-OF-PEERS: 8 tasks, every
# grid collection; the rank fails with its message, its 7 peers (all share
# the whole-grid group intra_dist_opt with it) with theirs; nobody keeps a
# communicator, everyone made hcg-hello's fence and the call's two, and
# nobody waited for the 20 s timeout (which starts after hcg-hello's own
# exchange, so after the last task's start: ended_soon).
one_fails() {
  export HCGTEST_COMM_FAIL=$1
  local rank=${1%%:*}
  hello_cmd 8 "$LAYOUT" "$STAMP" "$OUT" "$HELLO" --force-comm --timeout 20
  [ "$status" -ne 0 ] || { show; false; }
  task_err | grep -q "^hcg-hello: rank $rank: HCG_ENCCL: $2" || { show; false; }
  [ "$(task_err | grep -c "HCG_ENCCL: the communicator of group 'llm:[a-z_-]*' was not formed: rank $rank $3")" -eq 7 ] || { show; false; }
  [ "$(failed_lines | wc -l)" -eq 8 ] || { show; false; }
  [ "$(failed_lines | awk '{print $5 "/" $7}' | sort -u)" = "0/3" ] || { show; false; }
  ended_soon "$OUT"/stamp.* 15 || { show; false; }
}

@test "a rank that fails before the exchange: every peer learns it at once" {
  one_fails 3:prepare "HCGTEST_COMM_FAIL: rank 3 fails before the exchange" \
    "failed before NCCL initialization (NCCL error), so every member left it uninitialized"
}

@test "a rank that fails its NCCL initialization: every member aborts" {
  one_fails 5:init "HCGTEST_COMM_FAIL: rank 5 fails its NCCL initialization" \
    "failed to initialize it (NCCL error), so every member aborted it"
}

@test "only the failed rank's own groups fail; the other ranks succeed" {
  # tp groups are pairs: rank 2 shares llm:tp with rank 3, nobody else.
  export HCGTEST_COMM_FAIL=3:init
  hello 8 "$LAYOUT" --force-comm --timeout 20 --spec llm:tp
  [ "$status" -ne 0 ] || { show; false; }
  [ "$(task_err | grep -c "rank 2: HCG_ENCCL: the communicator of group 'llm:tp' was not formed: rank 3 ")" -eq 1 ] || { show; false; }
  [ "$(failed_lines | awk '{print $2}' | sort -n | tr '\n' ' ')" = "2 3 " ] || { show; false; }
  # The six others completed: hcg-hello's exchange and the call's 2 fences.
  [ "$(task_out | grep -c '^fences [0-9]* 3 exchanges 2$')" -eq 6 ] || { show; false; }
}

@test "nobody fails: 2 fences per hcg_comm_create, every rank succeeds" {
  export HCGTEST_COMM_FAIL=99:init # no such rank
  hello 8 "$LAYOUT" --force-comm --timeout 20
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$LAYOUT"
  [ "$(fence_counts)" = 3 ]
}

@test "a malformed test hook is refused by every rank, before any fence" {
  export HCGTEST_COMM_FAIL=3:later
  hello 4 'llm:tp=2,dp=*' --force-comm --timeout 20
  [ "$status" -ne 0 ] || { show; false; }
  [ "$(task_err | grep -c "HCG_EINVAL: HCGTEST_COMM_FAIL='3:later': expected RANK:prepare or RANK:init")" -eq 4 ] || { show; false; }
}

@test "no GPU and no hook: every rank fails at once with its own HCG_ECUDA" {
  if nvidia-smi -L 2> /dev/null | grep -q '^GPU'; then
    echo "SKIP: a GPU is present (this test is about a node without one)" >&3
    skip "a GPU is present"
  fi
  hello_cmd 8 "$LAYOUT" "$STAMP" "$OUT" "$HELLO" --force-comm --timeout 20
  if [ "$status" -eq 0 ]; then
    skip "a GPU is present: hcg_comm_create succeeded"
  fi
  [ "$(task_err | grep -c 'HCG_ECUDA: no CUDA device')" -eq 8 ] || { show; false; }
  [ "$(failed_lines | awk '{print $5 "/" $7}' | sort -u)" = "0/3" ] || { show; false; }
  ended_soon "$OUT"/stamp.* 15 || { show; false; }
}

@test "under valgrind: no leak or memory error on the agreement's paths" {
  command -v valgrind >/dev/null || skip "valgrind is not installed"
  local vg=$BATS_TEST_TMPDIR/vg.sh
  valgrind_wrapper "$vg"
  # One failure at initialization on 2 tasks: the agreement's puts, reads,
  # verdict and cleanup on both sides (valgrind costs ~10 s per run here).
  hello_cmd 2 'llm:tp=2' --export=ALL,HCGTEST_COMM_FAIL=1:init "$vg" \
    --force-comm --timeout 30
  [ "$(failed_lines | wc -l)" -eq 2 ] || { show; false; }
  for f in "$OUT"/vg.*.log; do
    [ ! -s "$f" ] || { cat "$f"; false; }
  done
  # Bounded fan-in on 4 tasks (HCG_FANIN=2): a group of 4 in 2 slices with
  # 2 ids, relayed by rank 2 to rank 3 after the relay fence.
  rm -f "$OUT"/vg.*.log
  hello_cmd 4 'llm:tp=1,dp=*' --export=ALL,HCGTEST_COMM_FAIL=99:init,HCG_FANIN=2 \
    "$vg" --force-comm --timeout 60
  [ "$status" -eq 0 ] || { show; cat "$OUT"/vg.*.log; false; }
  for f in "$OUT"/vg.*.log; do
    [ ! -s "$f" ] || { cat "$f"; false; }
  done
}

@test "options go through the real mapping: min_ctas alone is completed or refused" {
  # Under the hook the options are still mapped onto ncclConfig_t. min_ctas
  # without max_ctas gets NCCL's channel limit as maxCTAs (64 in 2.28) ...
  export HCGTEST_COMM_FAIL=99:init
  hello 4 'llm:tp=2,dp=*' --force-comm --timeout 20 --comm-option min_ctas=8
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(fence_counts)" = 3 ]
  # ... and one above that limit is refused by every rank, naming both
  # options, with no rank waiting for another.
  hello 4 'llm:tp=2,dp=*' --force-comm --timeout 20 --comm-option min_ctas=65
  [ "$status" -ne 0 ] || { show; false; }
  [ "$(task_err | grep -c "HCG_EINVAL: group 'llm:[a-z_-]*': hcg_comm_options.min_ctas 65 exceeds NCCL 2.[0-9]*'s channel limit 64, the default of max_ctas")" -eq 4 ] || { show; false; }
  [ "$(failed_lines | awk '{print $5 "/" $7}' | sort -u)" = "0/3" ] || { show; false; }
}

@test "bounded fan-in in hcg_comm_create: a sliced group carries one id per slice (for ncclCommInitRankScalable), each fetched with its id" {
  # 16 tasks, HCG_FANIN=4: the whole-grid group (16 members) is cut into 4
  # slices and gets 4 ids; its 8-member groups 2. The ids beyond the first
  # travel under '+KEY' next to every get of 'KEY' (from the leader) and
  # '@+KEY' next to every get of '@KEY' (from a slice's relay). NCCL needs
  # 2.23+ (ncclCommInitRankScalable); without it one id, as before.
  export HCGTEST_COMM_FAIL=99:init # no such rank: nobody fails
  HCG_FANIN=4 HCGTEST_REQUESTS=$OUT/req hello 16 "$LAYOUT" --force-comm --timeout 20
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 16 "$LAYOUT"
  # hcg-hello's own exchange (epoch 0, one id per group) comes first: count
  # the gets of hcg_comm_create's, the last epoch.
  local e relay extra relay_extra
  e=$(awk '{split($4, k, "."); if (k[2] + 0 > m) m = k[2] + 0} END {print m + 0}' "$OUT/req")
  [ "$e" -gt 0 ]
  relay=$(grep -c " hcg\.$e\.@[^+]" "$OUT/req" || true)
  relay_extra=$(grep -c " hcg\.$e\.@+" "$OUT/req" || true)
  extra=$(grep -c " hcg\.$e\.+" "$OUT/req" || true)
  echo "relay gets $relay, of extra ids: from relays $relay_extra, from leaders $extra" >&3
  [ "$relay" -gt 0 ]
  if nm -D "$HCG_BUILD"/runtime/.libs/libhcg.so 2>/dev/null | grep -q ncclCommInitRankScalable; then
    [ "$relay_extra" -eq "$relay" ]
    [ "$extra" -gt 0 ]
  else
    [ "$relay_extra" -eq 0 ] && [ "$extra" -eq 0 ]
  fi
}

# agreement_requests FILE EPOCH: "STATUS TREE" from an HCGTEST_REQUESTS
# log: the most requests one publisher answered for its status key
# (hcg.E.ready or hcg.E.done), and for one key of the tree (hcg.E.!...).
agreement_requests() {
  awk -v e="$2" '$1 == "get" {
      split($4, k, ".")
      if (k[2] != e) next
      if (k[3] == "ready" || k[3] == "done") s[$2 " " $4]++
      else if (substr(k[3], 1, 1) == "!") t[$2 " " $4]++
    }
    END {for (x in s) if (s[x] > ms) ms = s[x]; for (x in t) if (t[x] > mt) mt = t[x]
         print ms + 0, mt + 0}' "$1"
}

# last_epoch FILE: the epoch of hcg_comm_create's exchange (hcg-hello's own
# comes first).
last_epoch() {
  awk '{split($4, k, "."); if (k[2] + 0 > m) m = k[2] + 0} END {print m + 0}' "$1"
}

@test "a sliced group agrees through its slice heads: a failure anywhere reaches every member (16 tasks, HCG_FANIN=4)" {
  # The whole-grid group (16 members, 4 slices) and the 8-member groups
  # agree through slice heads (agree.c); a relayed job takes 9 fences:
  # hcg-hello's exchange and relay, then hcg_comm_create's exchange, the
  # READY tree (2), the relay, the agreement and the DONE tree (2).
  local case rank stage msg
  for case in "13:init:failed to initialize it (NCCL error), so every member aborted it" \
    "4:prepare:failed before NCCL initialization (NCCL error), so every member left it uninitialized"; do
    rank=${case%%:*}
    stage=${case#*:}
    msg=${stage#*:}
    stage=${stage%%:*}
    echo "rank $rank fails at $stage" >&3
    HCGTEST_COMM_FAIL=$rank:$stage HCG_FANIN=4 hello_cmd 16 "$LAYOUT" "$STAMP" "$OUT" "$HELLO" --force-comm --timeout 20
    [ "$status" -ne 0 ] || { show; false; }
    [ "$(task_err | grep -c "HCG_ENCCL: the communicator of group 'llm:[a-z_-]*' was not formed: rank $rank $msg")" -eq 15 ] || { show; false; }
    [ "$(failed_lines | wc -l)" -eq 16 ] || { show; false; }
    [ "$(failed_lines | awk '{print $5 "/" $7}' | sort -u)" = "0/9" ] || { show; false; }
    ended_soon "$OUT"/stamp.* 15 || { show; false; }
  done
}

@test "the agreement's requests per publisher do not grow with the world (HCG_FANIN=4, 16 and 32 tasks)" {
  # Read directly, a rank's status in a 32-member whole-grid group would be
  # read by its 31 peers. Through the tree a status is read by the members
  # of the rank's groups of at most 4 (3 each) and by its slice heads, and a
  # tree key by at most F - 1 + ceil(size / F) - 1 = 3 + 7 ranks.
  export HCGTEST_COMM_FAIL=99:init # no such rank: nobody fails
  local n e counts groups
  for n in 16 32; do
    HCG_FANIN=4 HCGTEST_REQUESTS=$OUT/req.$n hello "$n" "$LAYOUT" --force-comm --timeout 20
    [ "$status" -eq 0 ] || { show; false; }
    check_groups "$n" "$LAYOUT"
    e=$(last_epoch "$OUT/req.$n")
    counts=$(agreement_requests "$OUT/req.$n" "$e")
    groups=$(groups_of_rank 0)
    echo "$n tasks: most requests for one status key ${counts% *}, for one tree key ${counts#* } ($groups groups per rank)" >&3
    [ "${counts% *}" -gt 0 ] && [ "${counts#* }" -gt 0 ]
    [ "${counts% *}" -le $((3 * groups)) ]
    [ "${counts#* }" -le 10 ]
  done
}

@test "under valgrind: the tree's paths, a head failing and a member failing, leak nothing" {
  command -v valgrind >/dev/null || skip "valgrind is not installed"
  local vg=$BATS_TEST_TMPDIR/vg.sh r
  valgrind_wrapper "$vg"
  # 4 tasks, HCG_FANIN=2: the 4-member groups are cut into 2 slices.
  for r in 2 3; do
    rm -f "$OUT"/vg.*.log
    hello_cmd 4 'llm:tp=2,dp=*' --export=ALL,HCG_FANIN=2,HCGTEST_COMM_FAIL=$r:init \
      "$vg" --force-comm --timeout 30
    [ "$status" -ne 0 ] || { show; false; }
    [ "$(task_err | grep -c "was not formed: rank $r ")" -eq 3 ] || { show; cat "$OUT"/vg.*.log; false; }
    for f in "$OUT"/vg.*.log; do
      [ ! -s "$f" ] || { cat "$f"; false; }
    done
  done
}
