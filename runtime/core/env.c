/*
 * env.c - the variables a task receives (doc/interfaces.md
 * section 2). The plugin exports exactly this walk and `hcg explain`
 * prints it, so both agree by construction; it costs O(dims) whatever the
 * world size. Which variable is shared, per rank or per dim is said here
 * only: the plugin, explain and libhcg ask hcg_env_scope.
 */
#include <stdio.h>
#include <string.h>

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

/* The variables every task gets whatever its layout (enum hcg__env_var,
 * in the order of the walk); the per-dim ones follow them. */
static const struct {
  const char *name;
  enum hcg_env_scope scope;
} fixed[HCG__FIXED_VARS] = {
    [HCG__VAR_VERSION] = {"HCG_VERSION", HCG_ENV_SHARED},
    [HCG__VAR_LAYOUT] = {"HCG_LAYOUT", HCG_ENV_SHARED},
    [HCG__VAR_RANK] = {"HCG_RANK", HCG_ENV_PER_RANK},
    [HCG__VAR_WORLD_SIZE] = {"HCG_WORLD_SIZE", HCG_ENV_SHARED},
    [HCG__VAR_GRIDS] = {"HCG_GRIDS", HCG_ENV_PER_RANK},
    [HCG__VAR_LANGUAGE] = {"HCG_LANGUAGE", HCG_ENV_SHARED},
};

static int has_suffix(const char *s, size_t n, const char *suffix) {
  size_t k = strlen(suffix);
  return n > k && !memcmp(s + n - k, suffix, k);
}

int hcg__env_var(const char *name) {
  for (int i = 0; name && i < HCG__FIXED_VARS; i++)
    if (!strcmp(name, fixed[i].name))
      return i;
  return -1;
}

int hcg_env_scope(const char *name) {
  if (!name)
    return 0;
  int i = hcg__env_var(name);
  if (i >= 0)
    return fixed[i].scope;
  size_t n = strlen(name);
  if (n > 4 && !memcmp(name, "HCG_", 4) &&
      (has_suffix(name, n, "_RANK") || has_suffix(name, n, "_SIZE")))
    return HCG_ENV_PER_DIM;
  if (n > 4 && !memcmp(name, "HCG_", 4) && has_suffix(name, n, "_LOCAL"))
    return HCG_ENV_PLACEMENT;
  return 0;
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
  EMIT(fixed[HCG__VAR_VERSION].name, value);
  EMIT(fixed[HCG__VAR_LAYOUT].name, L->text);
  snprintf(value, sizeof value, "%d", rank);
  EMIT(fixed[HCG__VAR_RANK].name, value);
  snprintf(value, sizeof value, "%d", L->world);
  EMIT(fixed[HCG__VAR_WORLD_SIZE].name, value);

  struct hcg_buf b;
  hcg__buf_init(&b, value, sizeof value);
  for (int g = 0; g < L->ngrids; g++)
    if (hcg_grid_contains(L, g, rank))
      hcg__buf_printf(&b, "%s%s", b.len ? "," : "", L->grids[g].name);
  EMIT(fixed[HCG__VAR_GRIDS].name, value);
  EMIT(fixed[HCG__VAR_LANGUAGE].name, L->grids[L->language].name);

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
