/*
 * describe.c - builds the description of a layout that `hcg explain`
 * prints (describe.h). Every fact comes from the core, through the same
 * functions the plugin and libhcg use; nothing here prints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"

/* A bridge's gather group (`scale` members, the ratio of two dp sizes) is
 * listed up to this many members; past it only its size is given, so that
 * explain stays bounded whatever the world. */
enum { BRIDGE_LIST_MAX = 1 << 16 };

/* ---- sets of ranks ------------------------------------------------------ */

static void ranks_init(struct desc_ranks *s, int first) {
  memset(s, 0, sizeof *s);
  s->first = first;
  s->size = 1;
  s->listed = 1;
}

/* Adds the term {0, stride, ..., (count-1)*stride}; strides must come in
 * ascending order. A term that continues the last one extends it. */
static void ranks_add(struct desc_ranks *s, int count, int stride) {
  if (count <= 1)
    return;
  s->size *= count;
  struct desc_term *t = s->nterms ? &s->term[s->nterms - 1] : NULL;
  if (t && (long long)t->count * t->stride == stride) {
    t->count *= count;
    return;
  }
  s->term[s->nterms].count = count;
  s->term[s->nterms].stride = stride;
  s->nterms++;
}

int desc_member(const struct desc_ranks *s, int i) {
  int rank = s->first;
  for (int k = 0; k < s->nterms && i; k++) {
    rank += (i % s->term[k].count) * s->term[k].stride;
    i /= s->term[k].count;
  }
  return rank;
}

/* The first term gives blocks of equally spaced members, and the next term
 * never continues that spacing (else they would be one term): a block of
 * three or more is one run, and a block of two is two single members. */
long long desc_num_runs(const struct desc_ranks *s) {
  if (!s->nterms || s->term[0].count < 3)
    return s->size;
  return s->size / s->term[0].count;
}

/* An ascending list from the core as a set: one term when it is equally
 * spaced (as a bridge's gather group is), else not listed. */
static void ranks_from_list(struct desc_ranks *s, const int *m, int n) {
  ranks_init(s, n ? m[0] : 0);
  if (n < 2) {
    s->size = n;
    s->listed = n == 1;
    return;
  }
  int stride = m[1] - m[0];
  for (int i = 2; i < n; i++)
    if (m[i] - m[i - 1] != stride) {
      s->size = n;
      s->listed = 0;
      return;
    }
  ranks_add(s, n, stride);
}

/* ---- the layout ---------------------------------------------------------- */

static void describe_view(const hcg_layout *L, int g, int v,
                          struct desc_view *out) {
  out->name = hcg_view_name(L, g, v);
  out->ndims = hcg_view_num_dims(L, g, v);
  for (int k = 0; k < out->ndims; k++) {
    struct desc_dim *dim = &out->dim[k];
    dim->name = hcg_dim_name(L, g, v, k);
    dim->size = hcg_dim_size(L, g, v, k);
    dim->stride = hcg_dim_stride(L, g, v, k);
    dim->shared = hcg_dim_shared(L, g, v, k);
  }
}

static void describe_field(const hcg_layout *L, int g, int f,
                           struct desc_field *out) {
  out->name = hcg_field_name(f);
  out->provided = hcg_collection_request(L, g, f, &out->req) == HCG_OK;
  if (!out->provided)
    return;
  hcg_request_key(L, &out->req, out->key, sizeof out->key);
  int alias = hcg_field_alias(f);
  out->same_as = alias >= 0 ? hcg_field_name(alias) : NULL;
  out->size = hcg_request_group_size(L, &out->req);
  out->ngroups = hcg_request_num_groups(L, &out->req);
}

static void describe_bridge(const hcg_layout *L, int src,
                            struct desc_bridge *out) {
  hcg_error err = HCG_ERROR_INIT;
  out->src = src;
  out->dest = hcg_layout_language(L);
  out->src_name = hcg_grid_name(L, src);
  out->dest_name = hcg_grid_name(L, out->dest);
  out->ok = hcg_bridge_make(L, src, out->dest, &out->b, &err) == HCG_OK;
  if (!out->ok) {
    snprintf(out->error, sizeof out->error, "%s", err.message);
    return;
  }
  out->colocated = out->b.colocated;
  out->scale = out->b.scale;
  out->kind = hcg_bridge_kind_name(out->b.kind);
  out->fan_in = out->b.kind == HCG_BRIDGE_FAN_IN;
  out->fan_out = out->b.kind == HCG_BRIDGE_FAN_OUT;
  out->dest_cp = out->b.dest_cp;
  out->ngroups = out->colocated ? hcg_bridge_num_groups(L, &out->b) : 0;
  out->src_lanes = out->colocated ? 0 : out->b.src_lanes;
}

