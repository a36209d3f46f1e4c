/*
 * create.c - hcg_comm_create: plan, a round (the ids and every rank's
 * READY status), NCCL initialization, a round (every rank's DONE status),
 * and keeping the communicators whose groups came up everywhere.
 *
 * From the first round on, a rank takes every fence of both rounds
 * whatever happens to it (round.h), so that its peers learn of its
 * failure from its statuses (agree.c) instead of waiting for it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_nccl.h"
#include "round.h"
#include "slice.h"

const struct hcgrt_comm_backend *hcgrt_comm_backend = &hcgrt_comm_nccl;

/* The state of one hcg_comm_create; this rank's own failure is its
 * rounds'. */
struct create {
  const hcg_groupset *set;
  const struct hcgrt_comm_backend *b;
  struct hcgrt_plan plan;
  long long epoch;
  struct hcgrt_pending *p;
  int *skip;                    /* groups not initialized: a member failed */
  struct hcgrt_verdict *v1;     /* READY verdicts                          */
  struct hcgrt_verdict *v2;     /* DONE verdicts                           */
  struct hcgrt_agreement agree; /* the agreement of the round running     */
};

/* Everything up to the exchange, none of which needs a peer. */
static void stage_local(struct hcgrt_round *r, struct create *cr) {
  hcg_ctx *ctx = r->ctx;
  int n;
  if (hcgrt_round_note(r, hcgrt_plan_build(cr->set, ctx->rank, 0, &cr->plan,
                                           hcgrt_round_err(r))) ||
      (n = cr->plan.n) == 0)
    return;
  cr->p = calloc((size_t)n, sizeof *cr->p);
  cr->skip = calloc((size_t)n, sizeof *cr->skip);
  cr->v1 = calloc((size_t)n, sizeof *cr->v1);
  cr->v2 = calloc((size_t)n, sizeof *cr->v2);
  if (!cr->p || !cr->skip || !cr->v1 || !cr->v2) {
    hcgrt_round_note(r, hcg__fail(hcgrt_round_err(r), HCG_ENOMEM,
                                  "out of memory for communicators"));
    return;
  }
  int version = 0;
  if (hcgrt_round_note(r,
                       hcgrt_comm_nccl_version(&version, hcgrt_round_err(r))))
    return;
  cr->plan.scalable = hcgrt_nccl_scalable(version);
  for (int i = 0; i < n; i++)
    if (hcgrt_comm_lookup(ctx, cr->plan.items[i].key)) {
      hcgrt_round_note(r,
                       hcg__fail(hcgrt_round_err(r), HCG_EEXIST,
                                 "a communicator for group '%s' already exists "
                                 "in this context (hcg_comm_destroy it first)",
                                 cr->plan.items[i].key));
      return;
    }
  for (int i = 0; i < n; i++)
    if (hcgrt_round_note(r, hcgrt_comm_prepare(ctx, cr->set, &cr->plan.items[i],
                                               version, &cr->p[i],
                                               hcgrt_round_err(r))))
      return;
  hcgrt_round_note(r, cr->b->ready(ctx, hcgrt_round_err(r)));
}

/* The first round's steps: the ids, and the agreement on READY; once it
 * is known (after the ids' fence, or in a relayed job the group verdicts'),
 * groups with a member that failed already are left alone by all, and the
 * ids of the others are fetched. */
static void fetch_agreed(struct hcgrt_round *r, struct create *cr) {
  for (int i = 0; !r->status && i < cr->plan.n; i++)
    cr->skip[i] = cr->v1[i].status != HCG_OK;
  hcgrt_ids_fetch(r, &cr->plan, cr->epoch, cr->skip);
}

static void ready_publish(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_ids_publish(r, &cr->plan, cr->epoch, cr->b->id_flags);
  hcgrt_agree_put_status(r, &cr->agree);
}

static void ready_read(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_agree_read_statuses(r, &cr->agree);
  if (!hcgrt_relayed(r->ctx))
    fetch_agreed(r, cr);
}

static void ready_slices(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_agree_put_slices(r, &cr->agree);
}

static void ready_groups(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_agree_put_groups(r, &cr->agree);
}

static void ready_heads(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_agree_read_heads(r, &cr->agree);
  fetch_agreed(r, cr); /* only relayed jobs take the group fence */
}

