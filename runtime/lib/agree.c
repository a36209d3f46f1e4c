/*
 * agree.c - how the members of each group agree that all of them formed
 * its communicator, so that none keeps one that a peer gave up on (NCCL's
 * fault-tolerance rule: every rank of a communicator aborts it, after
 * agreeing that one failed).
 *
 * hcg_comm_create publishes this rank's status twice, into fences it makes
 * anyway or one more: READY into the fence of its id exchange (did it get
 * as far as NCCL initialization: options, callback, device, ids), DONE
 * into the agreement fence (did every communicator it initialized come
 * up). After each fence the members of a group learn the statuses of the
 * others, and every member of a group reads the same values, so all of
 * them reach the same verdict for it.
 *
 * A group of at most F members (F = ctx->fanin, HCG_FANIN): each member
 * reads every other member's status, one get each: at most F - 1 per
 * group, and a status is read by at most F - 1 members per group.
 *
 * A sliced group (a job of more than F processes, a group of more than F
 * members, cut into slices of F as the exchange cuts it) agrees up and
 * down the first level of the slices, by the protocol doc/architecture.md
 * writes once for libhcg and hcg.torch ("How a failure travels"): heads
 * publish their slice's verdict (hcgrt_agree_put_slices), a fence, heads
 * merge every slice's into the group's (hcgrt_agree_put_groups), a fence,
 * the others read their head's (hcgrt_agree_read_heads). A publisher
 * answers at most F - 1 + ceil(size / F) - 1 requests per group and phase,
 * the exchange's own bound. Every process of a relayed job takes the two
 * fences (only the job's size decides), also one that failed.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "round.h"
#include "rt.h"
#include "slice.h"

static const char *const phase_name[] = {"ready", "done"};

static int phase_key(const hcg_ctx *ctx, long long epoch, int phase, char *buf,
                     size_t cap) {
  /* "ready" and "done" cannot be group keys, which hold ':' or '#'. */
  return hcg_exchange_pmix_key(ctx->tag, epoch, phase_name[phase], buf, cap);
}

/* Publishes this rank's status for the phase. */
static int put_status(hcg_ctx *ctx, long long epoch, int phase, int status,
                      hcg_error *err) {
  char key[512];
  int rc = phase_key(ctx, epoch, phase, key, sizeof key);
  if (rc)
    return hcg__fail(err, rc, "cannot derive the PMIx key of the agreement");
  unsigned char v[4] = {(unsigned char)(status >> 24),
                        (unsigned char)(status >> 16),
                        (unsigned char)(status >> 8), (unsigned char)status};
  /* Not counted in stats.puts, which counts ids. */
  return hcgrt_pmix_put(ctx->pmix, key, v, sizeof v, err);
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Counts a member with status s (nothing when HCG_OK) in a verdict. */
static void verdict_add(struct hcgrt_verdict *v, int rank, int s) {
  if (s == HCG_OK)
    return;
  if (!v->status)
    v->status = s;
  if (v->nbad < HCGRT_VERDICT_NAMED)
    v->bad[v->nbad] = rank;
  v->nbad++;
}

/* Appends src's failed members to dst's (slices merge in slice order). */
static void verdict_merge(struct hcgrt_verdict *dst,
                          const struct hcgrt_verdict *src) {
  if (!src->status)
    return;
  if (!dst->status)
    dst->status = src->status;
  int shown = src->nbad < HCGRT_VERDICT_NAMED ? src->nbad : HCGRT_VERDICT_NAMED;
  for (int k = 0; k < shown; k++) {
    int at = dst->nbad + k;
    if (at >= HCGRT_VERDICT_NAMED)
      break;
    dst->bad[at] = src->bad[k];
  }
  dst->nbad += src->nbad;
}

/* Statuses of ranks[0..n-1] (distinct) into st: one get each,
 * in one batch, all within the context's timeout. A member whose status
 * cannot be read counts as failed: HCG_ETIMEOUT when the time ran out,
 * else HCG_EPMIX. Fails only for lack of memory. */
static int read_statuses(hcg_ctx *ctx, const char *key, const int *ranks, int n,
                         int *st, hcg_error *err) {
  if (n == 0)
    return HCG_OK;
  struct hcgrt_get *g = calloc((size_t)n, sizeof *g);
  unsigned char(*v)[4] = calloc((size_t)n, sizeof *v);
  int rc = HCG_OK;
  if (!g || !v) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for the agreement");
    goto out;
  }
  for (int i = 0; i < n; i++)
    g[i] = (struct hcgrt_get){
        .rank = ranks[i], .key = key, .out = v[i], .group = "(agreement)"};
  rc = hcgrt_pmix_get_each(ctx->pmix, g, n, sizeof *v, ctx->timeout_s, st, err);
  for (int i = 0; i < n && !rc; i++) {
    if (st[i])
      continue;
    unsigned u = (unsigned)v[i][0] << 24 | (unsigned)v[i][1] << 16 |
                 (unsigned)v[i][2] << 8 | v[i][3];
    st[i] = u < HCG_STATUS_COUNT ? (int)u : HCG_EINVAL;
  }
out:
  free(g);
  free(v);
  return rc;
}

