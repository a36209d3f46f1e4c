/*
 * grid.c - coordinates and groups, computed from one rank's coordinates.
 *
 * rank = offset + sum_i coord_i * stride_i, the first dim fastest. The group
 * of a rank for a dim set D keeps the coordinates outside D and lets those
 * in D vary; its members, its ordinal among the groups and the rank's index
 * inside it are all mixed-radix numbers, so each is O(dims) to compute and
 * nothing ever enumerates the world.
 */
#include <string.h>

#include "internal.h"

int hcg__compute_strides(struct hcg_view *v) {
  long long stride = 1;
  for (int d = 0; d < v->ndims; d++) {
    if (stride > HCG_MAX_WORLD)
      return -1;
    v->dims[d].stride = (int)stride;
    stride *= v->dims[d].size;
  }
  return stride > HCG_MAX_WORLD ? -1 : 0;
}

int hcg__valid_grid(const struct hcg_layout *L, int grid) {
  return L && grid >= 0 && grid < L->ngrids;
}

int hcg__valid_view(const struct hcg_layout *L, int grid, int view) {
  return hcg__valid_grid(L, grid) && view >= 0 && view < L->grids[grid].nviews;
}

const struct hcg_view *hcg__view(const struct hcg_layout *L, int grid,
                                 int view) {
  return hcg__valid_view(L, grid, view) ? &L->grids[grid].views[view] : NULL;
}

int hcg__find_dim(const struct hcg_view *v, const char *name) {
  if (!v || !name)
    return -1;
  for (int d = 0; d < v->ndims; d++)
    if (strcmp(v->dims[d].name, name) == 0)
      return d;
  return -1;
}

/* ---- grids, views, dims ------------------------------------------------ */

int hcg_layout_num_grids(const hcg_layout *L) { return L ? L->ngrids : 0; }

int hcg_layout_find_grid(const hcg_layout *L, const char *name) {
  if (!L || !name)
    return -1;
  for (int g = 0; g < L->ngrids; g++)
    if (strcmp(L->grids[g].name, name) == 0)
      return g;
  return -1;
}

const char *hcg_grid_name(const hcg_layout *L, int grid) {
  return hcg__valid_grid(L, grid) ? L->grids[grid].name : NULL;
}

int hcg_grid_offset(const hcg_layout *L, int grid) {
  return hcg__valid_grid(L, grid) ? L->grids[grid].offset : -1;
}

int hcg_grid_size(const hcg_layout *L, int grid) {
  return hcg__valid_grid(L, grid) ? L->grids[grid].size : -1;
}

int hcg_grid_contains(const hcg_layout *L, int grid, int rank) {
  if (!hcg__valid_grid(L, grid))
    return 0;
  const struct hcg_grid *g = &L->grids[grid];
  return rank >= g->offset && (long long)rank < (long long)g->offset + g->size;
}

int hcg_grid_num_views(const hcg_layout *L, int grid) {
  return hcg__valid_grid(L, grid) ? L->grids[grid].nviews : 0;
}

int hcg_grid_find_view(const hcg_layout *L, int grid, const char *name) {
  if (!hcg__valid_grid(L, grid) || !name)
    return -1;
  for (int v = 0; v < L->grids[grid].nviews; v++)
    if (strcmp(L->grids[grid].views[v].name, name) == 0)
      return v;
  return -1;
}

const char *hcg_view_name(const hcg_layout *L, int grid, int view) {
  const struct hcg_view *v = hcg__view(L, grid, view);
  return v ? v->name : NULL;
}

int hcg_view_num_dims(const hcg_layout *L, int grid, int view) {
  const struct hcg_view *v = hcg__view(L, grid, view);
  return v ? v->ndims : 0;
}

int hcg_view_find_dim(const hcg_layout *L, int grid, int view,
                      const char *name) {
  return hcg__find_dim(hcg__view(L, grid, view), name);
}

static const struct hcg_dim *dim_at(const hcg_layout *L, int grid, int view,
                                    int dim) {
  const struct hcg_view *v = hcg__view(L, grid, view);
  return v && dim >= 0 && dim < v->ndims ? &v->dims[dim] : NULL;
}

const char *hcg_dim_name(const hcg_layout *L, int grid, int view, int dim) {
  const struct hcg_dim *d = dim_at(L, grid, view, dim);
  return d ? d->name : NULL;
}

int hcg_dim_size(const hcg_layout *L, int grid, int view, int dim) {
  const struct hcg_dim *d = dim_at(L, grid, view, dim);
  return d ? d->size : -1;
}

int hcg_dim_stride(const hcg_layout *L, int grid, int view, int dim) {
  const struct hcg_dim *d = dim_at(L, grid, view, dim);
  return d ? d->stride : -1;
}

int hcg_dim_shared(const hcg_layout *L, int grid, int view, int dim) {
  const struct hcg_dim *d = dim_at(L, grid, view, dim);
  return d ? d->shared : 0;
}

