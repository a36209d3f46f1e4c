/*
 * blame.c - after the exchange's fence timed out, naming the process that
 * never reached it (hcgrt_exchange_blame, rt.h).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "slice.h"

/* Seconds a probe of one publisher waits (PMIx timeouts are whole seconds). */
enum { PROBE_S = 1 };

/* 1 when `rank` published nothing under `pkey` within PROBE_S: it never
 * reached the exchange's commit. A value of any size counts as published. */
static int never_published(hcg_ctx *ctx, int rank, const char *pkey,
                           const char *group) {
  unsigned char *v = NULL;
  size_t vlen = 0;
  struct hcgrt_get g = {
      .rank = rank, .key = pkey, .group = group, .dyn = &v, .dyn_len = &vlen};
  int rc = HCG_OK;
  hcg_error ignored = HCG_ERROR_INIT;
  if (hcgrt_pmix_get_each(ctx->pmix, &g, 1, HCG_ID_BYTES, PROBE_S, &rc,
                          &ignored))
    return 0;
  free(v);
  return rc == HCG_ETIMEOUT;
}

void hcgrt_exchange_blame(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                          long long epoch, hcg_error *err) {
  if (!err || !ctx->pmix)
    return;
  /* Each source once: the first that never published ends the probe. */
  int *seen = malloc((size_t)(plan->n ? plan->n : 1) * sizeof *seen);
  if (!seen)
    return;
  int nseen = 0;
  for (int i = 0; i < plan->n; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    int src = hcgrt_source(ctx, it, 1);
    if (src < 0)
      continue;
    int j = 0;
    while (j < nseen && seen[j] != src)
      j++;
    if (j < nseen)
      continue;
    seen[nseen++] = src;
    char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
    if (hcgrt_bundled(ctx) ? hcgrt_bundle_key(ctx, epoch, pkey, sizeof pkey)
                           : hcg_exchange_pmix_key(ctx->tag, epoch, it->key,
                                                   pkey, sizeof pkey))
      break;
    if (never_published(ctx, src, pkey, it->key)) {
      char was[HCG_ERROR_MAX];
      memcpy(was, err->message, sizeof was);
      was[sizeof was - 1] = '\0';
      hcg__fail(err, err->code,
                "%s; rank %d, the leader of group '%s', never published "
                "its id: it did not reach the exchange",
                was, src, it->key);
      break;
    }
  }
  free(seen);
}