/* 1 when item i takes part in the phase: this rank is a member, the group
 * has two or more, and it was not skipped. */
static int agreed(const struct hcgrt_plan *plan, const int *skip, int i) {
  const struct hcgrt_item *it = &plan->items[i];
  return it->member && !(skip && skip[i]) && it->group.size >= 2;
}

/* ---- sliced groups: the tree --------------------------------------------- */

/* A verdict on the wire: status, failed count, then up to
 * HCGRT_VERDICT_NAMED ranks (unused ones 0), each 4 bytes big-endian. */
enum { WIRE_BYTES = 4 * (2 + HCGRT_VERDICT_NAMED) };

static void put32(unsigned char *b, unsigned v) {
  b[0] = (unsigned char)(v >> 24);
  b[1] = (unsigned char)(v >> 16);
  b[2] = (unsigned char)(v >> 8);
  b[3] = (unsigned char)v;
}

static unsigned get32(const unsigned char *b) {
  return (unsigned)b[0] << 24 | (unsigned)b[1] << 16 | (unsigned)b[2] << 8 |
         b[3];
}

static void wire_encode(const struct hcgrt_verdict *v, unsigned char *b) {
  memset(b, 0, WIRE_BYTES);
  put32(b, (unsigned)v->status);
  put32(b + 4, (unsigned)v->nbad);
  for (int k = 0; k < v->nbad && k < HCGRT_VERDICT_NAMED; k++)
    put32(b + 8 + 4 * k, (unsigned)v->bad[k]);
}

/* HCG_EINVAL for a value no libhcg of a group of `size` would publish. */
static int wire_decode(const unsigned char *b, int size, int world,
                       struct hcgrt_verdict *v) {
  unsigned st = get32(b), nbad = get32(b + 4);
  if (st >= HCG_STATUS_COUNT || nbad > (unsigned)size ||
      (st == 0) != (nbad == 0))
    return HCG_EINVAL;
  memset(v, 0, sizeof *v);
  v->status = (int)st;
  v->nbad = (int)nbad;
  for (int k = 0; k < v->nbad && k < HCGRT_VERDICT_NAMED; k++) {
    unsigned r = get32(b + 8 + 4 * k);
    if (r >= (unsigned)world)
      return HCG_EINVAL;
    v->bad[k] = (int)r;
  }
  return HCG_OK;
}

/* The PMIx key of a slice verdict (level 1) or of a group verdict (level
 * 2): '!' and the phase before the group key; no group key holds '!'. */
static int tree_key(const hcg_ctx *ctx, long long epoch, int phase, int level,
                    const struct hcgrt_item *it, char *buf, size_t cap) {
  char k[HCG_KEY_MAX + 16];
  snprintf(k, sizeof k, "!%s%d%s", phase_name[phase], level, it->key);
  return hcg_exchange_pmix_key(ctx->tag, epoch, k, buf, cap);
}

/* The verdicts of the members ranks[0..n-1] at group positions given by
 * their order, read under key, merged into v (a rank that cannot be read
 * counts as failed with the get's status). Fails only for lack of memory. */
