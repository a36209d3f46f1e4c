/*
 * test_round.c - collective rounds (runtime/lib/round.h): for many job
 * sizes and fan-ins, every process takes the same fences in the same
 * order, with the same names and timeouts, whichever of its steps fails;
 * a failed fence ends the round there.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "round.h"
#include "runtime_test.h"
#include "slice.h"

#define MAX_TAKEN 16

/* What one process did in a round, recorded by its fence and steps. */
struct trace {
  int n;
  char what[MAX_TAKEN][64];
  int timeout[MAX_TAKEN];
  int fail_at;  /* the step (2k: before fence k, 2k+1: after) that fails */
  int steps;    /* steps run */
  int break_at; /* the fence (index) that fails, or -1 */
};

static struct trace *current;

static int record_fence(hcg_ctx *ctx, int timeout_s, const char *what,
                        hcg_error *err) {
  (void)ctx;
  struct trace *t = current;
  ck_assert_int_lt(t->n, MAX_TAKEN);
  snprintf(t->what[t->n], sizeof t->what[t->n], "%s", what);
  t->timeout[t->n] = timeout_s;
  if (t->n++ == t->break_at)
    return hcg__fail(err, HCG_ETIMEOUT, "fence %s timed out", what);
  return HCG_OK;
}

static void failing_step(struct hcgrt_round *r, void *arg) {
  struct trace *t = arg;
  if (t->steps++ == t->fail_at)
    hcgrt_round_note(r, hcg__fail(hcgrt_round_err(r), HCG_ENCCL,
                                  "step %d failed", t->fail_at));
}

/* Runs a round of `table` as rank `rank` of a job, its step number fail_at
 * failing (-1: none), its fence number break_at failing (-1: none). */
static int run_one(const struct hcgrt_round_table *table, int world, int fanin,
                   int rank, int fail_at, int break_at, struct trace *t,
                   hcg_error *err) {
  hcg_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  ctx.rank = rank;
  ctx.world = world;
  ctx.fanin = fanin;
  ctx.timeout_s = 30;
  memset(t, 0, sizeof *t);
  t->fail_at = fail_at;
  t->break_at = break_at;
  struct hcgrt_round r;
  /* A step before and after every fence, so that each can fail. */
  struct hcgrt_round_steps steps;
  for (int f = 0; f < HCGRT_FENCES; f++)
    steps.before[f] = steps.after[f] = failing_step;
  hcgrt_round_init(&r, &ctx, table, &steps, t);
  r.take = record_fence;
  r.root = world - 1;
  current = t;
  int res = hcgrt_round_run(&r);
  int rc = hcgrt_round_end(&r, err);
  if (res == HCGRT_ROUND_OK)
    ck_assert_int_eq(rc, HCG_OK);
  else if (res == HCGRT_ROUND_OWN_FAILURE)
    ck_assert_int_eq(rc, HCG_ENCCL);
  else
    ck_assert_int_eq(r.broken, r.fence[break_at]);
  /* Relays and the agreement's tree: exactly where the exchange relays. */
  int relayed = 0;
  for (int k = 0; k < r.n; k++)
    relayed |=
        r.fence[k] == HCGRT_FENCE_RELAY || r.fence[k] == HCGRT_FENCE_SLICES;
  if (table != &hcgrt_round_broadcast && table != &hcgrt_round_publish)
    ck_assert_int_eq(relayed, hcgrt_relayed(&ctx));
  return res;
}

static int same(const struct trace *a, const struct trace *b) {
  if (a->n != b->n)
    return 0;
  for (int k = 0; k < a->n; k++)
    if (strcmp(a->what[k], b->what[k]) || a->timeout[k] != b->timeout[k])
      return 0;
  return 1;
}

static const int worlds[] = {1,    2,    3,    4,    5,     7,     8,
                             9,    15,   16,   17,   31,    32,    33,
                             63,   64,   65,   100,  511,   512,   513,
                             1000, 4096, 4097, 8191, 16384, 65536, 100000};
static const int fanins[] = {2, 3, 4, 7, 8, 16, 64, 512};

