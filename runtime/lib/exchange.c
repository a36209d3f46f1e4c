/*
 * exchange.c - one PMIx exchange for a whole set of groups: leaders make
 * and publish ids, one commit, one fence, members fetch from their leaders
 * (all of a rank's gets in one batch, under one deadline). The slices'
 * arithmetic is slice.c's, the leaders' bundles bundle.c's, naming a
 * publisher that never came blame.c's, the fence fence.c's, the spelling
 * of the PMIx keys keys.c's. The naive exchange measured against it (one
 * fence per group key) is a benchmark, bench/exchange_naive.c, built from
 * this file's steps (rt.h: "Steps of the naive exchange"); libhcg has none
 * of it.
 *
 * Bounded fan-in: in a job of more than F processes (F = ctx->fanin,
 * HCG_FANIN), a group of more than F members is cut into slices of F
 * consecutive members; the first member of each slice but the first is a
 * relay. After the fence, relays (and the first slice) fetch the id from
 * the leader; relays publish it again; a second fence (taken by every
 * process of the job, as the job's size alone decides it); then the other
 * members fetch it from their slice's relay. A publisher thus answers at
 * most F - 1 members plus ceil(size / F) - 1 relays per group, whatever
 * the world size, instead of size - 1.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bundle.h"
#include "round.h"
#include "rt.h"
#include "slice.h"
#ifdef HCG_HAVE_NCCL
#include "nccl_rt.h"
#endif

struct hcg_exchange {
  const hcg_layout *layout;
  struct hcgrt_item *items;
  int n;
};

int hcgrt_random_id(unsigned char *id, hcg_error *err) {
  size_t got = 0;
  while (got < HCG_ID_BYTES) {
    ssize_t r = getrandom(id + got, HCG_ID_BYTES - got, 0);
    if (r < 0) {
      if (errno == EINTR)
        continue;
      return hcg__fail(err, HCG_EIO, "getrandom failed: %s", strerror(errno));
    }
    got += (size_t)r;
  }
  return HCG_OK;
}

static int make_id(unsigned char *id, int flags, const char *key,
                   hcg_error *err) {
#ifdef HCG_HAVE_NCCL
  if (!(flags & HCG_EXCHANGE_RANDOM_IDS)) {
    ncclUniqueId u;
    char mark[HCGRT_NCCL_MARK];
    hcgrt_nccl_mark(mark, sizeof mark);
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess)
      return hcgrt_nccl_fail(err, HCG_ENCCL, r, mark,
                             "ncclGetUniqueId for group '%s' failed", key);
    _Static_assert(sizeof u.internal == HCG_ID_BYTES, "ncclUniqueId size");
    memcpy(id, u.internal, HCG_ID_BYTES);
    return HCG_OK;
  }
#else
  (void)flags;
  (void)key;
#endif
  return hcgrt_random_id(id, err);
}

int hcgrt_exchange_usable(hcg_ctx *ctx, hcg_error *err) {
  if (ctx->broken)
    return hcg__fail(err, HCG_EPMIX,
                     "an earlier fence of this context failed; its fences "
                     "no longer pair with the other processes' (end the "
                     "job)");
  if (!ctx->pmix) {
    /* Why this process cannot use PMIx, when it cannot (a build without
     * it, no libpmix to load), else that no PMIx server started it. */
    int rc = hcgrt_pmix_usable(err);
    if (rc)
      return rc;
    return hcg__fail(err, HCG_EPMIX,
                     "this process has no PMIx server (PMIX_NAMESPACE is "
                     "not set, or the context was made with "
                     "HCG_PMIX_OFF): run it with srun --mpi=pmix");
  }
  return HCG_OK;
}

static int extra_key(const hcg_ctx *ctx, long long epoch,
                     const struct hcgrt_item *it, int relay, char *buf,
                     size_t cap);
static int put_extra(hcg_ctx *ctx, long long epoch, struct hcgrt_item *it,
                     int relay, hcg_error *err);

/* Leader side of one item: make its nids ids and, for groups of more than
 * one, publish them (the first under the group's key, the others together
 * under its extra key). */