static int read_verdicts(hcg_ctx *ctx, const char *key, const int *ranks, int n,
                         int size, struct hcgrt_verdict *v, hcg_error *err) {
  if (n == 0)
    return HCG_OK;
  struct hcgrt_get *g = calloc((size_t)n, sizeof *g);
  unsigned char(*w)[WIRE_BYTES] = calloc((size_t)n, sizeof *w);
  int *st = calloc((size_t)n, sizeof *st);
  int rc = HCG_OK;
  if (!g || !w || !st) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for the agreement");
    goto out;
  }
  for (int i = 0; i < n; i++)
    g[i] = (struct hcgrt_get){
        .rank = ranks[i], .key = key, .out = w[i], .group = "(agreement)"};
  rc =
      hcgrt_pmix_get_each(ctx->pmix, g, n, WIRE_BYTES, ctx->timeout_s, st, err);
  for (int i = 0; i < n && !rc; i++) {
    struct hcgrt_verdict one;
    if (!st[i] && wire_decode(w[i], size, ctx->world, &one))
      st[i] = HCG_EINVAL;
    if (st[i])
      verdict_add(v, ranks[i], st[i]);
    else
      verdict_merge(v, &one);
  }
out:
  free(g);
  free(w);
  free(st);
  return rc;
}

static int publish_verdict(hcg_ctx *ctx, long long epoch, int phase, int level,
                           const struct hcgrt_item *it,
                           const struct hcgrt_verdict *v, hcg_error *err) {
  char key[512];
  unsigned char w[WIRE_BYTES];
  int rc = tree_key(ctx, epoch, phase, level, it, key, sizeof key);
  if (rc)
    return hcg__fail(err, rc, "cannot derive the PMIx key of the agreement");
  wire_encode(v, w);
  return hcgrt_pmix_put(ctx->pmix, key, w, sizeof w, err);
}

/* The members at group positions from, from + step, ... below `to`. */
static int positions(const hcg_ctx *ctx, const struct hcgrt_item *it, int from,
                     int to, int step, int *out) {
  int n = 0;
  for (int p = from; p < to; p += step)
    out[n++] = hcg_group_member(ctx->layout, &it->group, p);
  return n;
}

/* The members whose statuses this rank reads for item i: every other
 * member of a group of at most F, its slice of a sliced group it heads,
 * none of one it does not head. Into out (cap >= the group's size or F);
 * returns how many, or -1 when the layout cannot list them. */
static int needed(const hcg_ctx *ctx, const struct hcgrt_item *it, int *out,
                  int cap) {
  if (!hcgrt_sliced(ctx, it))
    return hcgrt_item_members(ctx->layout, it, out, cap) ? -1 : it->group.size;
  struct hcgrt_slice s = hcgrt_slice_of(ctx, it);
  if (s.pos != s.first)
    return 0;
  return positions(ctx, it, s.first + 1, s.end, 1, out);
}

/* Reads, once each, the statuses of every rank any item needs (needed()),
 * one batch, and counts the failed ones into v[i] (a group of at most F)
 * or slice[i] (the slice of a sliced group this rank heads), in member
 * order. Fails only for lack of memory. */
static int read_statuses_needed(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                                const int *skip, long long epoch, int phase,
                                struct hcgrt_verdict *v,
                                struct hcgrt_verdict *slice, hcg_error *err) {
  long long total = 0;
  int cap = 1;
  for (int i = 0; i < plan->n; i++)
    if (agreed(plan, skip, i)) {
      int size = plan->items[i].group.size;
      int c = hcgrt_sliced(ctx, &plan->items[i]) ? ctx->fanin : size;
      total += c;
      cap = c > cap ? c : cap;
    }
  if (total == 0)
    return HCG_OK;
  int *all = malloc((size_t)total * sizeof *all);
  int *own = malloc((size_t)cap * sizeof *own);
  int *st = NULL;
  int rc = HCG_OK;
  if (!all || !own) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for the agreement");
    goto out;
  }
  long long n = 0;
  for (int i = 0; i < plan->n && !rc; i++) {
    if (!agreed(plan, skip, i))
      continue;
    int got = needed(ctx, &plan->items[i], all + n, (int)(total - n));
    if (got < 0)
      rc = hcg__fail(err, HCG_EINVAL, "members of group '%s' unavailable",
                     plan->items[i].key);
    else
      n += got;
  }
  if (rc)
    goto out;
  qsort(all, (size_t)n, sizeof *all, cmp_int);
  int m = 0;
  for (long long i = 0; i < n; i++)
    if (all[i] != ctx->rank && (m == 0 || all[m - 1] != all[i]))
      all[m++] = all[i];
  if (!(st = malloc((size_t)(m ? m : 1) * sizeof *st))) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for the agreement");
    goto out;
  }
  char key[512];
  if ((rc = phase_key(ctx, epoch, phase, key, sizeof key))) {
    rc = hcg__fail(err, rc, "cannot derive the PMIx key of the agreement");
    goto out;
  }
  if ((rc = read_statuses(ctx, key, all, m, st, err)))
    goto out;

  for (int i = 0; i < plan->n; i++) {
    if (!agreed(plan, skip, i))
      continue;
    struct hcgrt_verdict *to =
        hcgrt_sliced(ctx, &plan->items[i]) ? &slice[i] : &v[i];
    int got = needed(ctx, &plan->items[i], own, cap);
    for (int k = 0; k < got; k++) {
      if (own[k] == ctx->rank)
        continue;
      const int *at = bsearch(&own[k], all, (size_t)m, sizeof *all, cmp_int);
      verdict_add(to, own[k], at ? st[at - all] : HCG_EINVAL);
    }
  }
