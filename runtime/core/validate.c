/*
 * validate.c - everything checked once grid sizes are known: views (in the
 * order of Megatron's register_view), the MIMO spans, the language module,
 * and the environment names a task will get.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void list_dims(struct hcg_buf *b, const struct hcg_view *v) {
  for (int d = 0; d < v->ndims; d++)
    hcg__buf_printf(b, "%s%s=%d", d ? ", " : "", v->dims[d].name,
                    v->dims[d].size);
}

static void list_names(struct hcg_buf *b, const struct hcg_view *v) {
  for (int d = 0; d < v->ndims; d++)
    hcg__buf_printf(b, "%s%s", d ? ", " : "", v->dims[d].name);
}

/* A view's shared dims take their sizes from the base, whose dims they
 * must be. */
static int share_base_dims(const struct hcg_grid *g, struct hcg_view *v,
                           const char *label, const struct hcg_source *src,
                           hcg_error *err) {
  const struct hcg_view *base = &g->views[0];
  for (int d = 0; d < v->ndims; d++) {
    struct hcg_dim *dim = &v->dims[d];
    if (!dim->shared)
      continue;
    int b = hcg__find_dim(base, dim->name);
    if (b < 0) {
      char names[512];
      struct hcg_buf nb;
      hcg__buf_init(&nb, names, sizeof names);
      list_names(&nb, base);
      return hcg__fail_at(err, HCG_ELAYOUT, src, dim->pos,
                          "view '%s': shared dim '%s' is not a dim of grid "
                          "'%s' (its dims: %s)",
                          label, dim->name, g->name, names);
    }
    dim->base_dim = b;
    dim->size = base->dims[b].size;
  }
  return HCG_OK;
}

/* A view's dims multiply to its grid's size. */
static int check_product(const struct hcg_grid *g, const struct hcg_view *v,
                         const char *label, const struct hcg_source *src,
                         hcg_error *err) {
  long long prod = 1;
  for (int d = 0; d < v->ndims && prod <= HCG_MAX_WORLD; d++)
    prod *= v->dims[d].size;
  if (prod == g->size)
    return HCG_OK;
  char dims[512];
  struct hcg_buf db;
  hcg__buf_init(&db, dims, sizeof dims);
  list_dims(&db, v);
  char total[32];
  if (prod > HCG_MAX_WORLD)
    snprintf(total, sizeof total, "more than %d", HCG_MAX_WORLD);
  else
    snprintf(total, sizeof total, "%lld", prod);
  return hcg__fail_at(err, HCG_ELAYOUT, src, v->pos,
                      "view '%s': its dims (%s) multiply to %s, but a view "
                      "must factor the same ranks as grid '%s', which has "
                      "%d",
                      label, dims, total, g->name, g->size);
}

/* A shared dim enumerates as in the base. Its enumeration is fixed by its
 * size and stride (the grid being the same), so comparing those is
 * comparing the enumerations. */
static int check_shared_enums(const struct hcg_layout *L, int gi, int vi,
                              const char *label, const struct hcg_source *src,
                              hcg_error *err) {
  const struct hcg_view *base = &L->grids[gi].views[0];
  const struct hcg_view *v = &L->grids[gi].views[vi];
  for (int d = 0; d < v->ndims; d++) {
    const struct hcg_dim *dim = &v->dims[d];
    if (!dim->shared)
      continue;
    const struct hcg_dim *bd = &base->dims[dim->base_dim];
    if (dim->size == 1 || dim->stride == bd->stride)
      continue;
    hcg_request in_base = {gi, 0, 1u << dim->base_dim};
    hcg_request in_view = {gi, vi, 1u << d};
    char enums[HCG_ERROR_MAX];
    struct hcg_buf eb;
    hcg__buf_init(&eb, enums, sizeof enums);
    hcg__buf_printf(&eb, "base %s ", dim->name);
    hcg__buf_enum(&eb, L, &in_base);
    hcg__buf_printf(&eb, " != view %s ", dim->name);
    hcg__buf_enum(&eb, L, &in_view);
    return hcg__fail_at(err, HCG_ELAYOUT, src, dim->pos,
                        "view '%s': shared dim '%s' must enumerate exactly "
                        "as in the base, but %s",
                        label, dim->name, enums);
  }
  return HCG_OK;
}