static int publish(hcg_ctx *ctx, struct hcgrt_item *it, long long epoch,
                   int flags, int nids, int put, hcg_error *err) {
  int rc = make_id(it->id, flags, it->key, err);
  if (!rc && nids > 1) {
    if (!(it->more = malloc((size_t)(nids - 1) * HCG_ID_BYTES)))
      return hcg__fail(err, HCG_ENOMEM, "out of memory for %d NCCL ids", nids);
    it->nids = nids;
    for (int k = 1; k < nids && !rc; k++)
      rc = make_id(it->more + (size_t)(k - 1) * HCG_ID_BYTES, flags, it->key,
                   err);
  }
  if (rc || it->group.size < 2 || !put)
    return rc;
  if (it->nids > 1 && (rc = put_extra(ctx, epoch, it, 0, err)))
    return rc;
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  rc = hcg_exchange_pmix_key(ctx->tag, epoch, it->key, pkey, sizeof pkey);
  if (rc)
    return hcg__fail(err, rc, "cannot derive a PMIx key for group '%s'",
                     it->key);
  if ((rc = hcgrt_unclaimed(ctx, pkey, pkey, it->key, err)))
    return rc;
  rc = hcgrt_pmix_put(ctx->pmix, pkey, it->id, HCG_ID_BYTES, err);
  if (!rc)
    ctx->stats.puts++;
  return rc;
}

/* The PMIx key of a relay's copy: the group key behind '@', which no group
 * key holds. */
static int relay_key(const hcg_ctx *ctx, long long epoch,
                     const struct hcgrt_item *it, char *buf, size_t cap) {
  char k[HCG_KEY_MAX + 2];
  snprintf(k, sizeof k, "@%s", it->key);
  return hcg_exchange_pmix_key(ctx->tag, epoch, k, buf, cap);
}

/* The PMIx key of an item's extra ids ('+' before the group key), or of a
 * relay's copy of them ("@+"). */
static int extra_key(const hcg_ctx *ctx, long long epoch,
                     const struct hcgrt_item *it, int relay, char *buf,
                     size_t cap) {
  char k[HCG_KEY_MAX + 3];
  snprintf(k, sizeof k, "%s+%s", relay ? "@" : "", it->key);
  return hcg_exchange_pmix_key(ctx->tag, epoch, k, buf, cap);
}

static int put_extra(hcg_ctx *ctx, long long epoch, struct hcgrt_item *it,
                     int relay, hcg_error *err) {
  char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  int rc = extra_key(ctx, epoch, it, relay, pkey, sizeof pkey);
  if (rc)
    return hcg__fail(err, rc, "cannot derive a PMIx key for group '%s'",
                     it->key);
  rc = hcgrt_pmix_put(ctx->pmix, pkey, it->more,
                      (size_t)(it->nids - 1) * HCG_ID_BYTES, err);
  if (!rc)
    ctx->stats.puts++;
  return rc;
}

/* Fetches the ids of items[from, to) that this rank gets at `stage`, but
 * for those with skip[i] set (skip may be NULL); with `scalable`, also
 * the extra ids of sliced groups (a second get from the same source). */
static int fetch(hcg_ctx *ctx, struct hcgrt_item *items, int from, int to,
                 long long epoch, const int *skip, int stage, int scalable,
                 hcg_error *err) {
  if (stage == 1 && hcgrt_bundled(ctx))
    return hcgrt_fetch_bundles(ctx, items + from, to - from, epoch,
                               skip ? skip + from : NULL, err);
  int n = 0;
  for (int i = from; i < to; i++) {
    struct hcgrt_item *it = &items[i];
    if (hcgrt_source(ctx, it, stage) < 0 || (skip && skip[i]))
      continue;
    int nids = hcgrt_nids(ctx, scalable, it);
    if (nids > 1 && !it->more) {
      if (!(it->more = malloc((size_t)(nids - 1) * HCG_ID_BYTES)))
        return hcg__fail(err, HCG_ENOMEM, "out of memory for %d NCCL ids",
                         nids);
      it->nids = nids;
    }
    n += it->nids > 1 ? 2 : 1;
  }
  if (!n)
    return HCG_OK;
  struct hcgrt_get *gets = calloc((size_t)n, sizeof *gets);
  char(*keys)[HCGRT_PMIX_MAX_KEYLEN + 1] = calloc((size_t)n, sizeof *keys);
  int rc = HCG_OK;
  if (!gets || !keys) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for an exchange");
    goto out;
  }
  int k = 0;
  for (int i = from; i < to && !rc; i++) {
    struct hcgrt_item *it = &items[i];
    int src = hcgrt_source(ctx, it, stage);
    if (src < 0 || (skip && skip[i]))
      continue;
    rc = stage < 2 ? hcg_exchange_pmix_key(ctx->tag, epoch, it->key, keys[k],
                                           sizeof keys[k])
                   : relay_key(ctx, epoch, it, keys[k], sizeof keys[k]);
    gets[k].rank = src;
    gets[k].key = keys[k];
    gets[k].out = it->id;
    gets[k].group = it->key;
    k++;
    if (!rc && it->nids > 1) {
      rc = extra_key(ctx, epoch, it, stage == 2, keys[k], sizeof keys[k]);
      gets[k] = gets[k - 1];
      gets[k].key = keys[k];
      gets[k].out = it->more;
      gets[k].len = (size_t)(it->nids - 1) * HCG_ID_BYTES;
      k++;
    }
  }
  if (!rc)
    rc = hcgrt_pmix_get_all(ctx->pmix, gets, n, HCG_ID_BYTES, ctx->timeout_s,
                            err);
  if (!rc)
    ctx->stats.gets += n;
