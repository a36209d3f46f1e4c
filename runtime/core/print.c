/*
 * print.c - the canonical text of a layout: every offset explicit, every '*'
 * resolved, each grid followed by its views. It is what a task receives in
 * HCG_LAYOUT, so it must parse back to the same layout.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The dim printed at position i when dim `from` moves to position `to`
 * (from < 0: no move). */
static int moved_index(int i, int from, int to) {
  if (from < 0 || from == to)
    return i;
  if (i == to)
    return from;
  if (to < from) /* the dims from `to` on shift right by one */
    return i > to && i <= from ? i - 1 : i;
  return i >= from && i < to ? i + 1 : i;
}

static void print_view(struct hcg_buf *b, const struct hcg_view *v, int from,
                       int to) {
  for (int i = 0; i < v->ndims; i++) {
    const struct hcg_dim *dim = &v->dims[moved_index(i, from, to)];
    if (i)
      hcg__buf_puts(b, ",");
    if (dim->shared)
      hcg__buf_puts(b, dim->name);
    else
      hcg__buf_printf(b, "%s=%d", dim->name, dim->size);
  }
}

void hcg__print_moved(struct hcg_buf *b, const struct hcg_layout *L, int g,
                      int v, int from, int to) {
  for (int k = 0; k < L->ngrids; k++) {
    const struct hcg_grid *grid = &L->grids[k];
    hcg__buf_printf(b, "%s%s@%d:", k ? ";" : "", grid->name, grid->offset);
    print_view(b, &grid->views[0], k == g && v == 0 ? from : -1, to);
    for (int w = 1; w < grid->nviews; w++) {
      hcg__buf_printf(b, ";%s/%s:", grid->name, grid->views[w].name);
      print_view(b, &grid->views[w], k == g && v == w ? from : -1, to);
    }
  }
}

void hcg__print_item(struct hcg_buf *b, const struct hcg_layout *L, int g,
                     int v) {
  const struct hcg_grid *grid = &L->grids[g];
  if (v)
    hcg__buf_printf(b, "%s/%s:", grid->name, grid->views[v].name);
  else if (L->ngrids > 1)
    hcg__buf_printf(b, "%s@%d:", grid->name, grid->offset);
  else if (grid->nviews > 1 || strcmp(grid->name, "world"))
    hcg__buf_printf(b, "%s:", grid->name);
  print_view(b, &grid->views[v], -1, 0);
}

static void print_layout(struct hcg_buf *b, const struct hcg_layout *L) {
  hcg__print_moved(b, L, -1, -1, -1, 0);
}

int hcg__print_canonical(struct hcg_layout *L, hcg_error *err) {
  struct hcg_buf b;
  hcg__buf_init(&b, NULL, 0);
  print_layout(&b, L); /* measure */
  size_t need = b.len + 1;
  /* Refuse what could not be read back under the same bound. */
  if (need - 1 > HCG_MAX_LAYOUT_BYTES)
    return hcg__fail(err, HCG_ELIMIT,
                     "layout: the canonical layout would be %zu bytes, over "
                     "the limit of %d",
                     need - 1, HCG_MAX_LAYOUT_BYTES);
  L->text = malloc(need);
  if (!L->text)
    return hcg__fail(err, HCG_ENOMEM, "out of memory printing the layout");
  hcg__buf_init(&b, L->text, need);
  print_layout(&b, L);
  return HCG_OK;
}