/* The checks of one view, in Megatron's order where the language allows:
 * the name was checked by the parser; then duplicate dims; shared dims must
 * be base dims (their sizes come from the base, so this precedes the size
 * checks); '*'; the product; and each shared dim's enumeration. */
static int check_view(struct hcg_layout *L, int gi, int vi,
                      const struct hcg_source *src, hcg_error *err) {
  struct hcg_grid *g = &L->grids[gi];
  struct hcg_view *v = &g->views[vi];
  char label[2 * HCG_NAME_BUF + 1];
  snprintf(label, sizeof label, "%s/%s", g->name, v->name);
  int rc;
  if ((rc = hcg__check_dims(v, "view", label, src, err)) ||
      (rc = share_base_dims(g, v, label, src, err)) ||
      (rc = hcg__infer(v, g->size, "view", label, src, err)) ||
      (rc = check_product(g, v, label, src, err)))
    return rc;
  if (hcg__compute_strides(v))
    return hcg__fail(err, HCG_ELIMIT, "view '%s' is too large", label);
  return check_shared_enums(L, gi, vi, label, src, err);
}

/* Views in the order they were written. */
static int check_views(struct hcg_layout *L, const struct hcg_source *src,
                       hcg_error *err) {
  hcg_pos done = 0;
  int any_done = 0;
  for (;;) {
    int bg = -1, bv = -1;
    for (int g = 0; g < L->ngrids; g++)
      for (int v = 1; v < L->grids[g].nviews; v++) {
        hcg_pos pos = L->grids[g].views[v].pos;
        if (any_done && pos <= done)
          continue;
        if (bg < 0 || pos < L->grids[bg].views[bv].pos) {
          bg = g;
          bv = v;
        }
      }
    if (bg < 0)
      return HCG_OK;
    int rc = check_view(L, bg, bv, src, err);
    if (rc)
      return rc;
    done = L->grids[bg].views[bv].pos;
    any_done = 1;
  }
}

/* Spans: all identical (colocated) or pairwise disjoint, and together
 * exactly [0, world). */