int hcg_rank_coords(const hcg_layout *L, int grid, int view, int rank,
                    int *coords, int cap) {
  const struct hcg_view *v = hcg__view(L, grid, view);
  if (!v || (!coords && v->ndims))
    return HCG_EINVAL;
  if (!hcg_grid_contains(L, grid, rank))
    return HCG_ENOTMEMBER;
  if (cap < v->ndims)
    return HCG_ERANGE;
  int rel = rank - L->grids[grid].offset;
  for (int d = 0; d < v->ndims; d++)
    coords[d] = (rel / v->dims[d].stride) % v->dims[d].size;
  return HCG_OK;
}

/* ---- groups ------------------------------------------------------------ */

static const struct hcg_view *request_view(const hcg_layout *L,
                                           const hcg_request *req) {
  const struct hcg_view *v = req ? hcg__view(L, req->grid, req->view) : NULL;
  if (v && v->ndims < 32 && (req->dims >> v->ndims) != 0)
    return NULL; /* bits past the last dim */
  return v;
}

int hcg_request_group_size(const hcg_layout *L, const hcg_request *req) {
  const struct hcg_view *v = request_view(L, req);
  if (!v)
    return -1;
  int size = 1;
  for (int d = 0; d < v->ndims; d++)
    if (req->dims & (1u << d))
      size *= v->dims[d].size;
  return size;
}

int hcg_request_num_groups(const hcg_layout *L, const hcg_request *req) {
  int size = hcg_request_group_size(L, req);
  return size > 0 ? L->grids[req->grid].size / size : -1;
}

int hcg_group_of_rank(const hcg_layout *L, const hcg_request *req, int rank,
                      hcg_group *out) {
  const struct hcg_view *v = request_view(L, req);
  if (!v || !out)
    return HCG_EINVAL;
  if (!hcg_grid_contains(L, req->grid, rank))
    return HCG_ENOTMEMBER;
  const struct hcg_grid *g = &L->grids[req->grid];
  int rel = rank - g->offset;
  int first = g->offset, size = 1, index = 0, ordinal = 0, place = 1;
  for (int d = 0; d < v->ndims; d++) {
    const struct hcg_dim *dim = &v->dims[d];
    int c = (rel / dim->stride) % dim->size;
    if (req->dims & (1u << d)) {
      index += c * size;
      size *= dim->size;
    } else {
      first += c * dim->stride;
      ordinal += c * place;
      place *= dim->size;
    }
  }
  out->req = *req;
  out->ordinal = ordinal;
  out->first = first;
  out->size = size;
  out->index = index;
  return HCG_OK;
}

int hcg_group_at(const hcg_layout *L, const hcg_request *req, int ordinal,
                 hcg_group *out) {
  const struct hcg_view *v = request_view(L, req);
  if (!v || !out)
    return HCG_EINVAL;
  int ngroups = hcg_request_num_groups(L, req);
  if (ordinal < 0 || ordinal >= ngroups)
    return HCG_ERANGE;
  const struct hcg_grid *g = &L->grids[req->grid];
  int first = g->offset, size = 1, rest = ordinal;
  for (int d = 0; d < v->ndims; d++) {
    const struct hcg_dim *dim = &v->dims[d];
    if (req->dims & (1u << d)) {
      size *= dim->size;
    } else {
      first += (rest % dim->size) * dim->stride;
      rest /= dim->size;
    }
  }
  out->req = *req;
  out->ordinal = ordinal;
  out->first = first;
  out->size = size;
  out->index = -1;
  return HCG_OK;
}

int hcg_group_member(const hcg_layout *L, const hcg_group *grp, int i) {
  const struct hcg_view *v = grp ? request_view(L, &grp->req) : NULL;
  if (!v || i < 0 || i >= grp->size)
    return -1;
  int rank = grp->first, rest = i;
  for (int d = 0; d < v->ndims && rest; d++) {
    const struct hcg_dim *dim = &v->dims[d];
    if (grp->req.dims & (1u << d)) {
      rank += (rest % dim->size) * dim->stride;
      rest /= dim->size;
    }
  }
  return rank;
}

int hcg_group_members(const hcg_layout *L, const hcg_group *grp, int *out,
                      int cap) {
  const struct hcg_view *v = grp ? request_view(L, &grp->req) : NULL;
  if (!v || (!out && grp->size))
    return HCG_EINVAL;
  if (cap < grp->size)
    return HCG_ERANGE;
  /* An odometer over the dims in D, fastest first: each step adds one
   * stride and rolls the digits that overflow. */
  int sel[HCG_MAX_DIMS], n = 0;
  for (int d = 0; d < v->ndims; d++)
    if ((grp->req.dims & (1u << d)) && v->dims[d].size > 1)
      sel[n++] = d;
  int digit[HCG_MAX_DIMS] = {0};
  int rank = grp->first;
  for (int i = 0; i < grp->size; i++) {
    out[i] = rank;
    for (int k = 0; k < n; k++) {
      const struct hcg_dim *dim = &v->dims[sel[k]];
      if (++digit[k] < dim->size) {
        rank += dim->stride;
        break;
      }
      digit[k] = 0;
      rank -= (dim->size - 1) * dim->stride;
    }
  }
  return HCG_OK;
}
