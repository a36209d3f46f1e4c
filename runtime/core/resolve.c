/*
 * resolve.c - grid checks, offsets and inferred sizes of grids.
 *
 * A grid without '@' starts where the previous grid ends (the first at 0);
 * '*' in a grid fills its span up to the next larger explicit offset of any
 * grid, or to the world's end. Sizes are multiplied in 64 bits and checked
 * against HCG_MAX_WORLD at every step, so no product can overflow.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* Product of the sizes of v's dims other than `skip` (and other than dims
 * still unresolved), or -1 once it passes HCG_MAX_WORLD. */
static long long product_except(const struct hcg_view *v, int skip) {
  long long prod = 1;
  for (int d = 0; d < v->ndims; d++) {
    if (d == skip || v->dims[d].size == 0)
      continue;
    prod *= v->dims[d].size;
    if (prod > HCG_MAX_WORLD)
      return -1;
  }
  return prod;
}

/* "tp=2, cp=3" for the dims of v other than skip, into b. */
static void list_dims(struct hcg_buf *b, const struct hcg_view *v, int skip) {
  int first = 1;
  for (int d = 0; d < v->ndims; d++) {
    if (d == skip)
      continue;
    hcg__buf_printf(b, "%s%s=%d", first ? "" : ", ", v->dims[d].name,
                    v->dims[d].size);
    first = 0;
  }
  if (first)
    hcg__buf_puts(b, "none");
}

/* Shared by grids and views: no dim may be named twice. */
int hcg__check_dims(const struct hcg_view *v, const char *kind,
                    const char *label, const struct hcg_source *src,
                    hcg_error *err) {
  for (int j = 1; j < v->ndims; j++)
    for (int i = 0; i < j; i++)
      if (strcmp(v->dims[i].name, v->dims[j].name) == 0)
        return hcg__fail_at(err, HCG_ELAYOUT, src, v->dims[j].pos,
                            "%s '%s' names dim '%s' twice", kind, label,
                            v->dims[j].name);
  return HCG_OK;
}

/* Resolves a '*' in view v so that its dims multiply to `span`. */
int hcg__infer(struct hcg_view *v, long long span, const char *kind,
               const char *label, const struct hcg_source *src,
               hcg_error *err) {
  for (int d = 0; d < v->ndims; d++) {
    if (!v->dims[d].infer)
      continue;
    long long rest = product_except(v, d);
    if (rest < 0 || span % rest != 0) {
      char dims[512];
      struct hcg_buf b;
      hcg__buf_init(&b, dims, sizeof dims);
      list_dims(&b, v, d);
      return hcg__fail_at(err, HCG_ELAYOUT, src, v->dims[d].size_pos,
                          "cannot infer '%s' of %s '%s': %lld rank%s not a "
                          "multiple of %lld, the product of its other dims "
                          "(%s)",
                          v->dims[d].name, kind, label, span,
                          span == 1 ? " is" : "s are",
                          rest < 0 ? (long long)HCG_MAX_WORLD + 1 : rest, dims);
    }
    v->dims[d].size = (int)(span / rest);
  }
  return HCG_OK;
}

/* The end of the span a '*' in grid g may fill: the next larger explicit
 * offset of any grid, or the world's end. */
static long long span_limit(const struct hcg_layout *L, int offset) {
  long long limit = L->world;
  for (int h = 0; h < L->ngrids; h++) {
    const struct hcg_grid *o = &L->grids[h];
    if (o->explicit_offset && o->offset > offset && o->offset < limit)
      limit = o->offset;
  }
  return limit;
}

int hcg__resolve_grids(struct hcg_layout *L, const struct hcg_source *src,
                       hcg_error *err) {
  int rc;
  for (int gi = 0; gi < L->ngrids; gi++) {
    struct hcg_grid *g = &L->grids[gi];
    struct hcg_view *base = &g->views[0];
    if ((rc = hcg__check_dims(base, "grid", g->name, src, err)))
      return rc;
    if (product_except(base, -1) < 0)
      return hcg__fail_at(err, HCG_ELIMIT, src, g->pos,
                          "the dims of grid '%s' multiply to more than %d "
                          "ranks",
                          g->name, HCG_MAX_WORLD);
  }

  long long prev_end = 0, world_end = 0;
  for (int gi = 0; gi < L->ngrids; gi++) {
    struct hcg_grid *g = &L->grids[gi];
    struct hcg_view *base = &g->views[0];
    if (!g->explicit_offset) {
      if (prev_end > HCG_MAX_WORLD - 1)
        return hcg__fail_at(err, HCG_ELIMIT, src, g->pos,
                            "grid '%s' would start at rank %lld, past the "
                            "limit of %d ranks",
                            g->name, prev_end, HCG_MAX_WORLD);
      g->offset = (int)prev_end;
    }
    for (int d = 0; d < base->ndims; d++) {
      if (!base->dims[d].infer)
        continue;
      if (L->world == 0)
        return hcg__fail_at(err, HCG_ELAYOUT, src, base->dims[d].size_pos,
                            "grid '%s' infers '%s' with '*', which needs the "
                            "world size (the task count; hcg -n N)",
                            g->name, base->dims[d].name);
      /* An explicit offset past this one can only be larger, so a '*' runs
       * out of ranks only at the world's end. */
      long long limit = span_limit(L, g->offset);
      if (limit <= g->offset)
        return hcg__fail_at(err, HCG_ELAYOUT, src, base->dims[d].size_pos,
                            "grid '%s' starts at rank %d, where the world "
                            "ends, so '*' has no ranks to fill",
                            g->name, g->offset);
      if ((rc = hcg__infer(base, limit - g->offset, "grid", g->name, src, err)))
        return rc;
    }
    long long size = product_except(base, -1);
    long long end = (long long)g->offset + size;
    if (end > HCG_MAX_WORLD)
      return hcg__fail_at(err, HCG_ELIMIT, src, g->pos,
                          "grid '%s' spans ranks [%d,%lld), past the limit "
                          "of %d ranks",
                          g->name, g->offset, end, HCG_MAX_WORLD);
    if (L->world && end > L->world)
      return hcg__fail_at(err, HCG_ELAYOUT, src, g->pos,
                          "grid '%s' is over sized: it spans ranks [%d,%lld) "
                          "(%lld ranks from offset %d), but the world has %d "
                          "ranks",
                          g->name, g->offset, end, size, g->offset, L->world);
    g->size = (int)size;
    if (hcg__compute_strides(base))
      return hcg__fail(err, HCG_ELIMIT, "grid '%s' is too large", g->name);
    prev_end = end;
    if (end > world_end)
      world_end = end;
  }
  if (L->world == 0)
    L->world = (int)world_end;
  return HCG_OK;
}
