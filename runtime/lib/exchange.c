/*
 * exchange.c - one PMIx exchange for a whole set of groups: leaders make
 * and publish ids, one commit, one fence, members fetch from their leaders
 * (all of a rank's gets in one batch, under one deadline). The naive variant
 * (one fence per group key) exists to be measured against it.
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

#include "round.h"
#include "rt.h"
#ifdef HCG_HAVE_NCCL
#include "nccl_rt.h"
#endif

struct hcg_exchange {
  const hcg_layout *layout;
  struct hcgrt_item *items;
  int n;
};

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

/* HCG_EEXIST when this process already published pkey: `group`'s id,
 * whose own key is gkey (pkey itself, or its leader's bundle). */
static int unclaimed(hcg_ctx *ctx, const char *pkey, const char *gkey,
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
  if ((rc = unclaimed(ctx, pkey, pkey, it->key, err)))
    return rc;
  rc = hcgrt_pmix_put(ctx->pmix, pkey, it->id, HCG_ID_BYTES, err);
  if (!rc)
    ctx->stats.puts++;
  return rc;
}

/* ---- relays -------------------------------------------------------------- */

/* 1 when this job's exchanges take the relay fence: only its size decides,
 * so that every process makes the same fences. */
int hcgrt_relayed(const hcg_ctx *ctx) { return ctx->world > ctx->fanin; }

/* 1 when the group of a member item is cut into slices. */
int hcgrt_sliced(const hcg_ctx *ctx, const struct hcgrt_item *it) {
  return hcgrt_relayed(ctx) && it->embedding < 0 && it->group.size > ctx->fanin;
}

/* The rank this member fetches the id from at stage 1 (after the exchange's
 * fence) or 2 (after the relay fence), or -1 when none at that stage.
 * Stage 0: from the leader, without relays (the naive exchange). */
static int source(const hcg_ctx *ctx, const struct hcgrt_item *it, int stage) {
  if (!it->member || it->leader == ctx->rank || it->group.size < 2)
    return -1;
  if (stage == 0)
    return it->leader;
  if (!hcgrt_sliced(ctx, it))
    return stage == 1 ? it->leader : -1;
  int pos = it->group.index, first = pos - pos % ctx->fanin;
  if (first == 0 || pos == first) /* the first slice, or a relay */
    return stage == 1 ? it->leader : -1;
  return stage == 2 ? hcg_group_member(ctx->layout, &it->group, first) : -1;
}

/* The NCCL ids of an item: one per slice of a sliced group where the plan
 * asks for them (ncclCommInitRankScalable), else one. Every member
 * derives the same number. */
static int nids_of(const hcg_ctx *ctx, int scalable,
                   const struct hcgrt_item *it) {
  if (!scalable || !hcgrt_sliced(ctx, it))
    return 1;
  return (int)(((long long)it->group.size + ctx->fanin - 1) / ctx->fanin);
}