START_TEST(test_round_same_fences) {
  const struct hcgrt_round_table *const kinds[] = {
      &hcgrt_round_ids, &hcgrt_round_ready, &hcgrt_round_done,
      &hcgrt_round_broadcast, &hcgrt_round_publish};
  long long runs = 0;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
    for (size_t w = 0; w < sizeof worlds / sizeof worlds[0]; w++)
      for (size_t f = 0; f < sizeof fanins / sizeof fanins[0]; f++) {
        int world = worlds[w], fanin = fanins[f];
        const struct hcgrt_round_table *kind = kinds[k];
        struct trace first, t;
        hcg_error err = HCG_ERROR_INIT;
        ck_assert_int_eq(run_one(kind, world, fanin, 0, -1, -1, &first, &err),
                         HCGRT_ROUND_OK);
        ck_assert_int_ge(first.n, 1);
        ck_assert_int_le(first.n, HCGRT_ROUND_FENCES);
        /* Every rank (a sample of the large jobs), each failing at
         * another of its steps or not at all. */
        int samples[] = {1,         fanin - 1, fanin,    fanin + 1,
                         world / 2, world - 2, world - 1};
        int nr = world <= 40 ? world : (int)(sizeof samples / sizeof *samples);
        for (int i = 0; i < nr; i++) {
          int rank = world <= 40 ? i : samples[i];
          if (rank < 0 || rank >= world)
            continue;
          int fail_at = rank % (2 * first.n + 1); /* == 2n: no failure */
          int res = run_one(kind, world, fanin, rank,
                            fail_at < 2 * first.n ? fail_at : -1, -1, &t, &err);
          runs++;
          /* A call that nothing tells of an early failure leaves at once;
           * its peers time out and name it. */
          int early = fail_at == 0 && (kind == &hcgrt_round_ids ||
                                       kind == &hcgrt_round_broadcast ||
                                       kind == &hcgrt_round_publish);
          if (early) {
            ck_assert_int_eq(t.n, 0);
            ck_assert_int_eq(res, HCGRT_ROUND_OWN_FAILURE);
            continue;
          }
          ck_assert_msg(same(&first, &t),
                        "kind %d, world %d, fan-in %d: rank %d (failing at "
                        "step %d) took %d fences, rank 0 %d",
                        (int)k, world, fanin, rank, fail_at, t.n, first.n);
          ck_assert_int_eq(res, fail_at < 2 * first.n ? HCGRT_ROUND_OWN_FAILURE
                                                      : HCGRT_ROUND_OK);
          ck_assert_msg(fail_at >= 2 * first.n ||
                            strstr(err.message, "step") != NULL,
                        "%s", err.message);
        }
      }
  ck_assert_int_gt(runs, 8000);
}
END_TEST

/* The names and timeouts that messages and tests rely on. */
START_TEST(test_round_schedules) {
  struct trace t;
  hcg_error err = HCG_ERROR_INIT;
  run_one(&hcgrt_round_ready, 8, 4, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 4);
  ck_assert_str_eq(t.what[0], "the group exchange");
  ck_assert_str_eq(t.what[1], "the agreement's slice verdicts");
  ck_assert_str_eq(t.what[2], "the agreement's group verdicts");
  ck_assert_str_eq(t.what[3], "the relay of group ids");
  run_one(&hcgrt_round_ready, 8, 8, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 1);
  run_one(&hcgrt_round_done, 8, 8, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 1);
  ck_assert_str_eq(t.what[0], "the agreement on the communicators");
  ck_assert_int_eq(t.timeout[0], 2 * 30 + 5);
  run_one(&hcgrt_round_done, 9, 8, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 3);
  run_one(&hcgrt_round_ids, 9, 8, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 2);
  ck_assert_str_eq(t.what[1], "the relay of group ids");
  ck_assert_int_eq(t.timeout[1], 30);
  run_one(&hcgrt_round_broadcast, 9, 8, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 1);
  ck_assert_str_eq(t.what[0], "a broadcast from rank 8");
  /* A publication: one fence at any size (no relay: each fetch is one get
   * from the publisher, and the caller bounds who fetches from whom). */
  run_one(&hcgrt_round_publish, 100000, 512, 3, -1, -1, &t, &err);
  ck_assert_int_eq(t.n, 1);
  ck_assert_str_eq(t.what[0], "a publication by every process");
  ck_assert_int_eq(t.timeout[0], 30);
}
END_TEST

/* A failed fence ends the round there; this rank's own failure is still
 * what the call reports. */
START_TEST(test_round_broken) {
  struct trace t;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(run_one(&hcgrt_round_ready, 64, 4, 5, -1, 1, &t, &err),
                   HCGRT_ROUND_BROKEN);
  ck_assert_int_eq(t.n, 2);
  ck_assert_int_eq(t.steps, 3); /* before 0, after 0, before 1 */
  ck_assert_int_eq(err.code, HCG_ETIMEOUT);
  ck_assert_ptr_nonnull(strstr(err.message, "slice verdicts"));
  ck_assert_int_eq(run_one(&hcgrt_round_ready, 64, 4, 5, 1, 2, &t, &err),
                   HCGRT_ROUND_BROKEN);
  ck_assert_int_eq(t.n, 3);
  ck_assert_int_eq(err.code, HCG_ENCCL);
  ck_assert_str_eq(err.message, "step 1 failed");
}
END_TEST

TCase *round_tests(void) {
  TCase *r = tcase_create("rounds");
  tcase_add_test(r, test_round_same_fences);
  tcase_add_test(r, test_round_schedules);
  tcase_add_test(r, test_round_broken);
  return r;
}
