/*
 * comm_fail.c - hcgrt_comm_fail, the communicator backend of the tests
 * (comm_nccl.h), in libhcgtesting, which only test programs link
 * (test_runtime, hcg-hello-test), never libhcg.
 *
 * It uses no device and no NCCL: every group counts as initialized
 * without a communicator, and with HCGTEST_COMM_FAIL=RANK:STAGE rank RANK
 * fails on purpose before the exchange (prepare) or at NCCL
 * initialization (init). The exchange and the agreement around it are
 * hcg_comm_create's own, so that a cluster without GPUs shows that every
 * peer of the failed rank learns of it (tests/cluster/agreement.bats).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "comm_nccl.h"

#define VAR "HCGTEST_COMM_FAIL"

enum { PREPARE, INIT };

/* The rank that fails and where, from VAR: -1 for none. */
struct failure {
  int rank;
  int stage;
};

static int read_failure(struct failure *f, hcg_error *err) {
  f->rank = -1;
  f->stage = PREPARE;
  const char *s = getenv(VAR);
  if (!s)
    return HCG_OK;
  const char *colon = strchr(s, ':');
  char num[16];
  long long r;
  size_t len = colon ? (size_t)(colon - s) : 0;
  if (!colon || len == 0 || len >= sizeof num)
    goto bad;
  memcpy(num, s, len);
  num[len] = '\0';
  if (hcgrt_parse_int(num, 0, HCG_MAX_WORLD, &r))
    goto bad;
  if (strcmp(colon + 1, "prepare") == 0)
    f->stage = PREPARE;
  else if (strcmp(colon + 1, "init") == 0)
    f->stage = INIT;
  else
    goto bad;
  f->rank = (int)r;
  return HCG_OK;
bad:
  return hcg__fail(err, HCG_EINVAL,
                   VAR "='%.64s': expected RANK:prepare or RANK:init (a test "
                       "hook)",
                   s);
}

/* The failure VAR gives this rank at `stage`, or HCG_OK. */
static int fail_at(const hcg_ctx *ctx, int stage, hcg_error *err) {
  struct failure f;
  int rc = read_failure(&f, err);
  if (rc || f.rank != ctx->rank || f.stage != stage)
    return rc;
  return hcg__fail(
      err, HCG_ENCCL, VAR ": rank %d fails %s (a test hook)", f.rank,
      stage == PREPARE ? "before the exchange" : "its NCCL initialization");
}

static int check(hcg_error *err) {
  struct failure f;
  return read_failure(&f, err);
}

static int ready(hcg_ctx *ctx, hcg_error *err) {
  return fail_at(ctx, PREPARE, err);
}

static int init(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                struct hcgrt_pending *p, const int *skip, hcg_error *err) {
  (void)plan;
  (void)p;
  (void)skip;
  return fail_at(ctx, INIT, err);
}

const struct hcgrt_comm_backend hcgrt_comm_fail = {
    .id_flags = HCG_EXCHANGE_RANDOM_IDS, /* no NCCL to make them */
    .check = check,
    .ready = ready,
    .init = init,
};

/* Before main, so that a test program's first hcg_comm_create uses it
 * when the variable is set (also when malformed: check says so). */
__attribute__((constructor)) static void install(void) {
  if (getenv(VAR))
    hcgrt_comm_backend = &hcgrt_comm_fail;
}
