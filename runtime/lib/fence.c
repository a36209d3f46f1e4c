/*
 * fence.c - one fence of a round: commit what this process put, then the
 * PMIx fence over the job (hcgrt_exchange_fence, rt.h). Below round.c,
 * which takes it for every fence of every round.
 */
#include "config.h"

#include "rt.h"

int hcgrt_exchange_fence(hcg_ctx *ctx, int timeout_s, const char *what,
                         hcg_error *err) {
  int rc = hcgrt_pmix_commit(ctx->pmix, err);
  if (rc)
    return rc;
  ctx->stats.fences++;
  rc = hcgrt_pmix_fence(ctx->pmix, timeout_s, what, err);
  if (rc)
    ctx->broken = 1; /* its fences no longer pair with the others' */
  return rc;
}
