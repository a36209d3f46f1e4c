/*
 * explain_json.c - `hcg explain --format json`: a description (describe.h)
 * for programs. The keys are stable: the cluster tests and the Python
 * binding's tests compare them with what the tasks get.
 */
#include "cli.h"
#include "describe.h"
#include "json.h"

/* With --rank, a set of more members than this is given by its terms
 * ("ranges"), not member by member, so that the output stays bounded
 * whatever the world size. */
enum { JSON_MEMBERS_MAX = 1024 };

static const char *const embedding_names[DESC_EMBEDDINGS] = {"embd",
                                                             "pos_embd"};

static void json_ints(struct json *j, const int *v, int n) {
  json_begin_array(j);
  for (int i = 0; i < n; i++)
    json_int(j, v[i]);
  json_end_array(j);
}

/* Every member of a set, or null when it is too large to be listed. */
static void json_members(struct json *j, const struct desc_ranks *s) {
  if (!s->listed) {
    json_null(j);
    return;
  }
  json_begin_array(j);
  for (int i = 0; i < s->size; i++)
    json_int(j, desc_member(s, i));
  json_end_array(j);
}

/* A set as its first member and terms (describe.h): every member is first
 * plus, for each term, one of 0, stride, ..., (count-1)*stride. Only the
 * size when the members are not known. */
static void json_ranges(struct json *j, const struct desc_ranks *s) {
  json_begin_object(j);
  json_key(j, "size");
  json_int(j, s->size);
  if (!s->listed) { /* a gather group too large to be asked for */
    json_end_object(j);
    return;
  }
  json_key(j, "first");
  json_int(j, s->first);
  json_key(j, "terms");
  json_begin_array(j);
  for (int k = 0; k < s->nterms; k++) {
    json_begin_object(j);
    json_key(j, "count");
    json_int(j, s->term[k].count);
    json_key(j, "stride");
    json_int(j, s->term[k].stride);
    json_end_object(j);
  }
  json_end_array(j);
  json_end_object(j);
}

/* A rank's own set under `key` when it is small, else under "ranges". */
static void json_rank_set(struct json *j, const char *key,
                          const struct desc_ranks *s) {
  if (s->listed && s->size <= JSON_MEMBERS_MAX) {
    json_key(j, key);
    json_members(j, s);
  } else {
    json_key(j, "ranges");
    json_ranges(j, s);
  }
}

struct env_json {
  struct json *j;
  int which; /* 1: the variables every task shares; 0: the others; -1: all */
};

static void env_to_json(void *arg, const char *name, const char *value,
                        int scope) {
  struct env_json *e = arg;
  if (e->which < 0 || (scope == HCG_ENV_SHARED) == e->which) {
    json_key(e->j, name);
    json_string(e->j, value);
  }
}

static void json_env(struct json *j, const struct desc *d, int rank,
                     int which) {
  struct env_json e = {j, which};
  json_begin_object(j);
  describe_env(d, rank, env_to_json, &e);
  json_end_object(j);
}

static void json_header(struct json *j, const struct desc *d) {
  json_key(j, "version");
  json_int(j, d->version);
  json_key(j, "layout");
  json_string(j, d->text);
  json_key(j, "world_size");
  json_int(j, d->world);
  json_key(j, "mode");
  json_string(j, d->mode);
  json_key(j, "language");
  json_string(j, d->grid[d->language].name);
}

static void json_views(struct json *j, const struct desc_grid *grid) {
  json_begin_array(j);
  for (int v = 0; v < grid->nviews; v++) {
    const struct desc_view *view = &grid->view[v];
    json_begin_object(j);
    json_key(j, "name");
    json_string(j, view->name);
    json_key(j, "dims");
    json_begin_array(j);
    for (int k = 0; k < view->ndims; k++) {
      json_begin_object(j);
      json_key(j, "name");
      json_string(j, view->dim[k].name);
      json_key(j, "size");
      json_int(j, view->dim[k].size);
      json_key(j, "stride");
      json_int(j, view->dim[k].stride);
      json_key(j, "shared");
      json_bool(j, view->dim[k].shared);
      json_end_object(j);
    }
    json_end_array(j);
    json_end_object(j);
  }
  json_end_array(j);
}

