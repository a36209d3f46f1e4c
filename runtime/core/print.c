/*
 * print.c - the canonical text of a layout: every offset explicit, every '*'
 * resolved, each grid followed by its views. It is what a task receives in
 * HCG_LAYOUT, so it must parse back to the same layout.
 */
#include <stdlib.h>

#include "internal.h"

static void print_view(struct hcg_buf *b, const struct hcg_view *v) {
  for (int d = 0; d < v->ndims; d++) {
    const struct hcg_dim *dim = &v->dims[d];
    if (d)
      hcg__buf_puts(b, ",");
    if (dim->shared)
      hcg__buf_puts(b, dim->name);
    else
      hcg__buf_printf(b, "%s=%d", dim->name, dim->size);
  }
}

static void print_layout(struct hcg_buf *b, const struct hcg_layout *L) {
  for (int g = 0; g < L->ngrids; g++) {
    const struct hcg_grid *grid = &L->grids[g];
    hcg__buf_printf(b, "%s%s@%d:", g ? ";" : "", grid->name, grid->offset);
    print_view(b, &grid->views[0]);
    for (int v = 1; v < grid->nviews; v++) {
      hcg__buf_printf(b, ";%s/%s:", grid->name, grid->views[v].name);
      print_view(b, &grid->views[v]);
    }
  }
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
