/*
 * broadcast.c - hcg_ctx_broadcast, a round of one fence: the root
 * publishes the buffer under a key of its own epoch, the fence orders it
 * before every read, and the others fetch it.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "round.h"
#include "rt.h"

/* Whole seconds since t0, rounded up. */
static int seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  long long ns = (long long)(t.tv_sec - t0->tv_sec) * 1000000000LL +
                 (t.tv_nsec - t0->tv_nsec);
  return (int)((ns + 999999999LL) / 1000000000LL);
}

struct broadcast {
  struct timespec t0;
  long long epoch;
  void *buf;
  size_t len;
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
};

/* hcg_ctx_broadcast's round: one fence. A rank that fails before it
 * leaves (its peers time out naming the root). */
const struct hcgrt_round_table hcgrt_round_broadcast = {
    1, 1, {{HCGRT_FENCE_BROADCAST, 0}}};

/* Every rank derives the key (the others read it after the fence); the
 * root puts its bytes under it. */
static void broadcast_put(struct hcgrt_round *r, void *arg) {
  struct broadcast *b = arg;
  hcgrt_round_put(r, b->epoch, "#broadcast", "a broadcast", b->pkey,
                  sizeof b->pkey, r->ctx->rank == r->root ? b->buf : NULL,
                  b->len);
}

static void broadcast_get(struct hcgrt_round *r, void *arg) {
  struct broadcast *b = arg;
  hcg_ctx *ctx = r->ctx;
  if (ctx->rank == r->root || r->status)
    return;
  /* The fence and the get share one deadline, the context's timeout: the
   * get has what the fence left of it (at least a second, for a fence that
   * ended just in time), so a missing root costs the timeout once, not
   * twice. */
  int left = ctx->timeout_s - seconds_since(&b->t0);
  if (left < 1)
    left = 1;
  struct hcgrt_get get = {
      .rank = r->root, .key = b->pkey, .out = b->buf, .group = "#broadcast"};
  hcg_error *err = hcgrt_round_err(r);
  int rc = hcgrt_pmix_get_all(ctx->pmix, &get, 1, b->len, left, err);
  if (rc == HCG_ETIMEOUT) {
    char what[64];
    rc = hcg__fail(
        err, HCG_ETIMEOUT,
        "%s did not arrive within the timeout (%d s for the "
        "fence and the get together)",
        hcgrt_round_fence_name(r, HCGRT_FENCE_BROADCAST, what, sizeof what),
        ctx->timeout_s);
  }
  if (!hcgrt_round_note(r, rc))
    ctx->stats.gets++;
}

static const struct hcgrt_round_steps broadcast_steps = {
    .before = {[HCGRT_FENCE_BROADCAST] = broadcast_put},
    .after = {[HCGRT_FENCE_BROADCAST] = broadcast_get},
};

/* The epoch counter is shared with the id exchanges, so keys never repeat
 * within a context and every process derives the same key. */
int hcg_ctx_broadcast(hcg_ctx *ctx, int root, void *buf, size_t len,
                      hcg_error *err) {
  struct broadcast b = {.buf = buf, .len = len};
  clock_gettime(CLOCK_MONOTONIC, &b.t0);
  if (!ctx || !buf || len == 0 || len > HCG_BROADCAST_MAX)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_ctx_broadcast (buffer %s, %zu "
                     "bytes; 1 to %d allowed)",
                     buf ? "given" : "NULL", len, HCG_BROADCAST_MAX);
  if (root < 0 || root >= ctx->world)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_broadcast: root %d is not a rank of the job "
                     "(world size %d)",
                     root, ctx->world);
  int rc = hcgrt_exchange_usable(ctx, err);
  if (rc)
    return rc;
  b.epoch = ctx->epoch++;
  struct hcgrt_round r;
  hcgrt_round_init(&r, ctx, &hcgrt_round_broadcast, &broadcast_steps, &b);
  r.root = root;
  hcgrt_round_run(&r);
  return hcgrt_round_end(&r, err);
}