/* One collection field: null, or key, size and either every group or (for
 * one rank) that rank's group and index. */
static void json_field(struct json *j, const struct desc *d, int g, int f,
                       const struct desc_rank *r) {
  const struct desc_field *field = &d->grid[g].field[f];
  if (!field->provided) {
    json_null(j);
    return;
  }
  json_begin_object(j);
  json_key(j, "key");
  json_string(j, field->key);
  if (field->same_as) {
    json_key(j, "same_as");
    json_string(j, field->same_as);
  }
  json_key(j, "size");
  json_int(j, field->size);
  if (!r) {
    json_key(j, "groups");
    json_begin_array(j);
    for (int o = 0; o < field->ngroups; o++) {
      struct desc_ranks s;
      describe_group_at(d, g, f, o, &s);
      json_members(j, &s);
    }
    json_end_array(j);
  } else {
    const struct desc_rank_group *rg = &r->grid[g].group[f];
    json_rank_set(j, "members", &rg->ranks);
    json_key(j, "index");
    json_int(j, rg->index);
  }
  json_end_object(j);
}

static void json_collection(struct json *j, const struct desc *d, int g,
                            const struct desc_rank *r) {
  json_begin_object(j);
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    json_key(j, d->grid[g].field[f].name);
    json_field(j, d, g, f, r);
  }
  json_end_object(j);
}

static void json_embedding_groups(struct json *j, const struct desc *d) {
  json_begin_object(j);
  for (int k = 0; k < DESC_EMBEDDINGS; k++) {
    json_key(j, embedding_names[k]);
    json_begin_array(j);
    for (int o = 0; o < d->nembedding; o++) {
      int m[2], n;
      describe_embedding_at(d, k, o, m, &n);
      json_ints(j, m, n);
    }
    json_end_array(j);
  }
  json_end_object(j);
}

static void json_rank_embedding(struct json *j, const struct desc_rank *r) {
  json_begin_object(j);
  for (int k = 0; k < DESC_EMBEDDINGS; k++) {
    json_key(j, embedding_names[k]);
    if (r->embedding_ok[k])
      json_ints(j, r->embedding[k], r->embedding_n[k]);
    else
      json_null(j);
  }
  json_end_object(j);
}

static void json_leaders(struct json *j, const struct desc *d, int k) {
  json_key(j, "leaders");
  json_begin_array(j);
  for (int lane = 0; lane < d->bridge[k].src_lanes; lane++) {
    int first, count;
    describe_bridge_targets(d, k, lane, &first, &count);
    json_begin_object(j);
    json_key(j, "src");
    json_int(j, describe_bridge_src_leader(d, k, lane));
    json_key(j, "dest");
    json_begin_array(j);
    for (int t = first; t < first + count; t++)
      json_int(j, describe_bridge_dest_leader(d, k, t));
    json_end_array(j);
    json_end_object(j);
  }
  json_end_array(j);
}

/* A bridge: its shape, and all its groups or leaders (r NULL) or the group
 * of one rank. */
static void json_bridge(struct json *j, const struct desc *d, int k,
                        const struct desc_rank *r) {
  const struct desc_bridge *b = &d->bridge[k];
  json_begin_object(j);
  json_key(j, "src");
  json_string(j, b->src_name);
  json_key(j, "dest");
  json_string(j, b->dest_name);
  if (!b->ok) {
    json_key(j, "error");
    json_string(j, b->error);
    json_end_object(j);
    return;
  }
  json_key(j, "colocated");
  json_bool(j, b->colocated);
  json_key(j, "kind");
  json_string(j, b->kind);
  json_key(j, "scale");
  json_int(j, b->scale);
  if (b->colocated) {
    json_key(j, "dest_cp");
    json_int(j, b->dest_cp);
    if (!r) {
      json_key(j, "groups");
      json_begin_array(j);
      for (int o = 0; o < b->ngroups; o++) {
        struct desc_ranks s;
        describe_bridge_group_at(d, k, o, &s);
        json_members(j, &s);
      }
      json_end_array(j);
    } else {
      if (r->bridge_ok[k]) {
        json_rank_set(j, "group", &r->bridge_group[k]);
      } else {
        json_key(j, "group");
        json_null(j);
      }
    }
  } else if (!r) {
    json_leaders(j, d, k);
  }
  json_end_object(j);
}

