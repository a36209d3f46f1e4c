/*
 * suggest.c - what would keep a layout's groups inside their node or
 * domain (hcg_placement_suggest). Nothing is guessed: every candidate is a
 * layout parsed again with one dim moved, or a task placement the caller
 * offers, and it is suggested only when the same check the plugin runs
 * finds every group of every listed dim inside.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Lookups of `where` the whole search may make. */
enum { WORK_MAX = 1 << 25 };

/* The two lists, as hcg_placement_suggest's comment in hcg.h says. */
struct levels {
  char node[HCG_MAX_DIMS * 2 * HCG_NAME_BUF + 1024];
  const char *domain; /* NULL: no domain level */
};

/* The level a dim is checked at: 1 node, 2 domain, 0 none. */
static int level_of(const struct levels *lv, const struct hcg_layout *L, int g,
                    int v, int d) {
  const struct hcg_dim *dim = &L->grids[g].views[v].dims[d];
  if (v && dim->shared)
    return 0; /* checked once, in the base */
  if (hcg_placement_dim_listed(lv->node, dim->name))
    return 1;
  if (lv->domain && hcg_placement_dim_listed(lv->domain, dim->name))
    return 2;
  return 0;
}

/* Lookups one full check of L costs. */
static long long cost_of(const struct levels *lv, const struct hcg_layout *L) {
  long long cost = 0;
  for (int g = 0; g < L->ngrids; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      for (int d = 0; d < L->grids[g].views[v].ndims; d++)
        if (level_of(lv, L, g, v, d))
          cost += L->grids[g].size;
  return cost;
}

/* Whether a group of dim d of (g, v) crosses its level under w. */
static int dim_crosses(const struct levels *lv, const struct hcg_layout *L,
                       int g, int v, int d, const hcg_placement_where *w) {
  int level = level_of(lv, L, g, v, d);
  if (!level)
    return 0;
  hcg_node_fn fn = level == 1 ? w->node : w->domain;
  void *arg = level == 1 ? w->node_arg : w->domain_arg;
  hcg_request req = {g, v, 1u << d};
  int groups = hcg_request_num_groups(L, &req);
  for (int o = 0; o < groups; o++) {
    hcg_group grp;
    if (hcg_group_at(L, &req, o, &grp) != HCG_OK ||
        !hcg_group_on_one_node(L, &grp, fn, arg, NULL))
      return 1;
  }
  return 0;
}

static int any_crosses(const struct levels *lv, const struct hcg_layout *L,
                       const hcg_placement_where *w) {
  for (int g = 0; g < L->ngrids; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      for (int d = 0; d < L->grids[g].views[v].ndims; d++)
        if (dim_crosses(lv, L, g, v, d, w))
          return 1;
  return 0;
}

/* L with dim d of (g, v) moved to position q, parsed again; NULL when that
 * layout is refused (or no memory). */
static hcg_layout *moved(const struct hcg_layout *L, int g, int v, int d,
                         int q) {
  struct hcg_buf b;
  hcg__buf_init(&b, NULL, 0);
  hcg__print_moved(&b, L, g, v, d, q); /* measure */
  size_t need = b.len + 1;
  char *text = malloc(need);
  if (!text)
    return NULL;
  hcg__buf_init(&b, text, need);
  hcg__print_moved(&b, L, g, v, d, q);
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = L->world;
  cfg.language = L->language >= 0 ? L->grids[L->language].name : NULL;
  hcg_layout *out = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcg_layout_parse(text, need - 1, &cfg, &out, &err) != HCG_OK)
    out = NULL;
  free(text);
  return out;
}

/* The first move of one crossing dim, nearest first, after which nothing
 * crosses: writes "put D before E, as in 'ITEM'" and returns 1; 0 when
 * none does. */
static int try_orders(const struct levels *lv, const struct hcg_layout *L,
                      const hcg_placement_where *w, struct hcg_buf *b) {
  for (int g = 0; g < L->ngrids; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      for (int d = 1; d < L->grids[g].views[v].ndims; d++) {
        if (!dim_crosses(lv, L, g, v, d, w))
          continue;
        for (int q = d - 1; q >= 0; q--) {
          hcg_layout *M = moved(L, g, v, d, q);
          int good = M && !any_crosses(lv, M, w);
          if (good) {
            const struct hcg_view *view = &L->grids[g].views[v];
            hcg__buf_printf(b, "put %s before %s, as in '", view->dims[d].name,
                            view->dims[q].name);
            hcg__print_item(b, M, g, v);
            hcg__buf_puts(b, "'");
          }
          hcg_layout_free(M);
          if (good)
            return 1;
        }
      }
  return 0;
}

int hcg_placement_suggest(const hcg_layout *L, const char *node_dims,
                          const char *domain_dims,
                          const hcg_placement_where *now,
                          const hcg_placement_alt *alts, int nalts, char *buf,
                          size_t cap) {
  if (!L || !now || !now->node || !buf || !cap || nalts < 0 || (nalts && !alts))
    return HCG_EINVAL;
  struct hcg_buf b;
  hcg__buf_init(&b, buf, cap);
  struct levels lv;
  lv.domain = NULL;
  if (now->domain) {
    lv.domain = domain_dims ? domain_dims : HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS;
    if (hcg_placement_node_level_dims(node_dims, lv.domain, lv.node,
                                      sizeof lv.node))
      return HCG_EINVAL;
  } else if (strlen(node_dims ? node_dims : HCG_PLACEMENT_DEFAULT_DIMS) >=
             sizeof lv.node) {
    return HCG_EINVAL;
  } else {
    strcpy(lv.node, node_dims ? node_dims : HCG_PLACEMENT_DEFAULT_DIMS);
  }

  /* The search: the check as it is, then at most one check per earlier
   * position of each crossing dim and one per alternative. */
  long long cost = cost_of(&lv, L), tries = nalts;
  for (int g = 0; g < L->ngrids && cost <= WORK_MAX; g++)
    for (int v = 0; v < L->grids[g].nviews; v++)
      for (int d = 0; d < L->grids[g].views[v].ndims; d++)
        tries += level_of(&lv, L, g, v, d) ? d : 0;
  if (cost > WORK_MAX / (1 + tries)) {
    hcg__buf_printf(&b,
                    "no suggestion computed: checking %lld orders and "
                    "placements of this layout takes more than %d lookups",
                    1 + tries, WORK_MAX);
    return HCG_ELIMIT;
  }
  if (!any_crosses(&lv, L, now)) {
    hcg__buf_puts(&b, "every group is inside already");
    return 0;
  }
  int order = try_orders(&lv, L, now, &b);
  for (int i = 0; i < nalts; i++) {
    if (!alts[i].where.node || (now->domain && !alts[i].where.domain) ||
        !alts[i].name || any_crosses(&lv, L, &alts[i].where))
      continue;
    hcg__buf_printf(&b, "%suse %s", order ? ", or " : "", alts[i].name);
    return 1;
  }
  if (order)
    return 1;
  hcg__buf_puts(&b, "no dim moved earlier in its order");
  if (nalts)
    hcg__buf_puts(&b, " and no other placement tried (");
  for (int i = 0; i < nalts; i++)
    hcg__buf_printf(&b, "%s%s", i ? ", " : "",
                    alts[i].name ? alts[i].name : "?");
  hcg__buf_puts(&b, nalts ? ") keeps every group inside"
                          : " keeps every group inside");
  return 0;
}
