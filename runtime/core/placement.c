/*
 * placement.c - which node a rank runs on, and whether a rank's group along
 * a dim stays inside one node. The check takes the node of a rank as a
 * callback, so the plugin (Slurm's local task ids in slurmstepd) and the
 * hcg command (a modelled distribution) run this same code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int parse_positive(const char *s, int *out) {
  long long v = 0;
  if (!*s)
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9' || v > HCG_MAX_WORLD / 10)
      return -1;
    v = v * 10 + (*s - '0');
  }
  if (v < 1 || v > HCG_MAX_WORLD)
    return -1;
  *out = (int)v;
  return 0;
}

int hcg_placement_make(int world, int nodes, int tasks_per_node,
                       const char *distribution, hcg_placement *out,
                       hcg_error *err) {
  if (!out || world < 1)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_placement_make");
  if ((nodes > 0) == (tasks_per_node > 0) || nodes < 0 || tasks_per_node < 0)
    return hcg__fail(err, HCG_EINVAL,
                     "give the number of nodes or of tasks per node, one of "
                     "the two");
  memset(out, 0, sizeof *out);
  out->world = world;
  if (!distribution || !strcmp(distribution, "block"))
    out->distribution = HCG_DIST_BLOCK;
  else if (!strcmp(distribution, "cyclic"))
    out->distribution = HCG_DIST_CYCLIC;
  else if (!strncmp(distribution, "plane=", 6) &&
           !parse_positive(distribution + 6, &out->plane))
    out->distribution = HCG_DIST_PLANE;
  else
    return hcg__fail(err, HCG_EINVAL,
                     "distribution '%.40s' is not block, cyclic or plane=P "
                     "(P a positive number of tasks)",
                     distribution);
  if (nodes > 0) {
    if (nodes > world)
      return hcg__fail(err, HCG_EINVAL,
                       "%d nodes for %d tasks: Slurm gives every node of a "
                       "step at least one task",
                       nodes, world);
    out->nodes = nodes;
  } else {
    out->tasks_per_node = tasks_per_node;
    out->nodes =
        (int)(((long long)world + tasks_per_node - 1) / tasks_per_node);
  }
  return HCG_OK;
}

int hcg_placement_node(const hcg_placement *p, int rank) {
  if (!p || p->nodes < 1 || rank < 0 || rank >= p->world)
    return -1;
  switch (p->distribution) {
  case HCG_DIST_CYCLIC:
    return rank % p->nodes;
  case HCG_DIST_PLANE:
    return p->plane > 0 ? (rank / p->plane) % p->nodes : -1;
  default:
    break;
  }
  if (p->tasks_per_node > 0)
    return rank / p->tasks_per_node;
  /* Slurm's even spread: the first world % nodes nodes hold one more. */
  int q = p->world / p->nodes, extra = p->world % p->nodes;
  long long big = (long long)extra * (q + 1);
  if (rank < big)
    return rank / (q + 1);
  return extra + (int)((rank - big) / q);
}

/* ---- the policy list ---------------------------------------------------- */

/* Whether the n bytes at name are one item of the list. */
static int listed_n(const char *dims, const char *name, size_t n) {
  for (const char *p = dims; *p;) {
    size_t k = strcspn(p, ",");
    if (k == n && !memcmp(p, name, n))
      return 1;
    p += k;
    if (*p)
      p++;
  }
  return 0;
}

int hcg_placement_dim_listed(const char *dims, const char *name) {
  if (!name)
    return 0;
  return listed_n(dims ? dims : HCG_PLACEMENT_DEFAULT_DIMS, name, strlen(name));
}

