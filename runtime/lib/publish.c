/*
 * publish.c - hcg_ctx_publish and hcg_ctx_fetch: a round of one fence in
 * which every process publishes bytes of its own, and afterwards reads of
 * any one process's bytes, each one PMIx get from that process's server.
 * No data move in the fence: what a process publishes is read only by
 * those who fetch it (hcg.torch: a group's members, from the process that
 * hosts the group's store).
 */
#include "config.h"

#include "round.h"
#include "rt.h"

#define PUBLISH_KEY "#publish"

struct publish {
  const void *buf;
  size_t len;
  long long epoch;
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
};

/* hcg_ctx_publish's round: one fence, which carries no data. A rank that
 * fails before it leaves. */
const struct hcgrt_round_table hcgrt_round_publish = {
    1, 1, {{HCGRT_FENCE_PUBLISH, 0}}};

static void publish_put(struct hcgrt_round *r, void *arg) {
  struct publish *p = arg;
  hcgrt_round_put(r, p->epoch, PUBLISH_KEY, "a publication", p->pkey,
                  sizeof p->pkey, p->buf, p->len);
}

static const struct hcgrt_round_steps publish_steps = {
    .before = {[HCGRT_FENCE_PUBLISH] = publish_put},
};

/* The epoch counter is shared with the exchanges and broadcasts, so keys
 * never repeat within a context and every process derives the same key. */
int hcg_ctx_publish(hcg_ctx *ctx, const void *buf, size_t len, long long *epoch,
                    hcg_error *err) {
  if (!ctx || !buf || !epoch || len == 0 || len > HCG_PUBLISH_MAX)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_ctx_publish (context %s, "
                     "buffer %s, epoch %s, %zu bytes; 1 to %d allowed)",
                     ctx ? "given" : "NULL", buf ? "given" : "NULL",
                     epoch ? "given" : "NULL", len, HCG_PUBLISH_MAX);
  int rc = hcgrt_exchange_usable(ctx, err);
  if (rc)
    return rc;
  struct publish p = {.buf = buf, .len = len, .epoch = ctx->epoch++};
  struct hcgrt_round r;
  hcgrt_round_init(&r, ctx, &hcgrt_round_publish, &publish_steps, &p);
  hcgrt_round_run(&r);
  rc = hcgrt_round_end(&r, err);
  if (!rc)
    *epoch = p.epoch;
  return rc;
}

int hcg_ctx_fetch(hcg_ctx *ctx, long long epoch, int rank, void *buf,
                  size_t len, hcg_error *err) {
  if (!ctx || !buf || len == 0 || len > HCG_PUBLISH_MAX)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_ctx_fetch (context %s, buffer "
                     "%s, %zu bytes; 1 to %d allowed)",
                     ctx ? "given" : "NULL", buf ? "given" : "NULL", len,
                     HCG_PUBLISH_MAX);
  if (rank < 0 || rank >= ctx->world)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_fetch: rank %d is not a rank of the job "
                     "(world size %d)",
                     rank, ctx->world);
  if (epoch < 0 || epoch >= ctx->epoch)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_fetch: epoch %lld is no publication of this "
                     "context (its next epoch is %lld)",
                     epoch, ctx->epoch);
  int rc = hcgrt_exchange_usable(ctx, err);
  if (rc)
    return rc;
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  rc = hcg_exchange_pmix_key(ctx->tag, epoch, PUBLISH_KEY, pkey, sizeof pkey);
  if (rc)
    return hcg__fail(err, rc, "cannot derive the PMIx key of a publication");
  struct hcgrt_get get = {.rank = rank,
                          .key = pkey,
                          .out = buf,
                          .group = "#publish",
                          .publication = 1};
  rc = hcgrt_pmix_get_all(ctx->pmix, &get, 1, len, ctx->timeout_s, err);
  if (!rc)
    ctx->stats.gets++;
  return rc;
}
