/*
 * env.c - the variables a task receives (INTERFACES.md section 2). The
 * plugin exports exactly this walk and `hcg explain` prints it, so both
 * agree by construction; it costs O(dims) whatever the world size.
 */
#include <stdio.h>

#include "internal.h"

void hcg__env_stem(char *out, size_t cap, const struct hcg_layout *L, int g,
                   int v, int d) {
  const struct hcg_grid *grid = &L->grids[g];
  struct hcg_buf b;
  hcg__buf_init(&b, out, cap);
  hcg__buf_printf(&b, "HCG_%s", grid->name);
  if (v)
    hcg__buf_printf(&b, "_%s", grid->views[v].name);
  hcg__buf_printf(&b, "_%s", grid->views[v].dims[d].name);
  for (char *p = out + 4; *p; p++)
    if (*p >= 'a' && *p <= 'z')
      *p = (char)(*p - 'a' + 'A');
}

int hcg_rank_env(const hcg_layout *L, int rank, hcg_env_fn fn, void *arg) {
  if (!L || !fn)
    return HCG_EINVAL;
  if (rank < 0 || rank >= L->world)
    return HCG_ENOTMEMBER;
  char value[HCG_MAX_GRIDS * HCG_NAME_BUF + 16];
  char name[4 + 3 * HCG_NAME_BUF + 8];
  int rc;

#define EMIT(n, v)                                                             \
  do {                                                                         \
    if ((rc = fn(arg, (n), (v))) != 0)                                         \
      return rc;                                                               \
  } while (0)

  snprintf(value, sizeof value, "%d", HCG_ENV_VERSION);
  EMIT("HCG_VERSION", value);
  EMIT("HCG_LAYOUT", L->text);
  snprintf(value, sizeof value, "%d", rank);
  EMIT("HCG_RANK", value);
  snprintf(value, sizeof value, "%d", L->world);
  EMIT("HCG_WORLD_SIZE", value);

  struct hcg_buf b;
  hcg__buf_init(&b, value, sizeof value);
  for (int g = 0; g < L->ngrids; g++)
    if (hcg_grid_contains(L, g, rank))
      hcg__buf_printf(&b, "%s%s", b.len ? "," : "", L->grids[g].name);
  EMIT("HCG_GRIDS", value);
  EMIT("HCG_LANGUAGE", L->grids[L->language].name);

  for (int g = 0; g < L->ngrids; g++) {
    const struct hcg_grid *grid = &L->grids[g];
    if (!hcg_grid_contains(L, g, rank))
      continue;
    int rel = rank - grid->offset;
    for (int v = 0; v < grid->nviews; v++) {
      const struct hcg_view *view = &grid->views[v];
      for (int d = 0; d < view->ndims; d++) {
        const struct hcg_dim *dim = &view->dims[d];
        hcg__env_stem(name, sizeof name - 5, L, g, v, d);
        size_t stem = 0;
        while (name[stem])
          stem++;
        snprintf(name + stem, sizeof name - stem, "_RANK");
        snprintf(value, sizeof value, "%d", (rel / dim->stride) % dim->size);
        EMIT(name, value);
        snprintf(name + stem, sizeof name - stem, "_SIZE");
        snprintf(value, sizeof value, "%d", dim->size);
        EMIT(name, value);
      }
    }
  }
#undef EMIT
  return HCG_OK;
}
