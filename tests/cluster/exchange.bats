#!/usr/bin/env bats
# libhcg's one-fence id exchange on the private cluster (real PMIx,
# srun --mpi=pmix, --overcommit): every member of every group gets the id
# its leader published, different groups get different ids, and one
# exchange costs exactly one fence; the naive exchange, a benchmark
# (bench/exchange_naive.c, run as hcg-hello-naive), gives the same ids with
# one fence per group key. Run by tests/cluster/run.sh.

load runtime

setup() {
  runtime_setup
  # hcg-hello with the naive exchange in the place of hcg_exchange_ids.
  NAIVE=$HCG_BUILD/bench/hcg-hello-naive
  [ -x "$NAIVE" ] || {
    echo "build first: $NAIVE is missing" >&2
    return 1
  }
}

# The layouts under test, with their task counts.
MOE='llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'
REMAT='llm:tp=2,gtp_remat=1,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_gtp_remat=1,expt_dp=*,pp'
NONCOLOC='vision:tp=2,dp=2; llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=2,expt_dp=*,pp'
COLOC='vision@0:tp=2,dp=6; llm@0:tp=2,cp=2,dp=*'
BIG='llm:tp=2,cp=3,dp=*,pp=2; llm/expert:expt_tp=2,ep=3,expt_dp=*,pp'
MOE_SMALL='llm:tp=2,dp=*; llm/expert:expt_tp=1,ep=2,expt_dp=*'

@test "one grid with an expert view, 16 tasks: ids agree within groups, differ across" {
  hello 16 "$MOE" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 16 "$MOE"
  [ "$(fence_counts)" = 1 ]
}

@test "ncclGetUniqueId ids (no GPU needed) travel the same way, 8 tasks" {
  hello 8 "$MOE" --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$MOE"
  [ "$(fence_counts)" = 1 ]
}

@test "5-dim grid with gtp_remat and an expert view, 8 tasks" {
  hello 8 "$REMAT" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$REMAT"
  [ "$(fence_counts)" = 1 ]
}

@test "non-colocated MIMO, 16 tasks: each module forms only its own groups" {
  hello 16 "$NONCOLOC" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 16 "$NONCOLOC"
  [ "$(fence_counts)" = 1 ]
  # vision ranks (0-3) hold no llm group and vice versa.
  if task_out | awk '$1 == "group" && $2 < 4 && $3 ~ /^llm/' | grep -q .; then false; fi
  if task_out | awk '$1 == "group" && $2 >= 4 && $3 ~ /^vision/' | grep -q .; then false; fi
  # Embedding groups belong to the language module only.
  task_out | grep -q '^group [0-9]* llm#embd '
  if task_out | grep -q 'vision#'; then false; fi
}

@test "colocated MIMO, 12 tasks: every rank forms the groups of both modules" {
  hello 12 "$COLOC" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 12 "$COLOC"
  [ "$(fence_counts)" = 1 ]
  task_out | grep -q '^group 11 vision:tp '
  task_out | grep -q '^group 11 llm:cp-tp '
}

@test "24 tasks, a grid and an expert view with every dim > 1" {
  hello 24 "$BIG" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 24 "$BIG"
  [ "$(fence_counts)" = 1 ]
}

@test "one fence per exchange call: three exchanges, three fences" {
  hello 8 "$MOE" --random-ids --no-comm --exchanges 3 --quiet
  [ "$status" -eq 0 ] || { show; false; }
  [ "$(fence_counts)" = 3 ]
  [ "$(task_out | awk '/^fences /{print $5}' | sort -u)" = 3 ]
}

@test "the naive exchange makes one fence per group key, with the same ids" {
  HELLO=$NAIVE hello 8 "$MOE" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$MOE"
  # A one-grid layout: rank 0 is in a group of every key.
  [ "$(fence_counts)" = "$(groups_of_rank 0)" ]
  [ "$(groups_of_rank 0)" -gt 10 ]
}

@test "the naive exchange in non-colocated MIMO: every rank walks every key" {
  HELLO=$NAIVE hello 16 "$NONCOLOC" --random-ids --no-comm
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 16 "$NONCOLOC"
  # One fence count for all, larger than either module's own group count.
  [ "$(fence_counts | wc -l)" -eq 1 ]
  [ "$(fence_counts)" -gt "$(groups_of_rank 0)" ]
  [ "$(fence_counts)" -gt "$(groups_of_rank 4)" ]
}

@test "a view request whose dims are all shared is its base group: one group, one key" {
  hello 8 "$MOE" --random-ids --no-comm --spec llm:pp --spec llm/expert:pp \
    --spec 'llm/expert:ep,expt_tp' --spec 'llm:tp' --spec 'llm:tp'
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$MOE"
  [ "$(groups_of_rank 3)" -eq 3 ]
  if task_out | grep -q 'llm/expert:pp'; then false; fi
  [ "$(fence_counts)" = 1 ]
}

@test "hcg-hello without flags: exchange, and communicators only with a GPU" {
  hello 8 "$MOE"
  [ "$status" -eq 0 ] || { show; false; }
  check_groups 8 "$MOE"
  if task_out | grep -q '^comms 0 skipped'; then
    task_out | grep '^comms 0 skipped' >&3 || true
    [ "$(fence_counts)" = 1 ]
  else
    [ "$(fence_counts)" = 2 ] # the printed exchange + hcg_comm_create's
  fi
}

# requests_per_publisher FILE: "MAX_PER_GROUP MAX_PER_PUBLISHER" from the
# HCGTEST_REQUESTS log of one exchange ("get PUBLISHER BY KEY" lines):
# the most requests one publisher answered for one group key, and in all.
requests_per_publisher() {
  awk '$1 == "get" {k[$2 " " $4]++; p[$2]++}
    END {for (x in k) if (k[x] > mk) mk = k[x]; for (x in p) if (p[x] > mp) mp = p[x]
         print mk + 0, mp + 0}' "$1"
}

