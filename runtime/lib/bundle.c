/*
 * bundle.c - a leader's ids under one PMIx key (bundle.h).
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle.h"
#include "slice.h"

/* In a job of at most F processes (no relays), a leader publishes the ids
 * of all the groups it leads under one key instead of one key per group
 * (measured: also putting the per-group keys made the exchange about 1.4x
 * slower, the commit carrying them), and a member makes one get per
 * distinct leader instead of one per group: each get costs about a
 * scheduling round on a loaded node, and a rank's groups have few distinct
 * leaders (doc/scaling.md). In a relayed job the per-group keys stay, so
 * that each key's requests stay bounded. An entry: the group key's two
 * 64-bit hashes (big-endian), then its id. */
enum { TAG_BYTES = 16, ENTRY_BYTES = TAG_BYTES + HCG_ID_BYTES };

int hcgrt_bundled(const hcg_ctx *ctx) { return !hcgrt_relayed(ctx); }

/* The bundle's PMIx key: '*', which no group key holds. */
int hcgrt_bundle_key(const hcg_ctx *ctx, long long epoch, char *buf,
                     size_t cap) {
  return hcg_exchange_pmix_key(ctx->tag, epoch, "*", buf, cap);
}

static void entry_tag(const char *key, unsigned char *out) {
  size_t len = strlen(key);
  uint64_t h[2] = {hcgrt_hash64(key, len, 1), hcgrt_hash64(key, len, 2)};
  for (int k = 0; k < TAG_BYTES; k++)
    out[k] = (unsigned char)(h[k / 8] >> (56 - 8 * (k % 8)));
}

/* The leader's bundle: every group of two or more it leads. */
int hcgrt_put_bundle(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
                     hcg_error *err) {
  int count = 0;
  const char *first = NULL;
  for (int i = 0; i < plan->n; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (it->member && it->leader == ctx->rank && it->group.size > 1) {
      first = first ? first : it->key;
      count++;
    }
  }
  if (!count)
    return HCG_OK;
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  int rc = hcgrt_bundle_key(ctx, epoch, pkey, sizeof pkey);
  if (rc)
    return hcg__fail(err, rc, "cannot derive the PMIx key of group ids");
  char gkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  if ((rc = hcg_exchange_pmix_key(ctx->tag, epoch, first, gkey, sizeof gkey)))
    return hcg__fail(err, rc, "cannot derive a PMIx key for group '%s'", first);
  if ((rc = hcgrt_unclaimed(ctx, pkey, gkey, first, err)))
    return rc;
  unsigned char *blob = malloc((size_t)count * ENTRY_BYTES);
  if (!blob)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for %d group ids", count);
  unsigned char *e = blob;
  for (int i = 0; i < plan->n; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (it->member && it->leader == ctx->rank && it->group.size > 1) {
      entry_tag(it->key, e);
      memcpy(e + TAG_BYTES, it->id, HCG_ID_BYTES);
      e += ENTRY_BYTES;
    }
  }
  rc = hcgrt_pmix_put(ctx->pmix, pkey, blob, (size_t)count * ENTRY_BYTES, err);
  free(blob);
  if (!rc)
    ctx->stats.puts++;
  return rc;
}

/* Stage 1 of a job without relays: one get per distinct leader of
 * items[0, n) (but skip[i]), each id then taken from its leader's bundle. */
int hcgrt_fetch_bundles(hcg_ctx *ctx, struct hcgrt_item *items, int n,
                        long long epoch, const int *skip, hcg_error *err) {
  int *from = malloc((size_t)(n ? n : 1) * sizeof *from); /* leader index */
  int *leader = malloc((size_t)(n ? n : 1) * sizeof *leader);
  struct hcgrt_get *gets = calloc((size_t)(n ? n : 1), sizeof *gets);
  unsigned char **blob = calloc((size_t)(n ? n : 1), sizeof *blob);
  size_t *blen = calloc((size_t)(n ? n : 1), sizeof *blen);
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  int rc = HCG_OK, nl = 0;
  if (!from || !leader || !gets || !blob || !blen) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for an exchange");
    goto out;
  }
  if ((rc = hcgrt_bundle_key(ctx, epoch, pkey, sizeof pkey))) {
    rc = hcg__fail(err, rc, "cannot derive the PMIx key of group ids");
    goto out;
  }
  for (int i = 0; i < n; i++) {
    int src = hcgrt_source(ctx, &items[i], 1);
    from[i] = -1;
    if (src < 0 || (skip && skip[i]))
      continue;
    int j = 0;
    while (j < nl && leader[j] != src)
      j++;
    if (j == nl) {
      leader[nl] = src;
      gets[nl] = (struct hcgrt_get){.rank = src,
                                    .key = pkey,
                                    .group = items[i].key,
                                    .dyn = &blob[nl],
                                    .dyn_len = &blen[nl]};
      nl++;
    }
    from[i] = j;
  }
  if (!nl)
    goto out;
  if ((rc = hcgrt_pmix_get_all(ctx->pmix, gets, nl, HCG_ID_BYTES,
                               ctx->timeout_s, err)))
    goto out;
  ctx->stats.gets += nl;
  for (int i = 0; i < n && !rc; i++) {
    if (from[i] < 0)
      continue;
    unsigned char tag[TAG_BYTES];
    entry_tag(items[i].key, tag);
    const unsigned char *b = blob[from[i]];
    size_t m = blen[from[i]] / ENTRY_BYTES, k = 0;
    while (k < m && memcmp(b + k * ENTRY_BYTES, tag, TAG_BYTES))
      k++;
    if (k < m)
      memcpy(items[i].id, b + k * ENTRY_BYTES + TAG_BYTES, HCG_ID_BYTES);
    else
      rc = hcg__fail(err, HCG_EPMIX,
                     "rank %d, leader of group '%s', published no id for "
                     "it (key '%s'): did every process pass the same "
                     "groups and layout?",
                     leader[from[i]], items[i].key, pkey);
  }
out:
  for (int j = 0; blob && j < nl; j++)
    free(blob[j]);
  free(from);
  free(leader);
  free(gets);
  free(blob);
  free(blen);
  return rc;
}