int hcg_placement_node_level_dims(const char *node_dims,
                                  const char *domain_dims, char *out,
                                  size_t cap) {
  if (!out)
    return HCG_EINVAL;
  if (!node_dims)
    node_dims = HCG_PLACEMENT_DEFAULT_DIMS;
  if (!domain_dims)
    domain_dims = HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS;
  struct hcg_buf b;
  hcg__buf_init(&b, out, cap);
  int kept = 0;
  for (const char *p = node_dims; *p;) {
    size_t k = strcspn(p, ",");
    if (k && !listed_n(domain_dims, p, k))
      hcg__buf_printf(&b, "%s%.*s", kept++ ? "," : "", (int)k, p);
    p += k;
    if (*p)
      p++;
  }
  return hcg__buf_truncated(&b) ? HCG_ELIMIT : HCG_OK;
}

int hcg_placement_dims_valid(const char *dims) {
  if (!dims || !*dims)
    return 0;
  for (const char *p = dims;;) {
    size_t k = strcspn(p, ",");
    if (k < 1 || k > HCG_MAX_NAME || !hcg__is_name_start(p[0]))
      return 0;
    for (size_t i = 1; i < k; i++)
      if (!hcg__is_name_char(p[i]))
        return 0;
    p += k;
    if (!*p)
      return 1;
    p++;
  }
}

/* ---- the check ---------------------------------------------------------- */

int hcg_group_on_one_node(const hcg_layout *L, const hcg_group *g,
                          hcg_node_fn node, void *node_arg, int apart[2]) {
  if (!L || !g || !node || g->size < 1)
    return 0;
  int first = hcg_group_member(L, g, 0);
  int n0 = node(node_arg, first);
  int odd = first;
  for (int i = 1; i < g->size && n0 >= 0; i++) {
    int m = hcg_group_member(L, g, i);
    int n = node(node_arg, m);
    if (n < 0 || n != n0) {
      odd = m;
      break;
    }
  }
  if (n0 >= 0 && odd == first)
    return 1;
  if (apart) {
    apart[0] = first;
    apart[1] = odd;
    /* The first member is off the checked node: name one that is on it. */
    for (int i = 1; n0 < 0 && i < g->size; i++) {
      int m = hcg_group_member(L, g, i);
      if (node(node_arg, m) >= 0) {
        apart[0] = m;
        break;
      }
    }
  }
  return 0;
}

int hcg_rank_placement(const hcg_layout *L, int rank, const char *dims,
                       hcg_node_fn node, void *node_arg, hcg_placement_fn fn,
                       void *arg) {
  if (!L || !node || !fn)
    return HCG_EINVAL;
  if (rank < 0 || rank >= L->world)
    return HCG_ENOTMEMBER;
  for (int g = 0; g < L->ngrids; g++) {
    if (!hcg_grid_contains(L, g, rank))
      continue;
    const struct hcg_grid *grid = &L->grids[g];
    for (int v = 0; v < grid->nviews; v++)
      for (int d = 0; d < grid->views[v].ndims; d++) {
        const struct hcg_dim *dim = &grid->views[v].dims[d];
        if ((v && dim->shared) || !hcg_placement_dim_listed(dims, dim->name))
          continue;
        hcg_placement_verdict vd;
        memset(&vd, 0, sizeof vd);
        vd.grid = g;
        vd.view = v;
        vd.dim = d;
        vd.group.req.grid = g;
        vd.group.req.view = v;
        vd.group.req.dims = 1u << d;
        if (hcg_group_of_rank(L, &vd.group.req, rank, &vd.group) != HCG_OK)
          continue;
        vd.local =
            hcg_group_on_one_node(L, &vd.group, node, node_arg, vd.apart);
        int rc = fn(arg, &vd);
        if (rc)
          return rc;
      }
  }
  return HCG_OK;
}

struct env_walk {
  const hcg_layout *L;
  const char *suffix; /* "_LOCAL" or "_DOMAIN_LOCAL" */
  hcg_env_fn fn;
  void *arg;
};

static int emit_env(void *arg, const hcg_placement_verdict *v) {
  struct env_walk *w = arg;
  char name[4 + 3 * HCG_NAME_BUF + 16];
  hcg__env_stem(name, sizeof name - 14, w->L, v->grid, v->view, v->dim);
  strcat(name, w->suffix);
  return w->fn(w->arg, name, v->local ? "1" : "0");
}