out:
  free(gets);
  free(keys);
  return rc;
}

long long hcgrt_exchange_begin(hcg_ctx *ctx) {
  ctx->stats.exchanges++;
  return ctx->epoch++;
}

/* The ids of the groups this rank leads, one key each or in its bundle. */
static int publish_all(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
                       int flags, hcg_error *err) {
  for (int i = 0; i < plan->n; i++)
    if (plan->items[i].member && plan->items[i].leader == ctx->rank) {
      int rc = publish(ctx, &plan->items[i], epoch, flags,
                       hcgrt_nids(ctx, plan->scalable, &plan->items[i]),
                       !hcgrt_bundled(ctx), err);
      if (rc)
        return rc;
    }
  return hcgrt_bundled(ctx) ? hcgrt_put_bundle(ctx, plan, epoch, err) : HCG_OK;
}

/* Relays publish the ids they fetched at stage 1. */
static int republish(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
                     const int *skip, hcg_error *err) {
  for (int i = 0; i < plan->n; i++) {
    struct hcgrt_item *it = &plan->items[i];
    if (!hcgrt_relays(ctx, it) || (skip && skip[i]))
      continue;
    char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
    int rc = relay_key(ctx, epoch, it, pkey, sizeof pkey);
    if (rc)
      return hcg__fail(err, rc, "cannot derive a PMIx key for group '%s'",
                       it->key);
    if ((rc = hcgrt_pmix_put(ctx->pmix, pkey, it->id, HCG_ID_BYTES, err)))
      return rc;
    ctx->stats.puts++;
    if (it->nids > 1 && (rc = put_extra(ctx, epoch, it, 1, err)))
      return rc;
  }
  return HCG_OK;
}

/* hcg_exchange_ids' round: the ids, then, in a job larger than the fan-in,
 * the relays' copies. A rank that fails before the first fence leaves. */
const struct hcgrt_round_table hcgrt_round_ids = {
    1, 2, {{HCGRT_FENCE_IDS, 0}, {HCGRT_FENCE_RELAY, 1}}};

/* ---- the steps of a round ------------------------------------------------ */

void hcgrt_ids_publish(struct hcgrt_round *r, struct hcgrt_plan *plan,
                       long long epoch, int flags) {
  if (!r->status)
    hcgrt_round_note(
        r, publish_all(r->ctx, plan, epoch, flags, hcgrt_round_err(r)));
}

void hcgrt_ids_fetch(struct hcgrt_round *r, struct hcgrt_plan *plan,
                     long long epoch, const int *skip) {
  hcg_ctx *ctx = r->ctx;
  if (!r->status)
    hcgrt_round_note(r, fetch(ctx, plan->items, 0, plan->n, epoch, skip, 1,
                              plan->scalable, hcgrt_round_err(r)));
  if (!r->status && hcgrt_relayed(ctx))
    hcgrt_round_note(r, republish(ctx, plan, epoch, skip, hcgrt_round_err(r)));
}

void hcgrt_ids_fetch_relayed(struct hcgrt_round *r, struct hcgrt_plan *plan,
                             long long epoch, const int *skip) {
  if (!r->status)
    hcgrt_round_note(r, fetch(r->ctx, plan->items, 0, plan->n, epoch, skip, 2,
                              plan->scalable, hcgrt_round_err(r)));
}

/* ---- the steps of the naive exchange (bench/exchange_naive.c) ----------- */

int hcgrt_ids_put(hcg_ctx *ctx, struct hcgrt_item *it, long long epoch,
                  int flags, hcg_error *err) {
  return publish(ctx, it, epoch, flags, 1, 1, err);
}

int hcgrt_ids_get(hcg_ctx *ctx, struct hcgrt_item *items, int from, int to,
                  long long epoch, hcg_error *err) {
  return fetch(ctx, items, from, to, epoch, NULL, 0, 0, err);
}

/* The round of hcg_exchange_ids. */
struct ids_round {
  struct hcgrt_plan *plan;
  long long epoch;
  int flags;
};

static void ids_publish(struct hcgrt_round *r, void *arg) {
  struct ids_round *x = arg;
  hcgrt_ids_publish(r, x->plan, x->epoch, x->flags);
}

