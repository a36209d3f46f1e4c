/*
 * round.c - the schedule of a collective round and its runner (round.h).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "round.h"
#include "slice.h"

void hcgrt_round_plan(struct hcgrt_round *r,
                      const struct hcgrt_round_table *table, int world,
                      int fanin) {
  memset(r, 0, sizeof *r);
  r->table = table;
  r->broken = -1;
  r->leave_early = table->leave_early;
  int relayed = hcgrt_world_relayed(world, fanin);
  for (int k = 0; k < table->n; k++)
    if (relayed || !table->fence[k].relayed_only)
      r->fence[r->n++] = table->fence[k].fence;
}

void hcgrt_round_init(struct hcgrt_round *r, hcg_ctx *ctx,
                      const struct hcgrt_round_table *table,
                      const struct hcgrt_round_steps *steps, void *arg) {
  hcgrt_round_plan(r, table, ctx->world, ctx->fanin);
  r->ctx = ctx;
  r->timeout_s = ctx->timeout_s;
  r->steps = steps;
  r->arg = arg;
  r->take = hcgrt_exchange_fence;
  hcg_error none = HCG_ERROR_INIT;
  r->own = r->scratch = r->fence_err = none;
}

const char *hcgrt_round_fence_name(const struct hcgrt_round *r, int fence,
                                   char *buf, size_t cap) {
  static const char *const name[] = {
      [HCGRT_FENCE_IDS] = "the group exchange",
      [HCGRT_FENCE_SLICES] = "the agreement's slice verdicts",
      [HCGRT_FENCE_GROUPS] = "the agreement's group verdicts",
      [HCGRT_FENCE_RELAY] = "the relay of group ids",
      [HCGRT_FENCE_DONE] = "the agreement on the communicators",
      [HCGRT_FENCE_PUBLISH] = "a publication by every process",
  };
  if (fence == HCGRT_FENCE_BROADCAST)
    snprintf(buf, cap, "a broadcast from rank %d", r->root);
  else
    snprintf(buf, cap, "%s", name[fence]);
  return buf;
}

int hcgrt_round_fence_timeout(const struct hcgrt_round *r, int fence) {
  /* Peers may still be in NCCL initialization (up to the timeout) when a
   * rank reaches the agreement on the communicators. */
  return fence == HCGRT_FENCE_DONE ? 2 * r->timeout_s + 5 : r->timeout_s;
}

hcg_error *hcgrt_round_err(struct hcgrt_round *r) {
  return r->status ? &r->scratch : &r->own;
}

int hcgrt_round_note(struct hcgrt_round *r, int rc) {
  if (rc && !r->status)
    r->status = rc;
  return rc;
}

int hcgrt_round_put(struct hcgrt_round *r, long long epoch, const char *name,
                    const char *what, char *pkey, size_t cap, const void *buf,
                    size_t len) {
  hcg_ctx *ctx = r->ctx;
  int rc = hcg_exchange_pmix_key(ctx->tag, epoch, name, pkey, cap);
  if (rc) {
    hcgrt_round_note(r, hcg__fail(hcgrt_round_err(r), rc,
                                  "cannot derive the PMIx key of %s", what));
    return rc;
  }
  if (buf && !hcgrt_round_note(r, hcgrt_pmix_put(ctx->pmix, pkey, buf, len,
                                                 hcgrt_round_err(r))))
    ctx->stats.puts++;
  return HCG_OK;
}

int hcgrt_round_run(struct hcgrt_round *r) {
  for (int k = 0; k < r->n; k++) {
    int f = r->fence[k];
    if (r->steps->before[f])
      r->steps->before[f](r, r->arg);
    if (k == 0 && r->status && r->leave_early)
      return HCGRT_ROUND_OWN_FAILURE;
    char what[64];
    hcgrt_round_fence_name(r, f, what, sizeof what);
    int rc =
        r->take(r->ctx, hcgrt_round_fence_timeout(r, f), what, &r->fence_err);
    if (rc) {
      r->broken = f;
      r->fence_rc = rc;
      return HCGRT_ROUND_BROKEN;
    }
    if (r->steps->after[f])
      r->steps->after[f](r, r->arg);
  }
  return r->status ? HCGRT_ROUND_OWN_FAILURE : HCGRT_ROUND_OK;
}

int hcgrt_round_end(const struct hcgrt_round *r, hcg_error *err) {
  if (r->status) {
    if (err)
      *err = r->own;
    return r->status;
  }
  if (r->broken >= 0) {
    if (err)
      *err = r->fence_err;
    return r->fence_rc;
  }
  return HCG_OK;
}

void hcgrt_round_next(struct hcgrt_round *r,
                      const struct hcgrt_round_table *table,
                      const struct hcgrt_round_steps *steps) {
  struct hcgrt_round prev = *r;
  hcgrt_round_init(r, prev.ctx, table, steps, prev.arg);
  r->take = prev.take;
  r->status = prev.status;
  r->own = prev.own;
}
