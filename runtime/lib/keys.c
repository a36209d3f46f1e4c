/*
 * keys.c - the PMIx keys of libhcg's rounds: how a key is spelled from the
 * context's tag, the call's epoch and a group key, and the check that this
 * process has not already published one (two contexts exchanging the same
 * groups under one tag). Every round that puts or gets (the exchange, its
 * bundles and blame, the round's own failure notes, the agreement,
 * hcg_ctx_publish) spells its keys here, so this file sits below all of
 * them and calls none.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "rt.h"

int hcg_exchange_pmix_key(const char *tag, long long epoch, const char *key,
                          char *buf, size_t cap) {
  if (!key || !buf || epoch < 0 || (tag && strlen(tag) > HCG_MAX_TAG))
    return HCG_EINVAL;
  const char *t = tag ? tag : "";
  const char *dot = *t ? "." : "";
  char full[HCG_MAX_TAG + HCG_KEY_MAX + 48];
  int n = snprintf(full, sizeof full, "hcg.%s%s%lld.%s", t, dot, epoch, key);
  if (n < 0)
    return HCG_EINVAL;
  if ((size_t)n >= sizeof full || n > HCGRT_PMIX_MAX_KEYLEN) {
    /* Too long for PMIx: the same prefix and 128 bits of hash, which every
     * process derives alike from the group key. */
    size_t len = strlen(key);
    unsigned long long h1 = hcgrt_hash64(key, len, 1);
    unsigned long long h2 = hcgrt_hash64(key, len, 2);
    n = snprintf(full, sizeof full, "hcg.%s%s%lld.#%016llx%016llx", t, dot,
                 epoch, h1, h2);
  }
  if ((size_t)n >= cap)
    return HCG_ERANGE;
  memcpy(buf, full, (size_t)n + 1);
  return HCG_OK;
}

int hcgrt_unclaimed(hcg_ctx *ctx, const char *pkey, const char *gkey,
                    const char *group, hcg_error *err) {
  if (!hcgrt_pmix_have_own(ctx->pmix, pkey))
    return HCG_OK;
  return hcg__fail(err, HCG_EEXIST,
                   "PMIx key '%s' of group '%s' was already published by "
                   "this process: another context exchanges the same "
                   "groups%s%s%s; give each context its own "
                   "hcg_ctx_config.tag",
                   gkey, group, strcmp(pkey, gkey) ? " (in the bundle '" : "",
                   strcmp(pkey, gkey) ? pkey : "",
                   strcmp(pkey, gkey) ? "')" : "");
}