/* 1 when this rank relays the id of a member item. */
static int relays(const hcg_ctx *ctx, const struct hcgrt_item *it) {
  int pos = it->group.index;
  return it->member && hcgrt_sliced(ctx, it) && pos > 0 &&
         pos % ctx->fanin == 0;
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

/* ---- bundles ------------------------------------------------------------ */

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

static int bundled(const hcg_ctx *ctx) { return !hcgrt_relayed(ctx); }

/* The bundle's PMIx key: '*', which no group key holds. */
static int bundle_key(const hcg_ctx *ctx, long long epoch, char *buf,
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
static int put_bundle(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
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
  int rc = bundle_key(ctx, epoch, pkey, sizeof pkey);
  if (rc)
    return hcg__fail(err, rc, "cannot derive the PMIx key of group ids");
  char gkey[HCGRT_PMIX_MAX_KEYLEN + 1];
  if ((rc = hcg_exchange_pmix_key(ctx->tag, epoch, first, gkey, sizeof gkey)))
    return hcg__fail(err, rc, "cannot derive a PMIx key for group '%s'", first);
  if ((rc = unclaimed(ctx, pkey, gkey, first, err)))
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
static int fetch_bundles(hcg_ctx *ctx, struct hcgrt_item *items, int n,
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
  if ((rc = bundle_key(ctx, epoch, pkey, sizeof pkey))) {
    rc = hcg__fail(err, rc, "cannot derive the PMIx key of group ids");
    goto out;
  }
  for (int i = 0; i < n; i++) {
    int src = source(ctx, &items[i], 1);
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

/* Fetches the ids of items[from, to) that this rank gets at `stage`, but
 * for those with skip[i] set (skip may be NULL); with `scalable`, also
 * the extra ids of sliced groups (a second get from the same source). */
static int fetch(hcg_ctx *ctx, struct hcgrt_item *items, int from, int to,
                 long long epoch, const int *skip, int stage, int scalable,
                 hcg_error *err) {
  if (stage == 1 && bundled(ctx))
    return fetch_bundles(ctx, items + from, to - from, epoch,
                         skip ? skip + from : NULL, err);
  int n = 0;
  for (int i = from; i < to; i++) {
    struct hcgrt_item *it = &items[i];
    if (source(ctx, it, stage) < 0 || (skip && skip[i]))
      continue;
    int nids = nids_of(ctx, scalable, it);
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
    int src = source(ctx, it, stage);
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

/* ---- naming a missing publisher ------------------------------------------ */

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
    int src = source(ctx, it, 1);
    if (src < 0)
      continue;
    int j = 0;
    while (j < nseen && seen[j] != src)
      j++;
    if (j < nseen)
      continue;
    seen[nseen++] = src;
    char pkey[HCGRT_PMIX_MAX_KEYLEN + 1];
    if (bundled(ctx) ? bundle_key(ctx, epoch, pkey, sizeof pkey)
                     : hcg_exchange_pmix_key(ctx->tag, epoch, it->key, pkey,
                                             sizeof pkey))
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

static int fence(hcg_ctx *ctx, hcg_error *err) {
  return hcgrt_exchange_fence(ctx, ctx->timeout_s, "the group exchange", err);
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
                       nids_of(ctx, plan->scalable, &plan->items[i]),
                       !bundled(ctx), err);
      if (rc)
        return rc;
    }
  return bundled(ctx) ? put_bundle(ctx, plan, epoch, err) : HCG_OK;
}

/* Relays publish the ids they fetched at stage 1. */
static int republish(hcg_ctx *ctx, struct hcgrt_plan *plan, long long epoch,
                     const int *skip, hcg_error *err) {
  for (int i = 0; i < plan->n; i++) {
    struct hcgrt_item *it = &plan->items[i];
    if (!relays(ctx, it) || (skip && skip[i]))
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

/* The round of hcg_exchange_ids. */
struct ids_round {
  struct hcgrt_plan *plan;
  long long epoch;
  int flags;
};

static void ids_step(struct hcgrt_round *r, int fence, int after, void *arg) {
  struct ids_round *x = arg;
  if (!after && fence == HCGRT_FENCE_IDS)
    hcgrt_ids_publish(r, x->plan, x->epoch, x->flags);
  else if (after && fence == HCGRT_FENCE_IDS)
    hcgrt_ids_fetch(r, x->plan, x->epoch, NULL);
  else if (after && fence == HCGRT_FENCE_RELAY)
    hcgrt_ids_fetch_relayed(r, x->plan, x->epoch, NULL);
}

/* Every process walks the same keys, member or not: one fence each. */
static int exchange_naive(hcg_ctx *ctx, struct hcgrt_plan *plan,
                          long long epoch, int flags, hcg_error *err) {
  struct hcgrt_item *items = plan->items;
  for (int i = 0; i < plan->n; i++) {
    int rc;
    if (items[i].member && items[i].leader == ctx->rank &&
        (rc = publish(ctx, &items[i], epoch, flags, 1, 1, err)))
      return rc;
    if ((rc = fence(ctx, err)) ||
        (rc = fetch(ctx, items, i, i + 1, epoch, NULL, 0, 0, err)))
      return rc;
  }
  return HCG_OK;
}

int hcgrt_exchange_plan(hcg_ctx *ctx, struct hcgrt_plan *plan, int flags,
                        hcg_error *err) {
  int rc = hcgrt_exchange_usable(ctx, err);
  if (rc)
    return rc;
  long long epoch = hcgrt_exchange_begin(ctx);
  if (flags & HCG_EXCHANGE_NAIVE)
    return exchange_naive(ctx, plan, epoch, flags, err);

  struct ids_round x = {plan, epoch, flags};
  struct hcgrt_round r;
  hcgrt_round_init(&r, ctx, HCGRT_ROUND_IDS, ids_step, &x);
  if (hcgrt_round_run(&r) == HCGRT_ROUND_BROKEN &&
      r.broken == HCGRT_FENCE_IDS && r.fence_rc == HCG_ETIMEOUT)
    hcgrt_exchange_blame(ctx, plan, epoch, &r.fence_err);
  return hcgrt_round_end(&r, err);
}

int hcg_exchange_ids(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                     hcg_exchange **out, hcg_error *err) {
  if (out)
    *out = NULL;
  if (!out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_exchange_ids");
  int rc = hcgrt_check_set(ctx, set, "hcg_exchange_ids", err);
  if (rc)
    return rc;
  if (flags & ~(HCG_EXCHANGE_NAIVE | HCG_EXCHANGE_RANDOM_IDS))
    return hcg__fail(err, HCG_EINVAL, "hcg_exchange_ids: unknown flags 0x%x",
                     (unsigned)flags);
  if ((rc = hcgrt_exchange_usable(ctx, err)))
    return rc;
  struct hcgrt_plan plan;
  rc = hcgrt_plan_build(set, ctx->rank, flags & HCG_EXCHANGE_NAIVE, &plan, err);
  if (rc)
    return rc;
  struct hcg_exchange *x = calloc(1, sizeof *x);
  if (!x) {
    hcgrt_plan_free(&plan);
    return hcg__fail(err, HCG_ENOMEM, "out of memory for an exchange");
  }
  rc = hcgrt_exchange_plan(ctx, &plan, flags, err);
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