out:
  free(all);
  free(own);
  free(st);
  return rc;
}

/* This rank's part in the tree of item i: none (not a sliced group it
 * agrees on), the head of its slice, or another member. */
enum { NONE, HEAD, MEMBER };
static int role(const hcg_ctx *ctx, const struct hcgrt_plan *plan,
                const int *skip, int i) {
  const struct hcgrt_item *it = &plan->items[i];
  if (!agreed(plan, skip, i) || !hcgrt_sliced(ctx, it))
    return NONE;
  struct hcgrt_slice s = hcgrt_slice_of(ctx, it);
  return s.pos == s.first ? HEAD : MEMBER;
}

/* ---- the agreement's steps in a round ----------------------------------- */

/* Level 1: heads publish their slice's verdict (read with the statuses),
 * or, once this rank failed, one naming itself, so that nobody waits. */
void hcgrt_agree_put_slices(struct hcgrt_round *r, struct hcgrt_agreement *a) {
  hcg_ctx *ctx = r->ctx;
  const struct hcgrt_plan *plan = a->plan;
  for (int i = 0; i < plan->n; i++) {
    if (role(ctx, plan, a->skip, i) != HEAD)
      continue;
    struct hcgrt_verdict self;
    memset(&self, 0, sizeof self);
    verdict_add(&self, ctx->rank, r->status);
    hcgrt_round_note(r, publish_verdict(ctx, a->epoch, a->phase, 1,
                                        &plan->items[i],
                                        r->status ? &self : &a->slice[i],
                                        hcgrt_round_err(r)));
  }
}

/* Level 2: heads merge the slice verdicts in slice order (heads before
 * this slice, this slice, heads after it) and publish the group's. */
void hcgrt_agree_put_groups(struct hcgrt_round *r, struct hcgrt_agreement *a) {
  hcg_ctx *ctx = r->ctx;
  const struct hcgrt_plan *plan = a->plan;
  int f = ctx->fanin;
  char key[512];
  for (int i = 0; i < plan->n; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (role(ctx, plan, a->skip, i) != HEAD)
      continue;
    struct hcgrt_slice s = hcgrt_slice_of(ctx, it);
    struct hcgrt_verdict g;
    memset(&g, 0, sizeof g);
    if (!r->status) {
      hcg_error *err = hcgrt_round_err(r);
      int rc = tree_key(ctx, a->epoch, a->phase, 1, it, key, sizeof key);
      if (rc) {
        rc = hcg__fail(err, rc, "cannot derive the PMIx key of the agreement");
      } else {
        int m = positions(ctx, it, 0, s.first, f, a->ranks);
        rc = read_verdicts(ctx, key, a->ranks, m, it->group.size, &g, err);
        verdict_merge(&g, &a->slice[i]);
        m = positions(ctx, it, s.end, it->group.size, f, a->ranks);
        if (!rc)
          rc = read_verdicts(ctx, key, a->ranks, m, it->group.size, &g, err);
      }
      hcgrt_round_note(r, rc);
    }
    if (r->status) {
      memset(&g, 0, sizeof g);
      verdict_add(&g, ctx->rank, r->status);
    }
    a->v[i] = g;
    hcgrt_round_note(r, publish_verdict(ctx, a->epoch, a->phase, 2, it, &g,
                                        hcgrt_round_err(r)));
  }
}