struct desc *describe_layout(const hcg_layout *L) {
  struct desc *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  d->layout = L;
  d->version = HCG_ENV_VERSION;
  d->text = hcg_layout_text(L);
  d->mode = hcg_mode_name(hcg_layout_mode(L));
  d->world = hcg_layout_world_size(L);
  d->ngrids = hcg_layout_num_grids(L);
  d->language = hcg_layout_language(L);
  for (int g = 0; g < d->ngrids; g++) {
    struct desc_grid *grid = &d->grid[g];
    grid->name = hcg_grid_name(L, g);
    grid->offset = hcg_grid_offset(L, g);
    grid->size = hcg_grid_size(L, g);
    grid->language = g == d->language;
    grid->nviews = hcg_grid_num_views(L, g);
    for (int v = 0; v < grid->nviews; v++)
      describe_view(L, g, v, &grid->view[v]);
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      describe_field(L, g, f, &grid->field[f]);
  }
  /* Bridges go from every other grid to the language grid. */
  for (int g = 0; g < d->ngrids; g++)
    if (g != d->language)
      describe_bridge(L, g, &d->bridge[d->nbridges++]);
  d->nembedding = hcg_embedding_num_groups(L);
  return d;
}

void describe_free(struct desc *d) {
  if (d) {
    free(d->placement.check);
    free(d->placement.domain_check);
  }
  free(d);
}

/* ---- placement ----------------------------------------------------------- */

int describe_node(const struct desc *d, int rank) {
  return d->placement.set ? hcg_placement_node(&d->placement.p, rank) : -1;
}

int describe_domain(const struct desc *d, int rank) {
  return d->placement.set ? hcg_placement_domain(&d->placement.p,
                                                 d->placement.domain_size, rank)
                          : -1;
}

/* Where ranks are: a modelled placement, and nodes per domain. */
struct model {
  hcg_placement p;
  int domain_size;
};

static int node_of(void *arg, int rank) {
  return hcg_placement_node(&((struct model *)arg)->p, rank);
}

static int domain_of(void *arg, int rank) {
  const struct model *m = arg;
  return hcg_placement_domain(&m->p, m->domain_size, rank);
}

/* Every group of one dim, through the check the plugin runs on a rank. */
static void check_dim(const struct desc *d, int g, int v, int k, int domain,
                      struct model *m, struct desc_check *c) {
  const hcg_layout *L = d->layout;
  hcg_node_fn where = domain ? domain_of : node_of;
  memset(c, 0, sizeof *c);
  c->groups =
      hcg_dim_placement(L, g, v, k, where, m, &c->crossing, &c->example);
  if (!c->crossing)
    return;
  const char *what = domain ? "domain" : "node";
  char a[32], b[32];
  c->node[0] = where(m, c->example.apart[0]);
  c->node[1] = where(m, c->example.apart[1]);
  snprintf(a, sizeof a, "%s %d", what, c->node[0]);
  snprintf(b, sizeof b, "%s %d", what, c->node[1]);
  hcg_placement_message(L, &c->example, a, b, c->message, sizeof c->message);
}

int describe_crossing_groups(const struct desc *d, int i, desc_group_fn fn,
                             void *arg) {
  const struct desc_placement *pl = &d->placement;
  if (i < 0 || i >= pl->ndomain_checks)
    return HCG_EINVAL;
  const hcg_placement_verdict *v = &pl->domain_check[i].example;
  struct model m = {pl->p, pl->domain_size};
  hcg_request req = {v->grid, v->view, 1u << v->dim};
  int groups = hcg_request_num_groups(d->layout, &req);
  int *members = malloc(sizeof *members * (size_t)(d->world ? d->world : 1));
  if (!members)
    return HCG_ENOMEM;
  for (int o = 0; o < groups; o++) {
    hcg_group grp;
    hcg_group_at(d->layout, &req, o, &grp);
    if (hcg_group_on_one_node(d->layout, &grp, domain_of, &m, NULL))
      continue;
    for (int k = 0; k < grp.size && k < d->world; k++)
      members[k] = hcg_group_member(d->layout, &grp, k);
    fn(arg, members, grp.size < d->world ? grp.size : d->world);
  }
  free(members);
  return HCG_OK;
}

