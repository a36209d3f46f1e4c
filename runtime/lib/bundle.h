/*
 * bundle.h - a leader's ids under one PMIx key, in a job without relays.
 */
#ifndef HCG_BUNDLE_H
#define HCG_BUNDLE_H

#include "rt.h"

/* 1 when this job's leaders publish bundles (no relays). */
int hcgrt_bundled(const hcg_ctx *ctx);
/* The bundle's PMIx key of exchange `epoch`. */
int hcgrt_bundle_key(const hcg_ctx *ctx, long long epoch, char *buf,
                     size_t cap);
/* Publishes the leader's bundle: every group of two or more it leads. */
int hcgrt_put_bundle(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
                     hcg_error *err);
/* Stage 1 of a job without relays: one get per distinct leader of
 * items[0, n) (but skip[i]), each id then taken from its leader's bundle. */
int hcgrt_fetch_bundles(hcg_ctx *ctx, struct hcgrt_item *items, int n,
                        long long epoch, const int *skip, hcg_error *err);

#endif /* HCG_BUNDLE_H */