static void json_bridges(struct json *j, const struct desc *d,
                         const struct desc_rank *r) {
  json_begin_array(j);
  for (int k = 0; k < d->nbridges; k++)
    if (!r || r->bridge_shown[k])
      json_bridge(j, d, k, r);
  json_end_array(j);
}

/* The coordinates and stages of one rank in every grid holding it. */
static void json_rank_place(struct json *j, const struct desc *d,
                            const struct desc_rank *r) {
  json_key(j, "grids");
  json_begin_array(j);
  for (int g = 0; g < d->ngrids; g++)
    if (r->grid[g].member)
      json_string(j, d->grid[g].name);
  json_end_array(j);
  json_key(j, "coords");
  json_begin_object(j);
  for (int g = 0; g < d->ngrids; g++) {
    const struct desc_grid *grid = &d->grid[g];
    if (!r->grid[g].member)
      continue;
    json_key(j, grid->name);
    json_begin_object(j);
    for (int v = 0; v < grid->nviews; v++) {
      json_key(j, grid->view[v].name);
      json_begin_object(j);
      for (int k = 0; k < grid->view[v].ndims; k++) {
        json_key(j, grid->view[v].dim[k].name);
        json_int(j, r->grid[g].coords[v][k]);
      }
      json_end_object(j);
    }
    json_end_object(j);
  }
  json_end_object(j);
  json_key(j, "stages");
  json_begin_object(j);
  for (int g = 0; g < d->ngrids; g++) {
    if (!r->grid[g].member)
      continue;
    json_key(j, d->grid[g].name);
    json_begin_object(j);
    json_key(j, "first");
    json_bool(j, r->grid[g].first_stage);
    json_key(j, "last");
    json_bool(j, r->grid[g].last_stage);
    json_end_object(j);
  }
  json_end_object(j);
}

static void json_one_rank(struct json *j, const struct desc *d,
                          const struct desc_rank *r) {
  json_key(j, "rank");
  json_int(j, r->rank);
  json_rank_place(j, d, r);
  json_key(j, "groups");
  json_begin_object(j);
  for (int g = 0; g < d->ngrids; g++)
    if (r->grid[g].member) {
      json_key(j, d->grid[g].name);
      json_collection(j, d, g, r);
    }
  json_end_object(j);
  json_key(j, "embedding");
  if (r->in_language)
    json_rank_embedding(j, r);
  else
    json_null(j);
  json_key(j, "bridges");
  json_bridges(j, d, r);
  json_key(j, "env");
  json_env(j, d, r->rank, -1);
}

static void json_grid(struct json *j, const struct desc *d, int g) {
  const struct desc_grid *grid = &d->grid[g];
  json_begin_object(j);
  json_key(j, "name");
  json_string(j, grid->name);
  json_key(j, "offset");
  json_int(j, grid->offset);
  json_key(j, "size");
  json_int(j, grid->size);
  json_key(j, "language");
  json_bool(j, grid->language);
  json_key(j, "views");
  json_views(j, grid);
  json_key(j, "collection");
  json_collection(j, d, g, NULL);
  if (grid->language) {
    json_key(j, "embedding");
    json_embedding_groups(j, d);
  }
  json_end_object(j);
}

