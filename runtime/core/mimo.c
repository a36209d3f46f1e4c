/*
 * mimo.c - multi-module roles and the language module's embedding groups.
 */
#include "internal.h"

/* The pp groups of the language grid (singletons when it has no pp). */
static int pp_request(const hcg_layout *L, hcg_request *req) {
  if (!L || !hcg__valid_grid(L, L->language))
    return HCG_EINVAL;
  int pp = hcg__find_dim(&L->grids[L->language].views[0], "pp");
  req->grid = L->language;
  req->view = 0;
  req->dims = pp >= 0 ? 1u << pp : 0;
  return HCG_OK;
}

int hcg_embedding_num_groups(const hcg_layout *L) {
  hcg_request req;
  return pp_request(L, &req) ? 0 : hcg_request_num_groups(L, &req);
}

/* embd = [P[0], P[-1]] ([P[0]] when pp is 1); pos_embd = [P[0]]. */
static int embedding_of(const hcg_layout *L, int kind, const hcg_group *pp,
                        int out[2], int *n) {
  out[0] = pp->first;
  *n = 1;
  if (kind == HCG_EMBD && pp->size > 1) {
    out[1] = hcg_group_member(L, pp, pp->size - 1);
    *n = 2;
  }
  return HCG_OK;
}

int hcg_embedding_group_at(const hcg_layout *L, enum hcg_embedding kind,
                           int ordinal, int out[2], int *n) {
  hcg_request req;
  hcg_group pp;
  if ((kind != HCG_EMBD && kind != HCG_POS_EMBD) || !out || !n ||
      pp_request(L, &req))
    return HCG_EINVAL;
  int rc = hcg_group_at(L, &req, ordinal, &pp);
  return rc ? rc : embedding_of(L, kind, &pp, out, n);
}

int hcg_embedding_group_of_rank(const hcg_layout *L, enum hcg_embedding kind,
                                int rank, int out[2], int *n) {
  hcg_request req;
  hcg_group pp;
  if ((kind != HCG_EMBD && kind != HCG_POS_EMBD) || !out || !n ||
      pp_request(L, &req))
    return HCG_EINVAL;
  int rc = hcg_group_of_rank(L, &req, rank, &pp);
  if (rc)
    return rc;
  int first = pp.index == 0, last = pp.index == pp.size - 1;
  if (!(first || (kind == HCG_EMBD && last)))
    return HCG_ENOTMEMBER;
  return embedding_of(L, kind, &pp, out, n);
}

int hcg_rank_stage(const hcg_layout *L, int grid, int rank, int *is_first,
                   int *is_last) {
  if (!hcg__valid_grid(L, grid) || !is_first || !is_last)
    return HCG_EINVAL;
  if (!hcg_grid_contains(L, grid, rank))
    return HCG_ENOTMEMBER;
  const struct hcg_view *base = &L->grids[grid].views[0];
  int pp = hcg__find_dim(base, "pp");
  if (L->mode == HCG_MODE_COLOCATED || pp < 0) {
    *is_first = *is_last = 1;
    return HCG_OK;
  }
  const struct hcg_dim *d = &base->dims[pp];
  int c = ((rank - L->grids[grid].offset) / d->stride) % d->size;
  *is_first = c == 0;
  *is_last = c == d->size - 1;
  return HCG_OK;
}
