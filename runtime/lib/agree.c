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
 * up). After each fence a member reads the statuses of the other members
 * of its groups. Every member of a group reads the same values, so all of
 * them reach the same verdict for it, with no further round.
 *
 * Cost per rank: one put per phase, and one get per distinct member of its
 * groups, O(sum of its group sizes): a world-sized dp group makes it
 * O(world) for its members, as NCCL's own initialization of that group is.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt.h"

static const char *const phase_name[] = {"ready", "done"};

static int phase_key(const hcg_ctx *ctx, long long epoch, int phase, char *buf,
                     size_t cap) {
  /* "ready" and "done" cannot be group keys, which hold ':' or '#'. */
  return hcg_exchange_pmix_key(ctx->tag, epoch, phase_name[phase], buf, cap);
}

int hcgrt_agree_put(hcg_ctx *ctx, long long epoch, int phase, int status,
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

/* Statuses of ranks[0..n-1] (distinct, ascending) into st: one get each,
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

int hcgrt_agree_read(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                     const int *skip, long long epoch, int phase,
                     struct hcgrt_verdict *v, hcg_error *err) {
  memset(v, 0, (size_t)plan->n * sizeof *v);
  /* Every other member of the groups to read, each once. */
  long long total = 0;
  for (int i = 0; i < plan->n; i++)
    if (plan->items[i].member && !(skip && skip[i]))
      total += plan->items[i].group.size;
  if (total == 0)
    return HCG_OK;
  int *all = malloc((size_t)total * sizeof *all);
  int *own = NULL, *st = NULL;
  int rc = HCG_OK;
  if (!all) {
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for the agreement");
    goto out;
  }
  long long n = 0;
  for (int i = 0; i < plan->n && !rc; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (!it->member || (skip && skip[i]) || it->group.size < 2)
      continue;
    if (hcgrt_item_members(ctx->layout, it, all + n, (int)(total - n)))
      rc = hcg__fail(err, HCG_EINVAL, "members of group '%s' unavailable",
                     it->key);
    else
      n += it->group.size;
  }
  if (rc)
    goto out;
  qsort(all, (size_t)n, sizeof *all, cmp_int);
  int m = 0;
  for (long long i = 0; i < n; i++)
    if (all[i] != ctx->rank && (m == 0 || all[m - 1] != all[i]))
      all[m++] = all[i];
  st = malloc((size_t)(m ? m : 1) * sizeof *st);
  own = malloc((size_t)total * sizeof *own);
  if (!st || !own) {
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

  /* Per group: the members that failed, ascending. */
  for (int i = 0; i < plan->n; i++) {
    const struct hcgrt_item *it = &plan->items[i];
    if (!it->member || (skip && skip[i]) || it->group.size < 2)
      continue;
    int got = hcgrt_item_members(ctx->layout, it, own, (int)total)
                  ? 0
                  : it->group.size;
    for (int k = 0; k < got; k++) {
      if (own[k] == ctx->rank)
        continue;
      const int *at = bsearch(&own[k], all, (size_t)m, sizeof *all, cmp_int);
      int s = at ? st[at - all] : HCG_EINVAL;
      if (s == HCG_OK)
        continue;
      if (!v[i].status)
        v[i].status = s;
      if (v[i].nbad < HCGRT_VERDICT_NAMED)
        v[i].bad[v[i].nbad] = own[k];
      v[i].nbad++;
    }
  }
out:
  free(all);
  free(own);
  free(st);
  return rc;
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