static void json_world(struct json *j, const struct desc *d,
                       struct desc_rank *r) {
  json_key(j, "env");
  json_env(j, d, 0, 1);
  json_key(j, "grids");
  json_begin_array(j);
  for (int g = 0; g < d->ngrids; g++)
    json_grid(j, d, g);
  json_end_array(j);
  json_key(j, "bridges");
  json_bridges(j, d, NULL);
  json_key(j, "ranks");
  json_begin_array(j);
  for (int rank = 0; rank < d->world; rank++) {
    describe_rank(d, rank, DESC_PLACE, r);
    json_begin_object(j);
    json_key(j, "rank");
    json_int(j, rank);
    json_rank_place(j, d, r);
    json_key(j, "env");
    json_env(j, d, rank, 0);
    json_end_object(j);
  }
  json_end_array(j);
}

static void json_checks(struct json *j, const struct desc *d,
                        const struct desc_check *c, int n, const char *inside,
                        const char *where) {
  json_begin_array(j);
  for (int i = 0; i < n; i++, c++) {
    const hcg_placement_verdict *v = &c->example;
    const struct desc_grid *g = &d->grid[v->grid];
    json_begin_object(j);
    json_key(j, "grid");
    json_string(j, g->name);
    json_key(j, "view");
    json_string(j, g->view[v->view].name);
    json_key(j, "dim");
    json_string(j, g->view[v->view].dim[v->dim].name);
    json_key(j, inside);
    json_bool(j, !c->crossing);
    json_key(j, "groups");
    json_int(j, c->groups);
    json_key(j, "crossing");
    json_int(j, c->crossing);
    if (c->crossing) {
      json_key(j, "example");
      json_begin_object(j);
      json_key(j, "first");
      json_int(j, v->group.first);
      json_key(j, "size");
      json_int(j, v->group.size);
      json_key(j, "ranks");
      json_ints(j, v->apart, 2);
      json_key(j, where);
      json_ints(j, c->node, 2);
      json_key(j, "message");
      json_string(j, c->message);
      json_end_object(j);
    }
    json_end_object(j);
  }
  json_end_array(j);
}

/* "placement": the modelled nodes and one verdict per checked dim; with
 * domains, also one per dim of the domain list and the suggestion. */
static void json_placement(struct json *j, const struct desc *d, int rank) {
  static const char *const names[] = {"block", "cyclic", "plane"};
  const struct desc_placement *pl = &d->placement;
  if (!pl->set)
    return; /* no key: the output without placement stays as it was */
  json_key(j, "placement");
  json_begin_object(j);
  json_key(j, "nodes");
  json_int(j, pl->p.nodes);
  json_key(j, "distribution");
  json_string(j, names[pl->p.distribution]);
  json_key(j, "plane");
  json_int(j, pl->p.plane);
  json_key(j, "tasks_per_node");
  json_int(j, pl->p.tasks_per_node);
  if (rank >= 0) {
    json_key(j, "node");
    json_int(j, describe_node(d, rank));
  }
  json_key(j, "checks");
  json_checks(j, d, pl->check, pl->nchecks, "inside_node", "nodes");
  if (pl->domain_size) {
    json_key(j, "domain_size");
    json_int(j, pl->domain_size);
    json_key(j, "domains");
    json_int(j, pl->ndomains);
    if (rank >= 0) {
      json_key(j, "domain");
      json_int(j, describe_domain(d, rank));
    }
    json_key(j, "domain_checks");
    json_checks(j, d, pl->domain_check, pl->ndomain_checks, "inside_domain",
                "domains");
    if (pl->suggested > 0) {
      json_key(j, "suggestion");
      json_string(j, pl->suggestion);
    }
  }
  json_end_object(j);
}

int explain_json(FILE *out, const struct desc *d,
                 const struct explain_opts *opts, struct desc_rank *r) {
  struct json j;
  json_init(&j, out);
  json_begin_object(&j);
  json_header(&j, d);
  if (opts->rank >= 0) {
    describe_rank(d, opts->rank, DESC_GROUPS, r);
    json_one_rank(&j, d, r);
  } else {
    json_world(&j, d, r);
  }
  json_placement(&j, d, opts->rank);
  json_end_object(&j);
  fputc('\n', out);
  return 0;
}