static void ready_relayed(struct hcgrt_round *r, void *arg) {
  struct create *cr = arg;
  hcgrt_ids_fetch_relayed(r, &cr->plan, cr->epoch, cr->skip);
}

static const struct hcgrt_round_steps ready_steps = {
    .before = {[HCGRT_FENCE_IDS] = ready_publish,
               [HCGRT_FENCE_SLICES] = ready_slices,
               [HCGRT_FENCE_GROUPS] = ready_groups},
    .after = {[HCGRT_FENCE_IDS] = ready_read,
              [HCGRT_FENCE_GROUPS] = ready_heads,
              [HCGRT_FENCE_RELAY] = ready_relayed},
};

/* Between the rounds: NCCL initialization of the groups not skipped. */
static void init_local(struct hcgrt_round *r, struct create *cr) {
  if (!r->status)
    hcgrt_round_note(
        r, cr->b->init(r->ctx, &cr->plan, cr->p, cr->skip, hcgrt_round_err(r)));
  if (r->status)
    hcgrt_comm_abort_all(cr->p, cr->plan.n);
}

/* The second round's steps: the agreement on DONE. Peers may still be in
 * NCCL initialization (up to the timeout) when a rank arrives; a rank
 * that failed has aborted its communicators before it says so, and one
 * that fails in the agreement aborts them at once. */
static void done_then(struct hcgrt_round *r, struct create *cr,
                      void (*part)(struct hcgrt_round *,
                                   struct hcgrt_agreement *)) {
  part(r, &cr->agree);
  if (r->status)
    hcgrt_comm_abort_all(cr->p, cr->plan.n);
}

static void done_publish(struct hcgrt_round *r, void *arg) {
  done_then(r, arg, hcgrt_agree_put_status);
}

static void done_read(struct hcgrt_round *r, void *arg) {
  done_then(r, arg, hcgrt_agree_read_statuses);
}

static void done_slices(struct hcgrt_round *r, void *arg) {
  done_then(r, arg, hcgrt_agree_put_slices);
}

static void done_groups(struct hcgrt_round *r, void *arg) {
  done_then(r, arg, hcgrt_agree_put_groups);
}

static void done_heads(struct hcgrt_round *r, void *arg) {
  done_then(r, arg, hcgrt_agree_read_heads);
}

static const struct hcgrt_round_steps done_steps = {
    .before = {[HCGRT_FENCE_DONE] = done_publish,
               [HCGRT_FENCE_SLICES] = done_slices,
               [HCGRT_FENCE_GROUPS] = done_groups},
    .after =
        {[HCGRT_FENCE_DONE] = done_read, [HCGRT_FENCE_GROUPS] = done_heads},
};

/* The communicators whose groups succeeded everywhere go to the context
 * (none from a backend that made none). */
static int keep(hcg_ctx *ctx, struct create *cr, int *kept) {
  int n = cr->plan.n, k = 0;
  *kept = 0;
  struct hcg_comm **v = n > 0 ? calloc((size_t)n, sizeof *v) : NULL;
  if (n && !v)
    return HCG_ENOMEM;
  for (int i = 0; i < n; i++)
    if (cr->p[i].nccl) {
      cr->p[i].comm->nccl = cr->p[i].nccl;
      v[k++] = cr->p[i].comm;
    }
  int rc = hcgrt_comm_register(ctx, v, k);
  free(v);
  if (rc)
    return rc;
  for (int i = 0; i < n; i++)
    if (cr->p[i].nccl) { /* the context owns it now: not ours to abort */
      cr->p[i].comm = NULL;
      cr->p[i].nccl = NULL;
    }
  ctx->stats.comms_created += k;
  *kept = k;
  return HCG_OK;
}

/* The error of a rank that did its part when a peer did not: the first
 * failed group of the plan, its failed members, and how many more. */