/* The checks of one level: the listed dims, in layout order. */
static int check_level(struct desc *d, const char *dims, int domain,
                       struct model *m, struct desc_check **out, int *n) {
  for (int pass = 0; pass < 2; pass++) {
    *n = 0;
    for (int g = 0; g < d->ngrids; g++)
      for (int v = 0; v < d->grid[g].nviews; v++)
        for (int k = 0; k < d->grid[g].view[v].ndims; k++) {
          const struct desc_dim *dim = &d->grid[g].view[v].dim[k];
          if ((v && dim->shared) || !hcg_placement_dim_listed(dims, dim->name))
            continue;
          if (pass)
            check_dim(d, g, v, k, domain, m, &(*out)[*n]);
          (*n)++;
        }
    if (!pass) {
      free(*out);
      *out = calloc(*n ? (size_t)*n : 1, sizeof **out);
      if (!*out)
        return HCG_ENOMEM;
    }
  }
  return HCG_OK;
}

/* The suggestion: another dim order, or another distribution over the
 * same nodes (block, cyclic, and plane=S for S the size of the first group
 * crossing domains when S divides the tasks of every node), each checked
 * like the placement itself. */
static void suggest(struct desc *d, struct model *now, const char *dims,
                    const char *domain_dims) {
  struct desc_placement *pl = &d->placement;
  const char *names[] = {"block", "cyclic", NULL};
  char plane[32] = "";
  int per_node = d->world % now->p.nodes ? 0 : d->world / now->p.nodes;
  for (int i = 0; i < pl->ndomain_checks && !plane[0]; i++) {
    int size = pl->domain_check[i].example.group.size;
    if (pl->domain_check[i].crossing && per_node && size < per_node &&
        per_node % size == 0)
      snprintf(plane, sizeof plane, "plane=%d", size);
  }
  names[2] = plane[0] ? plane : NULL;
  struct model alt[3];
  char label[3][48];
  hcg_placement_alt alts[3];
  int nalts = 0;
  for (int i = 0; i < 3; i++) {
    hcg_error err = HCG_ERROR_INIT;
    struct model *m = &alt[nalts];
    if (!names[i] ||
        hcg_placement_make(d->world, now->p.tasks_per_node ? 0 : now->p.nodes,
                           now->p.tasks_per_node, names[i], &m->p,
                           &err) != HCG_OK)
      continue;
    if (m->p.distribution == now->p.distribution && m->p.plane == now->p.plane)
      continue; /* the placement itself */
    m->domain_size = now->domain_size;
    snprintf(label[nalts], sizeof label[nalts], "--distribution=%s", names[i]);
    alts[nalts].name = label[nalts];
    alts[nalts].where = (hcg_placement_where){node_of, m, domain_of, m};
    nalts++;
  }
  hcg_placement_where where = {node_of, now, domain_of, now};
  pl->suggested =
      hcg_placement_suggest(d->layout, dims, domain_dims, &where, alts, nalts,
                            pl->suggestion, sizeof pl->suggestion);
}

int describe_placement(struct desc *d, const hcg_placement *p, const char *dims,
                       int domain_size, const char *domain_dims) {
  struct desc_placement *pl = &d->placement;
  struct model m = {*p, domain_size > 0 ? domain_size : 0};
  char node_dims[1024];
  const char *level = dims;
  if (m.domain_size) {
    if (!domain_dims)
      domain_dims = HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS;
    if (hcg_placement_node_level_dims(dims, domain_dims, node_dims,
                                      sizeof node_dims))
      return HCG_ENOMEM;
    level = node_dims;
  }
  pl->p = *p;
  pl->set = 1;
  pl->domain_size = m.domain_size;
  pl->ndomains =
      m.domain_size ? (p->nodes + m.domain_size - 1) / m.domain_size : 0;
  int rc = check_level(d, level, 0, &m, &pl->check, &pl->nchecks);
  if (!rc && m.domain_size)
    rc = check_level(d, domain_dims, 1, &m, &pl->domain_check,
                     &pl->ndomain_checks);
  if (rc || !m.domain_size)
    return rc;
  int crossing = 0;
  for (int i = 0; i < pl->nchecks; i++)
    crossing += pl->check[i].crossing > 0;
  for (int i = 0; i < pl->ndomain_checks; i++)
    crossing += pl->domain_check[i].crossing > 0;
  if (crossing)
    suggest(d, &m, dims, domain_dims);
  return HCG_OK;
}

/* ---- what grows with the world ------------------------------------------- */

/* A group of the core as a set: the dims of its request, in view order
 * (ascending strides). */
static void ranks_of_group(const struct desc *d, const hcg_group *grp,
                           struct desc_ranks *out) {
  const struct desc_view *v = &d->grid[grp->req.grid].view[grp->req.view];
  ranks_init(out, grp->first);
  for (int k = 0; k < v->ndims; k++)
    if (grp->req.dims & (1u << k))
      ranks_add(out, v->dim[k].size, v->dim[k].stride);
}

void describe_group_at(const struct desc *d, int g, int f, int ordinal,
                       struct desc_ranks *out) {
  hcg_group grp;
  hcg_group_at(d->layout, &d->grid[g].field[f].req, ordinal, &grp);
  ranks_of_group(d, &grp, out);
}