/* Level 3: the other members read their head's group verdict. */
void hcgrt_agree_read_heads(struct hcgrt_round *r, struct hcgrt_agreement *a) {
  hcg_ctx *ctx = r->ctx;
  const struct hcgrt_plan *plan = a->plan;
  char key[512];
  for (int i = 0; i < plan->n && !r->status; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (role(ctx, plan, a->skip, i) != MEMBER)
      continue;
    int head = hcg_group_member(ctx->layout, &it->group,
                                hcgrt_slice_of(ctx, it).first);
    hcg_error *err = hcgrt_round_err(r);
    int rc = tree_key(ctx, a->epoch, a->phase, 2, it, key, sizeof key);
    if (rc)
      rc = hcg__fail(err, rc, "cannot derive the PMIx key of the agreement");
    else
      rc = read_verdicts(ctx, key, &head, 1, it->group.size, &a->v[i], err);
    hcgrt_round_note(r, rc);
  }
}

/* hcg_comm_create's two rounds (create.c, built with NCCL; defined here,
 * beside the agreement they carry, so that every build has them). READY:
 * the exchange's fence carries each rank's status, and a job larger than
 * the fan-in adds the tree's two fences and the relay's. DONE: the
 * agreement's own fence, and the tree's two. A failed rank fences on. */
const struct hcgrt_round_table hcgrt_round_ready = {0,
                                                    4,
                                                    {{HCGRT_FENCE_IDS, 0},
                                                     {HCGRT_FENCE_SLICES, 1},
                                                     {HCGRT_FENCE_GROUPS, 1},
                                                     {HCGRT_FENCE_RELAY, 1}}};
const struct hcgrt_round_table hcgrt_round_done = {
    0,
    3,
    {{HCGRT_FENCE_DONE, 0}, {HCGRT_FENCE_SLICES, 1}, {HCGRT_FENCE_GROUPS, 1}}};

void hcgrt_agree_begin(struct hcgrt_round *r, struct hcgrt_agreement *a,
                       const struct hcgrt_plan *plan, const int *skip,
                       long long epoch, int phase, struct hcgrt_verdict *v) {
  hcg_ctx *ctx = r->ctx;
  memset(a, 0, sizeof *a);
  a->plan = plan;
  a->skip = skip;
  a->epoch = epoch;
  a->phase = phase;
  a->v = v;
  memset(v, 0, (size_t)plan->n * sizeof *v);
  int cap = 1;
  for (int i = 0; i < plan->n; i++)
    if (role(ctx, plan, skip, i) != NONE) {
      int heads = hcgrt_slice_of(ctx, &plan->items[i]).heads;
      cap = heads > cap ? heads : cap;
    }
  a->slice = calloc((size_t)(plan->n ? plan->n : 1), sizeof *a->slice);
  a->ranks = malloc((size_t)cap * sizeof *a->ranks);
  if (!a->slice || !a->ranks)
    hcgrt_round_note(r, hcg__fail(hcgrt_round_err(r), HCG_ENOMEM,
                                  "out of memory for the agreement"));
}

void hcgrt_agree_put_status(struct hcgrt_round *r, struct hcgrt_agreement *a) {
  hcgrt_round_note(
      r, put_status(r->ctx, a->epoch, a->phase, r->status, hcgrt_round_err(r)));
}

void hcgrt_agree_read_statuses(struct hcgrt_round *r,
                               struct hcgrt_agreement *a) {
  if (!r->status)
    hcgrt_round_note(r, read_statuses_needed(r->ctx, a->plan, a->skip, a->epoch,
                                             a->phase, a->v, a->slice,
                                             hcgrt_round_err(r)));
}

void hcgrt_agree_end(struct hcgrt_agreement *a) {
  free(a->slice);
  free(a->ranks);
  a->slice = NULL;
  a->ranks = NULL;
}

void hcgrt_verdict_text(const struct hcgrt_verdict *v, char *buf, size_t cap) {
  size_t len = 0;
  int shown = v->nbad < HCGRT_VERDICT_NAMED ? v->nbad : HCGRT_VERDICT_NAMED;
  len += (size_t)snprintf(buf, cap, "%s", v->nbad > 1 ? "ranks " : "rank ");
  for (int k = 0; k < shown && len < cap; k++)
    len += (size_t)snprintf(buf + len, cap - len, "%s%d", k ? ", " : "",
                            v->bad[k]);
  if (v->nbad > shown && len < cap)
    snprintf(buf + len, cap - len, " and %d more", v->nbad - shown);
}