static int peer_failure(const struct create *cr, int kept, hcg_error *err) {
  int first = -1, more = 0;
  const struct hcgrt_verdict *fv = NULL;
  for (int i = 0; i < cr->plan.n; i++) {
    const struct hcgrt_verdict *vv = cr->skip[i] ? &cr->v1[i] : &cr->v2[i];
    if (!vv->status)
      continue;
    if (first < 0) {
      first = i;
      fv = vv;
    } else {
      more++;
    }
  }
  if (first < 0)
    return HCG_OK;
  char who[256];
  hcgrt_verdict_text(fv, who, sizeof who);
  int code = fv->status == HCG_ETIMEOUT ? HCG_ETIMEOUT : HCG_ENCCL;
  return hcg__fail(
      err, code,
      "the communicator of group '%s' was not formed: %s "
      "failed %s (%s%s), so every member %s; of this rank's "
      "other groups in the call %d failed and %d were formed "
      "and kept",
      cr->plan.items[first].key, who,
      cr->skip[first] ? "before NCCL initialization" : "to initialize it",
      fv->nbad > 1 ? "the first: " : "", hcg_strerror(fv->status),
      cr->skip[first] ? "left it uninitialized" : "aborted it", more, kept);
}

static void create_free(struct create *cr) {
  for (int i = 0; cr->p && i < cr->plan.n; i++) {
    hcgrt_comm_abort(&cr->p[i]);
    hcgrt_comm_free(cr->p[i].comm);
  }
  free(cr->p);
  free(cr->skip);
  free(cr->v1);
  free(cr->v2);
  hcgrt_plan_free(&cr->plan);
}

/* The call's outcome: this rank's own failure first, then a failed fence,
 * else rc with err. */
static int finish(const struct hcgrt_round *r, struct create *cr, int rc,
                  hcg_error *err) {
  int end = hcgrt_round_end(r, err);
  create_free(cr);
  return end ? end : rc;
}

int hcg_comm_create(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  return hcgrt_comm_create(ctx, set, hcgrt_comm_backend, err);
}

int hcgrt_comm_create(hcg_ctx *ctx, const hcg_groupset *set,
                      const struct hcgrt_comm_backend *b, hcg_error *err) {
  struct create cr;
  memset(&cr, 0, sizeof cr);
  cr.set = set;
  cr.b = b;
  int rc = hcgrt_check_set(ctx, set, "hcg_comm_create", err);
  if (rc || (b->check && (rc = b->check(err))))
    return rc;

  /* Plan. A context that cannot fence at all still reports a local
   * failure first (it is the more useful message). */
  struct hcgrt_round r;
  hcgrt_round_init(&r, ctx, &hcgrt_round_ready, &ready_steps, &cr);
  stage_local(&r, &cr);
  if ((rc = hcgrt_exchange_usable(ctx, err)))
    return finish(&r, &cr, rc, err);

  /* Round 1: the ids and every rank's READY status. */
  cr.epoch = hcgrt_exchange_begin(ctx);
  hcgrt_agree_begin(&r, &cr.agree, &cr.plan, NULL, cr.epoch, HCGRT_AGREE_READY,
                    cr.v1);
  int res = hcgrt_round_run(&r);
  hcgrt_agree_end(&cr.agree);
  if (res == HCGRT_ROUND_BROKEN) {
    if (r.broken == HCGRT_FENCE_IDS && r.fence_rc == HCG_ETIMEOUT)
      hcgrt_exchange_blame(ctx, &cr.plan, cr.epoch, &r.fence_err);
    return finish(&r, &cr, HCG_OK, err);
  }

  /* NCCL initialization. */
  init_local(&r, &cr);

  /* Round 2: every rank's DONE status. */
  hcgrt_round_next(&r, &hcgrt_round_done, &done_steps);
  hcgrt_agree_begin(&r, &cr.agree, &cr.plan, cr.skip, cr.epoch,
                    HCGRT_AGREE_DONE, cr.v2);
  res = hcgrt_round_run(&r);
  hcgrt_agree_end(&cr.agree);
  if (res == HCGRT_ROUND_BROKEN)
    return finish(&r, &cr, HCG_OK, err); /* unknown outcome: abort all */
  if (r.status)
    return finish(&r, &cr, HCG_OK, err);
  for (int i = 0; i < cr.plan.n; i++)
    if (!cr.skip[i] && cr.v2[i].status)
      hcgrt_comm_abort(&cr.p[i]); /* a member failed: all members abort it */

  /* Keep. */
  int kept = 0;
  if (keep(ctx, &cr, &kept)) {
    hcgrt_comm_abort_all(cr.p, cr.plan.n);
    return finish(&r, &cr,
                  hcg__fail(err, HCG_ENOMEM, "out of memory for communicators"),
                  err);
  }
  return finish(&r, &cr, peer_failure(&cr, kept, err), err);
}