static void ids_fetch(struct hcgrt_round *r, void *arg) {
  struct ids_round *x = arg;
  hcgrt_ids_fetch(r, x->plan, x->epoch, NULL);
}

static void ids_fetch_relayed(struct hcgrt_round *r, void *arg) {
  struct ids_round *x = arg;
  hcgrt_ids_fetch_relayed(r, x->plan, x->epoch, NULL);
}

static const struct hcgrt_round_steps ids_steps = {
    .before = {[HCGRT_FENCE_IDS] = ids_publish},
    .after = {[HCGRT_FENCE_IDS] = ids_fetch,
              [HCGRT_FENCE_RELAY] = ids_fetch_relayed},
};

int hcgrt_exchange_plan(hcg_ctx *ctx, struct hcgrt_plan *plan, int flags,
                        hcg_error *err) {
  int rc = hcgrt_exchange_usable(ctx, err);
  if (rc)
    return rc;
  long long epoch = hcgrt_exchange_begin(ctx);
  struct ids_round x = {plan, epoch, flags};
  struct hcgrt_round r;
  hcgrt_round_init(&r, ctx, &hcgrt_round_ids, &ids_steps, &x);
  if (hcgrt_round_run(&r) == HCGRT_ROUND_BROKEN &&
      r.broken == HCGRT_FENCE_IDS && r.fence_rc == HCG_ETIMEOUT)
    hcgrt_exchange_blame(ctx, plan, epoch, &r.fence_err);
  return hcgrt_round_end(&r, err);
}

int hcgrt_exchange_set(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                       const struct hcgrt_exchange_way *way, hcg_exchange **out,
                       hcg_error *err) {
  if (out)
    *out = NULL;
  if (!out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to %s", way->fn);
  int rc = hcgrt_check_set(ctx, set, way->fn, err);
  if (rc)
    return rc;
  if (flags & ~way->flags)
    return hcg__fail(err, HCG_EINVAL, "%s: unknown flags 0x%x", way->fn,
                     (unsigned)flags);
  flags &= HCG_EXCHANGE_RANDOM_IDS; /* the others accepted are ignored */
  if ((rc = hcgrt_exchange_usable(ctx, err)))
    return rc;
  struct hcgrt_plan plan;
  rc = hcgrt_plan_build(set, ctx->rank, way->all_keys, &plan, err);
  if (rc)
    return rc;
  struct hcg_exchange *x = calloc(1, sizeof *x);
  if (!x) {
    hcgrt_plan_free(&plan);
    return hcg__fail(err, HCG_ENOMEM, "out of memory for an exchange");
  }
  rc = way->run(ctx, &plan, flags, err);
  if (rc) {
    free(x);
    hcgrt_plan_free(&plan);
    return rc;
  }
  /* Keep this rank's groups only, in plan order. */
  int k = 0;
  for (int i = 0; i < plan.n; i++)
    if (plan.items[i].member) {
      plan.items[k] = plan.items[i];
      plan.items[k].entry = NULL;
      k++;
    }
  x->layout = ctx->layout;
  x->items = plan.items;
  x->n = k;
  *out = x;
  return HCG_OK;
}

/* One fence for the whole set. Bit 1 (HCGRT_EXCHANGE_RESERVED) is accepted
 * and ignored. */
static const struct hcgrt_exchange_way one_fence = {
    "hcg_exchange_ids", HCGRT_EXCHANGE_RESERVED | HCG_EXCHANGE_RANDOM_IDS, 0,
    hcgrt_exchange_plan};

int hcg_exchange_ids(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                     hcg_exchange **out, hcg_error *err) {
  return hcgrt_exchange_set(ctx, set, flags, &one_fence, out, err);
}

int hcg_exchange_num_groups(const hcg_exchange *x) { return x ? x->n : 0; }

int hcg_exchange_group(const hcg_exchange *x, int i, hcg_group_id *out) {
  if (!x || !out || i < 0 || i >= x->n)
    return HCG_EINVAL;
  const struct hcgrt_item *it = &x->items[i];
  out->key = it->key;
  out->embedding = it->embedding;
  out->group = it->group;
  out->leader = it->leader;
  memcpy(out->id, it->id, HCG_ID_BYTES);
  return HCG_OK;
}

int hcg_exchange_members(const hcg_exchange *x, int i, int *out, int cap) {
  if (!x || !out || i < 0 || i >= x->n)
    return HCG_EINVAL;
  return hcgrt_item_members(x->layout, &x->items[i], out, cap);
}

void hcg_exchange_free(hcg_exchange *x) {
  if (!x)
    return;
  free(x->items);
  free(x);
}
