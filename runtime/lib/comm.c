/*
 * comm.c - the communicators a context holds: its registry and the
 * lookups of hcg.h, alike with or without NCCL (comm_nccl.c makes and
 * destroys them, comm_none.c stands in for it in a build without NCCL).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "comm.h"

/* ---- the registry of a context ----------------------------------------- */

struct hcg_comm *hcgrt_comm_lookup(const hcg_ctx *ctx, const char *key) {
  for (int i = 0; i < ctx->comms.n; i++)
    if (strcmp(ctx->comms.v[i]->key, key) == 0)
      return ctx->comms.v[i];
  return NULL;
}

int hcg_ctx_num_comms(const hcg_ctx *ctx) { return ctx ? ctx->comms.n : 0; }

const char *hcg_comm_key(const hcg_comm *c) { return c ? c->key : NULL; }
int hcg_comm_size(const hcg_comm *c) { return c ? c->size : 0; }
int hcg_comm_rank(const hcg_comm *c) { return c ? c->rank : -1; }
hcg_nccl_comm hcg_comm_nccl(const hcg_comm *c) { return c ? c->nccl : NULL; }
hcg_cuda_stream hcg_comm_stream(const hcg_comm *c) {
  return c ? c->stream : NULL;
}

int hcg_comm_find_request(const hcg_ctx *ctx, const hcg_request *req,
                          hcg_comm **out) {
  if (!ctx || !req || !out)
    return HCG_EINVAL;
  *out = NULL;
  hcg_group g;
  int rc = hcg_group_of_rank(ctx->layout, req, ctx->rank, &g);
  if (rc)
    return rc;
  char key[HCG_KEY_MAX];
  if ((rc = hcg_request_key(ctx->layout, req, key, sizeof key)))
    return rc;
  *out = hcgrt_comm_lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

int hcg_comm_find(const hcg_ctx *ctx, const char *spec, hcg_comm **out,
                  hcg_error *err) {
  if (!ctx || !spec || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_comm_find");
  *out = NULL;
  hcg_request req;
  int rc = hcg_request_parse(ctx->layout, spec, &req, err);
  if (rc)
    return rc;
  rc = hcg_comm_find_request(ctx, &req, out);
  if (rc == HCG_ENOTMEMBER)
    return hcg__fail(err, rc, "rank %d is not in grid '%s' of spec '%s'",
                     ctx->rank, hcg_grid_name(ctx->layout, req.grid), spec);
  if (rc == HCG_ENOTFOUND) {
    char key[HCG_KEY_MAX];
    hcg_request_key(ctx->layout, &req, key, sizeof key);
    return hcg__fail(err, rc,
                     "no communicator for group '%s' (spec '%s') "
                     "was created in this context",
                     key, spec);
  }
  if (rc)
    return hcg__fail(err, rc, "spec '%s': %s", spec, hcg_strerror(rc));
  return HCG_OK;
}

int hcg_comm_find_key(const hcg_ctx *ctx, const char *key, hcg_comm **out) {
  if (!ctx || !key || !out)
    return HCG_EINVAL;
  *out = hcgrt_comm_lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

int hcg_comm_find_field(const hcg_ctx *ctx, int grid, enum hcg_field field,
                        hcg_comm **out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = NULL;
  hcg_request req;
  int rc = hcg_collection_request(ctx->layout, grid, field, &req);
  return rc ? rc : hcg_comm_find_request(ctx, &req, out);
}

int hcg_comm_find_embedding(const hcg_ctx *ctx, enum hcg_embedding kind,
                            hcg_comm **out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = NULL;
  int members[2], n;
  int rc =
      hcg_embedding_group_of_rank(ctx->layout, kind, ctx->rank, members, &n);
  if (rc)
    return rc;
  char key[HCG_KEY_MAX];
  if ((rc = hcgrt_embedding_key(ctx->layout, kind, key, sizeof key)))
    return rc;
  *out = hcgrt_comm_lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

int hcgrt_comm_register(hcg_ctx *ctx, struct hcg_comm **v, int n) {
  struct hcgrt_comm_list *l = &ctx->comms;
  if (l->n + n > l->cap) {
    int cap = l->cap ? l->cap : 16;
    while (cap < l->n + n)
      cap *= 2;
    struct hcg_comm **nv = realloc(l->v, (size_t)cap * sizeof *nv);
    if (!nv)
      return HCG_ENOMEM;
    l->v = nv;
    l->cap = cap;
  }
  for (int i = 0; i < n; i++)
    l->v[l->n++] = v[i];
  return HCG_OK;
}

void hcgrt_comm_unregister(hcg_ctx *ctx, const struct hcg_comm *c) {
  struct hcgrt_comm_list *l = &ctx->comms;
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == c) {
      l->v[i] = l->v[--l->n];
      return;
    }
}
void hcgrt_comm_free(struct hcg_comm *c) {
  if (!c)
    return;
  free(c->net_name);
  free(c->comm_name);
  free(c);
}