@test "bounded fan-in: requests per publisher, counted, stay under a bound the world size does not change (HCG_FANIN=6)" {
  # Without relays the leader of the whole-grid group answers every other
  # member: 31 requests at 32 tasks. With HCG_FANIN=6 a publisher answers
  # at most 5 members of its slice and ceil(size/6) - 1 <= 5 relays per
  # group (size <= 36), at 16 and at 32 tasks alike; the exchange then
  # takes the relay fence too.
  local n counts
  # hcg-hello with libhcgtesting, which counts gets (HCGTEST_REQUESTS).
  local HELLO=$HCG_BUILD/runtime/hcg-hello-test
  HCGTEST_REQUESTS=$OUT/req.none hello 32 "$MOE_SMALL" --random-ids --no-comm --quiet
  [ "$status" -eq 0 ] || { show; false; }
  counts=$(requests_per_publisher "$OUT/req.none")
  echo "32 tasks, no relays: $counts" >&3
  [ "${counts% *}" -eq 31 ]
  [ "$(fence_counts)" = 1 ]
  for n in 16 32; do
    HCG_FANIN=6 HCGTEST_REQUESTS=$OUT/req.$n hello "$n" "$MOE_SMALL" --random-ids --no-comm
    [ "$status" -eq 0 ] || { show; false; }
    check_groups "$n" "$MOE_SMALL"
    [ "$(fence_counts)" = 2 ]
    counts=$(requests_per_publisher "$OUT/req.$n")
    echo "$n tasks, HCG_FANIN=6: $counts" >&3
    [ "${counts% *}" -le 10 ]
    # In all, for the groups it leads or relays (of its own groups).
    [ "${counts#* }" -le $((10 * $(groups_of_rank 0))) ]
  done
}

@test "under valgrind: no leak or memory error in libhcg, also on the timeout path" {
  command -v valgrind >/dev/null || skip "valgrind is not installed"
  local vg=$BATS_TEST_TMPDIR/vg.sh
  valgrind_wrapper "$vg"
  EXIT_RANK=-1 hello_cmd 4 "$MOE_SMALL" --export=ALL,EXIT_RANK=-1 "$vg" \
    --timeout 60 --exchanges 2 --no-comm
  [ "$status" -eq 0 ] || { show; cat "$OUT"/vg.*.log; false; }
  check_groups 4 "$MOE_SMALL"
  for f in "$OUT"/vg.*.log; do
    [ ! -s "$f" ] || { cat "$f"; false; }
  done
  # A task that never comes: the others leave through the timeout path,
  # in the naive exchange (hcg-hello-naive) and in the one-fence exchange
  # (hcg-hello --quiet), where rank 3 also probes rank 2, its tp leader,
  # and names it.
  local prog mode
  for prog in "$NAIVE" "$HELLO"; do
    mode=--quiet
    [ "$prog" != "$NAIVE" ] || mode=
    HELLO=$prog valgrind_wrapper "$vg"
    rm -f "$OUT"/vg.*.log
    hello_cmd 4 "$MOE_SMALL" --export=ALL,EXIT_RANK=2 "$vg" --timeout 3 $mode --no-comm --random-ids
    [ "$status" -ne 0 ]
    [ "$(task_err | grep -c HCG_ETIMEOUT)" -eq 3 ] || { show; false; }
    for f in "$OUT"/vg.*.log; do
      [ ! -s "$f" ] || { cat "$f"; false; }
    done
  done
  task_err | grep -q 'rank 3: .*rank 2, the leader of group .llm:tp., never published' || { show; false; }
}

@test "hcg_ctx_publish and hcg_ctx_fetch: each rank's own bytes, one fence a publication, fetched from any rank (8 tasks)" {
  local probe=$HCG_BUILD/tests/cluster/hcg_probe r
  [ -x "$probe" ] || skip "hcg_probe not built"
  hello_cmd 8 'tp=2,dp=*' "$probe" publish 2
  [ "$status" -eq 0 ] || { show; false; }
  for r in 0 1 2 3 4 5 6 7; do
    # Two publications (one fence each), three fetches after each.
    grep -qx "ok $r gets 6 fences 2" "$OUT/out.$r" || { show; false; }
  done
}

@test "hcg_ctx_publish: a rank that leaves without publishing: every other rank fails, naming the fence or that rank, within the timeout" {
  local probe=$HCG_BUILD/tests/cluster/hcg_probe t0 t1
  [ -x "$probe" ] || skip "hcg_probe not built"
  t0=$(date +%s)
  PROBE_SILENT=3 PROBE_TIMEOUT=10 hello_cmd 4 'tp=2,dp=*' "$probe" publish 1
  t1=$(date +%s)
  grep -qx 'silent 3' "$OUT/out.3" || { show; false; }
  # PMIx 4 (Debian 12) fails the fence at once, a process having left.
  # PMIx 5 (Debian 13) may let the fence complete without it (some ranks
  # then see PARTIAL_SUCCESS): their fetch of rank 3's bytes times out,
  # naming rank 3. Either way every other rank fails, and says why.
  [ "$(task_out | grep -cE '^bad [012] (publish .*the PMIx fence of a publication by every process|fetch 3 .*rank 3)')" -eq 3 ] ||
    { show; false; }
  echo "# the others failed after $((t1 - t0)) s (timeout 10 s): $(task_out | grep -m1 '^bad' | cut -c1-120)" >&3
  [ $((t1 - t0)) -lt 40 ] || { show; false; }
}