int hcg_rank_placement_env(const hcg_layout *L, int rank, const char *dims,
                           hcg_node_fn node, void *node_arg, hcg_env_fn fn,
                           void *arg) {
  if (!fn)
    return HCG_EINVAL;
  struct env_walk w = {L, "_LOCAL", fn, arg};
  return hcg_rank_placement(L, rank, dims, node, node_arg, emit_env, &w);
}

/* ---- domains ------------------------------------------------------------ */

int hcg_placement_domain(const hcg_placement *p, int domain_size, int rank) {
  int node = domain_size > 0 ? hcg_placement_node(p, rank) : -1;
  return node < 0 ? -1 : node / domain_size;
}

int hcg_rank_domain_env(const hcg_layout *L, int rank, const char *dims,
                        hcg_node_fn domain, void *domain_arg, hcg_env_fn fn,
                        void *arg) {
  if (!fn)
    return HCG_EINVAL;
  struct env_walk w = {L, "_DOMAIN_LOCAL", fn, arg};
  return hcg_rank_placement(L, rank,
                            dims ? dims : HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS,
                            domain, domain_arg, emit_env, &w);
}

int hcg_dim_placement(const hcg_layout *L, int grid, int view, int dim,
                      hcg_node_fn where, void *where_arg, int *crossing,
                      hcg_placement_verdict *example) {
  if (!L || !where || !hcg__valid_view(L, grid, view) || dim < 0 ||
      dim >= L->grids[grid].views[view].ndims)
    return -HCG_EINVAL;
  hcg_request req = {grid, view, 1u << dim};
  hcg_placement_verdict first;
  memset(&first, 0, sizeof first);
  first.grid = grid;
  first.view = view;
  first.dim = dim;
  first.local = 1;
  int groups = hcg_request_num_groups(L, &req), cross = 0;
  for (int o = 0; o < groups; o++) {
    hcg_group grp;
    int apart[2];
    if (hcg_group_at(L, &req, o, &grp) != HCG_OK)
      return -HCG_EINVAL;
    if (hcg_group_on_one_node(L, &grp, where, where_arg, apart))
      continue;
    if (!cross++) {
      first.local = 0;
      first.group = grp;
      first.apart[0] = apart[0];
      first.apart[1] = apart[1];
    }
  }
  if (crossing)
    *crossing = cross;
  if (example)
    *example = first;
  return groups;
}

void hcg_placement_message(const hcg_layout *L, const hcg_placement_verdict *v,
                           const char *node_a, const char *node_b, char *buf,
                           size_t cap) {
  struct hcg_buf b;
  if (!buf || !cap)
    return;
  hcg__buf_init(&b, buf, cap);
  if (!L || !v || !hcg__valid_view(L, v->grid, v->view)) {
    hcg__buf_puts(&b, "invalid verdict");
    return;
  }
  const struct hcg_grid *grid = &L->grids[v->grid];
  hcg__buf_printf(&b, "grid '%s', ", grid->name);
  if (v->view)
    hcg__buf_printf(&b, "view '%s', ", grid->views[v->view].name);
  hcg__buf_printf(&b, "dim '%s': group [",
                  grid->views[v->view].dims[v->dim].name);
  enum { SHOWN = 8 };
  for (int i = 0; i < v->group.size && i < SHOWN; i++)
    hcg__buf_printf(&b, "%s%d", i ? "," : "",
                    hcg_group_member(L, &v->group, i));
  if (v->group.size > SHOWN)
    hcg__buf_printf(&b, ",...] (%d ranks)", v->group.size);
  else
    hcg__buf_puts(&b, "]");
  hcg__buf_printf(&b, " spans %s (rank %d) and %s (rank %d)",
                  node_a ? node_a : "one node", v->apart[0],
                  node_b ? node_b : "another node", v->apart[1]);
}
