/*
 * exchange_naive.c - the naive exchange (exchange_naive.h): one PMIx
 * fence per group key, made of libhcg's own steps (runtime/lib/rt.h:
 * hcg_exchange_ids' checks and result, a plan of every key, the leader's
 * put, the fence, the members' gets), so that it differs from
 * hcg_exchange_ids in its fences alone.
 */
#include "config.h"

#include "exchange_naive.h"
#include "rt.h"

/* Every process walks the same keys, member or not: one fence each. */
static int walk(hcg_ctx *ctx, struct hcgrt_plan *plan, int flags,
                hcg_error *err) {
  long long epoch = hcgrt_exchange_begin(ctx);
  struct hcgrt_item *items = plan->items;
  for (int i = 0; i < plan->n; i++) {
    int rc;
    if (items[i].member && items[i].leader == ctx->rank &&
        (rc = hcgrt_ids_put(ctx, &items[i], epoch, flags, err)))
      return rc;
    if ((rc = hcgrt_exchange_fence(ctx, ctx->timeout_s, "the group exchange",
                                   err)) ||
        (rc = hcgrt_ids_get(ctx, items, i, i + 1, epoch, err)))
      return rc;
  }
  return HCG_OK;
}

static const struct hcgrt_exchange_way naive = {
    "bench_exchange_naive", HCG_EXCHANGE_RANDOM_IDS, 1, walk};

int bench_exchange_naive(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                         hcg_exchange **out, hcg_error *err) {
  return hcgrt_exchange_set(ctx, set, flags, &naive, out, err);
}