static int check_spans(struct hcg_layout *L, const struct hcg_source *src,
                       hcg_error *err) {
  const struct hcg_grid *G = L->grids;
  if (L->ngrids == 1) {
    L->mode = HCG_MODE_SINGLE;
  } else {
    int colocated = 1;
    for (int g = 1; g < L->ngrids; g++)
      if (G[g].offset != G[0].offset || G[g].size != G[0].size)
        colocated = 0;
    L->mode = colocated ? HCG_MODE_COLOCATED : HCG_MODE_NONCOLOCATED;
    for (int b = 1; !colocated && b < L->ngrids; b++)
      for (int a = 0; a < b; a++) {
        long long a0 = G[a].offset, a1 = a0 + G[a].size;
        long long b0 = G[b].offset, b1 = b0 + G[b].size;
        if (a1 <= b0 || b1 <= a0)
          continue;
        if (a0 == b0 && a1 == b1)
          return hcg__fail_at(
              err, HCG_ELAYOUT, src, G[b].pos,
              "grids '%s' and '%s' share the ranks [%lld,%lld) while other "
              "grids do not: modules must be all colocated (one span) or all "
              "disjoint",
              G[a].name, G[b].name, a0, a1);
        return hcg__fail_at(err, HCG_ELAYOUT, src, G[b].pos,
                            "grids '%s' [%lld,%lld) and '%s' [%lld,%lld) "
                            "overlap without spanning the same ranks",
                            G[a].name, a0, a1, G[b].name, b0, b1);
      }
  }

  /* Coverage: walk the spans in rank order. */
  int order[HCG_MAX_GRIDS];
  for (int g = 0; g < L->ngrids; g++)
    order[g] = g;
  for (int i = 1; i < L->ngrids; i++) /* insertion sort: at most 16 */
    for (int j = i; j > 0 && G[order[j]].offset < G[order[j - 1]].offset; j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  long long covered = 0;
  long long gap_from = -1, gap_to = -1;
  for (int i = 0; i < L->ngrids && gap_from < 0; i++) {
    const struct hcg_grid *g = &G[order[i]];
    if (g->offset > covered) {
      gap_from = covered;
      gap_to = g->offset;
    }
    if ((long long)g->offset + g->size > covered)
      covered = (long long)g->offset + g->size;
  }
  if (gap_from < 0 && covered < L->world) {
    gap_from = covered;
    gap_to = L->world;
  }
  if (gap_from >= 0) {
    char spans[768];
    struct hcg_buf sb;
    hcg__buf_init(&sb, spans, sizeof spans);
    for (int i = 0; i < L->ngrids; i++)
      hcg__buf_printf(&sb, "%s%s [%d,%lld)", i ? ", " : "", G[order[i]].name,
                      G[order[i]].offset,
                      (long long)G[order[i]].offset + G[order[i]].size);
    return hcg__fail_at(err, HCG_ELAYOUT, src, G[order[0]].pos,
                        "ranks [%lld,%lld) are in no grid: the grids must "
                        "cover all %d ranks [0,%d) with no gap (%s)",
                        gap_from, gap_to, L->world, L->world, spans);
  }
  return HCG_OK;
}

static int find_grid(const struct hcg_layout *L, const char *name) {
  for (int g = 0; g < L->ngrids; g++)
    if (strcmp(L->grids[g].name, name) == 0)
      return g;
  return -1;
}

static void list_grids(struct hcg_buf *b, const struct hcg_layout *L) {
  for (int g = 0; g < L->ngrids; g++)
    hcg__buf_printf(b, "%s%s", g ? ", " : "", L->grids[g].name);
}

static int choose_language(struct hcg_layout *L, const struct hcg_source *src,
                           const char *language, hcg_error *err) {
  char grids[600];
  struct hcg_buf gb;
  hcg__buf_init(&gb, grids, sizeof grids);
  list_grids(&gb, L);
  if (language) {
    L->language = find_grid(L, language);
    if (L->language < 0)
      return hcg__fail(err, HCG_ELAYOUT,
                       "layout: the language module '%.64s' is not a grid of "
                       "the layout (grids: %s)",
                       language, grids);
    return HCG_OK;
  }
  int llm = find_grid(L, "llm"), lang = find_grid(L, "language");
  if (llm >= 0 && lang >= 0)
    return hcg__fail_at(err, HCG_ELAYOUT, src,
                        L->grids[lang > llm ? lang : llm].pos,
                        "grids 'llm' and 'language' both claim to be the "
                        "language module; rename one or name the language "
                        "module explicitly");
  L->language = llm >= 0 ? llm : lang;
  if (L->language < 0 && L->ngrids == 1)
    L->language = 0;
  if (L->language < 0)
    return hcg__fail_at(err, HCG_ELAYOUT, src, L->grids[0].pos,
                        "no language module among the grids (%s): name one "
                        "'llm' or 'language', or name it explicitly "
                        "(hcg --language NAME, plugstack language=NAME)",
                        grids);
  return HCG_OK;
}

/* ---- environment names ------------------------------------------------- */

/* HCG_<GRID>[_<VIEW>]_<DIM>, the stem of a task's _RANK/_SIZE variables. */
struct env_stem {
  char stem[4 + 3 * (HCG_MAX_NAME + 1) + 1];
  int grid, view, dim;
};

/* Where a dim is in the layout: later dims compare greater. */
static int position(const struct env_stem *s) {
  return (s->grid * 64 + s->view) * 64 + s->dim;
}

static int cmp_stems(const void *a, const void *b) {
  const struct env_stem *x = a, *y = b;
  int c = strcmp(x->stem, y->stem);
  if (c)
    return c;
  /* Equal stems: order by position so the later one is reported. */
  const int kx = position(x), ky = position(y);
  return (kx > ky) - (kx < ky);
}

static int cmp_stem_key(const void *key, const void *elem) {
  return strcmp(key, ((const struct env_stem *)elem)->stem);
}

static void describe_stem(struct hcg_buf *b, const struct hcg_layout *L,
                          const struct env_stem *s) {
  const struct hcg_grid *g = &L->grids[s->grid];
  if (s->view)
    hcg__buf_printf(b, "dim '%s' of view '%s/%s'",
                    g->views[s->view].dims[s->dim].name, g->name,
                    g->views[s->view].name);
  else
    hcg__buf_printf(b, "dim '%s' of grid '%s'", g->views[0].dims[s->dim].name,
                    g->name);
}

/* Names that collide once upper-cased and joined with '_' (grid "a_b" dim
 * "c" and grid "a" dim "b_c") would overwrite each other in a task's
 * environment: refuse them. The fixed variables cannot collide, as every
 * stem has at least three parts. */
int hcg__check_names(const struct hcg_layout *L, const struct hcg_source *src,
                     hcg_error *err) {
  int n = 0;
  for (int g = 0; g < L->ngrids; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      n += L->grids[g].views[v].ndims;
  struct env_stem *stems = calloc((size_t)n, sizeof *stems);
  if (!stems)
    return hcg__fail(err, HCG_ENOMEM, "out of memory checking names");
  int k = 0;
  for (int g = 0; g < L->ngrids; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      for (int d = 0; d < L->grids[g].views[v].ndims; d++) {
        hcg__env_stem(stems[k].stem, sizeof stems[k].stem, L, g, v, d);
        stems[k].grid = g;
        stems[k].view = v;
        stems[k].dim = d;
        k++;
      }
  qsort(stems, (size_t)n, sizeof *stems, cmp_stems);
  int rc = HCG_OK;
  for (int i = 1; i < n && !rc; i++) {
    if (strcmp(stems[i - 1].stem, stems[i].stem) != 0)
      continue;
    /* The same name twice in one grid or view is a duplicate dim, which
     * the grid and view checks report in their own words. */
    if (stems[i - 1].grid == stems[i].grid &&
        stems[i - 1].view == stems[i].view)
      continue;
    char a[256], b[256];
    struct hcg_buf ab, bb;
    hcg__buf_init(&ab, a, sizeof a);
    hcg__buf_init(&bb, b, sizeof b);
    describe_stem(&ab, L, &stems[i - 1]);
    describe_stem(&bb, L, &stems[i]);
    const struct hcg_dim *later =
        &L->grids[stems[i].grid].views[stems[i].view].dims[stems[i].dim];
    rc = hcg__fail_at(err, HCG_ELAYOUT, src, later->pos,
                      "%s and %s would both be exported as %s_RANK; rename "
                      "one",
                      a, b, stems[i].stem);
  }
  /* A domain verdict, stem + "_DOMAIN_LOCAL", against the node verdict of
   * a dim whose stem is stem + "_DOMAIN" (grid "a" dims "b" and
   * "b_domain"). */
  for (int i = 0; i < n && !rc; i++) {
    char key[sizeof stems[i].stem + 8];
    snprintf(key, sizeof key, "%s_DOMAIN", stems[i].stem);
    const struct env_stem *o =
        bsearch(key, stems, (size_t)n, sizeof *stems, cmp_stem_key);
    if (!o)
      continue;
    char a[256], b[256];
    struct hcg_buf ab, bb;
    hcg__buf_init(&ab, a, sizeof a);
    hcg__buf_init(&bb, b, sizeof b);
    describe_stem(&ab, L, &stems[i]);
    describe_stem(&bb, L, o);
    const struct env_stem *later =
        position(&stems[i]) > position(o) ? &stems[i] : o;
    const struct hcg_dim *dim =
        &L->grids[later->grid].views[later->view].dims[later->dim];
    rc = hcg__fail_at(err, HCG_ELAYOUT, src, dim->pos,
                      "the domain verdict of %s and the node verdict of %s "
                      "would both be exported as %s_LOCAL; rename one",
                      a, b, key);
  }
  free(stems);
  return rc;
}

int hcg__validate(struct hcg_layout *L, const struct hcg_source *src,
                  const char *language, hcg_error *err) {
  int rc;
  if ((rc = check_views(L, src, err)))
    return rc;
  if ((rc = check_spans(L, src, err)))
    return rc;
  return choose_language(L, src, language, err);
}