void describe_embedding_at(const struct desc *d, int kind, int ordinal,
                           int members[2], int *n) {
  *n = 0;
  hcg_embedding_group_at(d->layout, kind, ordinal, members, n);
}

/* A gather group from the core, listed when it is at most `cap` long. */
static int bridge_group(const struct desc *d, const struct desc_bridge *b,
                        int ordinal, int rank, int cap,
                        struct desc_ranks *out) {
  ranks_init(out, 0);
  out->size = b->scale;
  out->listed = 0;
  if (b->scale > cap)
    return HCG_OK;
  int *m = malloc(sizeof *m * (size_t)b->scale), n = 0, rc;
  if (!m)
    return HCG_ENOMEM;
  if (rank < 0)
    rc = hcg_bridge_group_at(d->layout, &b->b, ordinal, m, b->scale, &n);
  else
    rc = hcg_bridge_group_of_rank(d->layout, &b->b, rank, m, b->scale, &n);
  if (rc == HCG_OK)
    ranks_from_list(out, m, n);
  free(m);
  return rc;
}

void describe_bridge_group_at(const struct desc *d, int k, int ordinal,
                              struct desc_ranks *out) {
  bridge_group(d, &d->bridge[k], ordinal, -1, BRIDGE_LIST_MAX, out);
}

int describe_bridge_src_leader(const struct desc *d, int k, int lane) {
  return hcg_bridge_leader(d->layout, &d->bridge[k].b, 0, lane);
}

void describe_bridge_targets(const struct desc *d, int k, int lane, int *first,
                             int *count) {
  *first = *count = 0;
  hcg_bridge_targets(d->layout, &d->bridge[k].b, lane, first, count);
}

int describe_bridge_dest_leader(const struct desc *d, int k, int lane) {
  return hcg_bridge_leader(d->layout, &d->bridge[k].b, 1, lane);
}

/* ---- one rank ------------------------------------------------------------ */

static void rank_groups(const struct desc *d, int g, int rank,
                        struct desc_rank_grid *out) {
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    const struct desc_field *field = &d->grid[g].field[f];
    struct desc_rank_group *rg = &out->group[f];
    hcg_group grp;
    rg->provided = field->provided && hcg_group_of_rank(d->layout, &field->req,
                                                        rank, &grp) == HCG_OK;
    if (!rg->provided)
      continue;
    ranks_of_group(d, &grp, &rg->ranks);
    rg->index = grp.index;
  }
}

static void rank_embedding_and_bridges(const struct desc *d, int rank,
                                       struct desc_rank *out) {
  const hcg_layout *L = d->layout;
  out->in_language = out->grid[d->language].member;
  for (int k = 0; out->in_language && k < DESC_EMBEDDINGS; k++)
    out->embedding_ok[k] =
        hcg_embedding_group_of_rank(L, k, rank, out->embedding[k],
                                    &out->embedding_n[k]) == HCG_OK;
  for (int k = 0; k < d->nbridges; k++) {
    const struct desc_bridge *b = &d->bridge[k];
    out->bridge_shown[k] = out->grid[b->src].member || out->in_language;
    if (b->ok && b->colocated)
      out->bridge_ok[k] = bridge_group(d, b, -1, rank, BRIDGE_LIST_MAX,
                                       &out->bridge_group[k]) == HCG_OK;
  }
}

void describe_rank(const struct desc *d, int rank, int what,
                   struct desc_rank *out) {
  const hcg_layout *L = d->layout;
  memset(out, 0, sizeof *out);
  out->rank = rank;
  for (int g = 0; g < d->ngrids; g++) {
    struct desc_rank_grid *rg = &out->grid[g];
    rg->member = hcg_grid_contains(L, g, rank);
    if (!rg->member)
      continue;
    for (int v = 0; v < d->grid[g].nviews; v++)
      hcg_rank_coords(L, g, v, rank, rg->coords[v], HCG_MAX_DIMS);
    hcg_rank_stage(L, g, rank, &rg->first_stage, &rg->last_stage);
    if (what == DESC_GROUPS)
      rank_groups(d, g, rank, rg);
  }
  if (what == DESC_GROUPS)
    rank_embedding_and_bridges(d, rank, out);
}

struct env_walk {
  desc_env_fn fn;
  void *arg;
};

static int env_one(void *arg, const char *name, const char *value) {
  struct env_walk *w = arg;
  w->fn(w->arg, name, value, hcg_env_scope(name));
  return 0;
}

void describe_env(const struct desc *d, int rank, desc_env_fn fn, void *arg) {
  struct env_walk w = {fn, arg};
  hcg_rank_env(d->layout, rank, env_one, &w);
}
