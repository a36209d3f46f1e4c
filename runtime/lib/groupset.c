/*
 * groupset.c - sets of groups to form together, and the plan of one rank:
 * its own groups in a set, one per key.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/contract.h" /* HCG__CONFIG_READ */
#include "rt.h"

int hcg_groupset_create(const hcg_layout *layout, hcg_groupset **out,
                        hcg_error *err) {
  if (out)
    *out = NULL;
  if (!layout || !out)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_groupset_create");
  hcg_groupset *set = calloc(1, sizeof *set);
  if (!set)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a group set");
  set->layout = layout;
  *out = set;
  return HCG_OK;
}

void hcg_groupset_free(hcg_groupset *set) {
  if (!set)
    return;
  for (int i = 0; i < set->n; i++)
    free(set->entries[i].net_name);
  free(set->entries);
  free(set);
}

int hcgrt_options_equal(const hcg_comm_options *a, const hcg_comm_options *b) {
  const char *na = a->net_name ? a->net_name : "";
  const char *nb = b->net_name ? b->net_name : "";
  /* high_priority 0 and HCG_UNSET both mean the default priority. */
  return (a->high_priority == 1) == (b->high_priority == 1) &&
         a->min_ctas == b->min_ctas && a->max_ctas == b->max_ctas &&
         a->cga_cluster_size == b->cga_cluster_size &&
         a->split_share == b->split_share &&
         a->collnet_enable == b->collnet_enable &&
         a->traffic_class == b->traffic_class && strcmp(na, nb) == 0;
}

/* An int option is HCG_UNSET or in [lo, hi]. */
static int option_ok(int v, int lo, int hi) {
  return v == HCG_UNSET || (v >= lo && v <= hi);
}

int hcgrt_check_options(const hcg_comm_options *o, hcg_error *err) {
  if (!option_ok(o->high_priority, 0, 1))
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options.high_priority must be 0 or 1 (or "
                     "HCG_UNSET), got %d",
                     o->high_priority);
  if (!option_ok(o->min_ctas, 1, INT_MAX) ||
      !option_ok(o->max_ctas, 1, INT_MAX) ||
      !option_ok(o->cga_cluster_size, 1, INT_MAX))
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options: min_ctas, max_ctas and "
                     "cga_cluster_size must be >= 1 (HCG_UNSET: NCCL's "
                     "default)");
  if (o->min_ctas > 0 && o->max_ctas > 0 && o->min_ctas > o->max_ctas)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options: min_ctas %d > max_ctas %d", o->min_ctas,
                     o->max_ctas);
  if (!option_ok(o->split_share, 0, 1) || !option_ok(o->collnet_enable, 0, 1) ||
      !option_ok(o->traffic_class, 0, INT_MAX))
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options: split_share and collnet_enable must "
                     "be 0 or 1, traffic_class >= 0 (HCG_UNSET: NCCL's "
                     "default)");
  if (o->net_name && strlen(o->net_name) > 255)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options.net_name is longer than 255 bytes");
  return HCG_OK;
}

static int add_entry(hcg_groupset *set, struct hcgrt_entry e,
                     const hcg_comm_options *user, hcg_error *err) {
  static const hcg_comm_options defaults = HCG_COMM_OPTIONS_INIT;
  hcg_comm_options read;
  int rc = HCG__CONFIG_READ(hcg_comm_options, user, &defaults, &read, err);
  if (!rc)
    rc = hcgrt_check_options(&read, err);
  if (rc)
    return rc;
  const hcg_comm_options *opts = &read;
  if (set->n == set->cap) {
    if (set->cap > (1 << 20))
      return hcg__fail(err, HCG_ELIMIT, "a group set holds at most %d entries",
                       1 << 20);
    int cap = set->cap ? 2 * set->cap : 8;
    struct hcgrt_entry *v = realloc(set->entries, (size_t)cap * sizeof *v);
    if (!v)
      return hcg__fail(err, HCG_ENOMEM, "out of memory for a group set");
    set->entries = v;
    set->cap = cap;
  }
  e.opts = *opts;
  e.net_name = NULL;
  if (opts->net_name) {
    e.net_name = strdup(opts->net_name);
    if (!e.net_name)
      return hcg__fail(err, HCG_ENOMEM, "out of memory for a group set");
  }
  e.opts.net_name = e.net_name;
  set->entries[set->n++] = e;
  return HCG_OK;
}

int hcg_groupset_add(hcg_groupset *set, const char *spec,
                     const hcg_comm_options *opts, hcg_error *err) {
  if (!set || !spec)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_groupset_add");
  struct hcgrt_entry e = {HCGRT_REQUEST, {0, 0, 0}, -1, -1, {0}, NULL};
  int rc = hcg_request_parse(set->layout, spec, &e.req, err);
  return rc ? rc : add_entry(set, e, opts, err);
}

int hcg_groupset_add_request(hcg_groupset *set, const hcg_request *req,
                             const hcg_comm_options *opts, hcg_error *err) {
  if (!set || !req)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_groupset_add_request");
  const hcg_layout *L = set->layout;
  int nd = hcg_view_num_dims(L, req->grid, req->view);
  if (req->grid < 0 || req->grid >= hcg_layout_num_grids(L) || req->view < 0 ||
      req->view >= hcg_grid_num_views(L, req->grid) || nd <= 0 ||
      (nd < 32 && (req->dims >> nd) != 0))
    return hcg__fail(err, HCG_EINVAL,
                     "request {grid %d, view %d, dims 0x%x} does not name "
                     "dims of this layout",
                     req->grid, req->view, (unsigned)req->dims);
  /* Re-make it by name so that a hand-built request is resolved too. */
  const char *names[HCG_MAX_DIMS];
  int n = 0;
  for (int d = 0; d < nd && d < HCG_MAX_DIMS; d++)
    if (req->dims & (1u << d))
      names[n++] = hcg_dim_name(L, req->grid, req->view, d);
  struct hcgrt_entry e = {HCGRT_REQUEST, {0, 0, 0}, -1, -1, {0}, NULL};
  int rc = hcg_request_make(L, req->grid, req->view, names, n, &e.req, err);
  return rc ? rc : add_entry(set, e, opts, err);
}

int hcg_groupset_add_collection(hcg_groupset *set, int grid,
                                const hcg_comm_options *opts, hcg_error *err) {
  if (!set)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_groupset_add_collection");
  if (grid < 0 || grid >= hcg_layout_num_grids(set->layout))
    return hcg__fail(err, HCG_ENOTFOUND, "no grid with index %d", grid);
  struct hcgrt_entry e = {HCGRT_COLLECTION, {0, 0, 0}, grid, -1, {0}, NULL};
  return add_entry(set, e, opts, err);
}

int hcg_groupset_add_embedding(hcg_groupset *set, enum hcg_embedding kind,
                               const hcg_comm_options *opts, hcg_error *err) {
  if (!set)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_groupset_add_embedding");
  if (kind != HCG_EMBD && kind != HCG_POS_EMBD)
    return hcg__fail(err, HCG_EINVAL,
                     "embedding kind must be HCG_EMBD or HCG_POS_EMBD, got %d",
                     kind);
  struct hcgrt_entry e = {HCGRT_EMBEDDING, {0, 0, 0}, -1, kind, {0}, NULL};
  return add_entry(set, e, opts, err);
}

int hcg_groupset_set_config_fn(hcg_groupset *set, hcg_comm_config_fn fn,
                               void *arg) {
  if (!set)
    return HCG_EINVAL;
  set->config_fn = fn;
  set->config_arg = arg;
  return HCG_OK;
}

int hcg_groupset_num_entries(const hcg_groupset *set) {
  return set ? set->n : 0;
}

int hcgrt_embedding_key(const hcg_layout *L, int kind, char *buf, size_t cap) {
  const char *grid = hcg_grid_name(L, hcg_layout_language(L));
  if (!grid || (kind != HCG_EMBD && kind != HCG_POS_EMBD))
    return HCG_EINVAL;
  int n =
      snprintf(buf, cap, "%s#%s", grid, kind == HCG_EMBD ? "embd" : "pos_embd");
  return n < 0 || (size_t)n >= cap ? HCG_ERANGE : HCG_OK;
}

int hcgrt_item_members(const hcg_layout *L, const struct hcgrt_item *it,
                       int *out, int cap) {
  if (!it->member)
    return HCG_ENOTMEMBER;
  if (it->embedding < 0)
    return hcg_group_members(L, &it->group, out, cap);
  if (cap < it->group.size)
    return HCG_ERANGE;
  for (int i = 0; i < it->group.size; i++)
    out[i] = it->emb[i];
  return HCG_OK;
}

/* ---- plans ------------------------------------------------------------- */

void hcgrt_plan_free(struct hcgrt_plan *plan) {
  if (!plan)
    return;
  for (int i = 0; i < plan->n; i++)
    free(plan->items[i].more);
  free(plan->items);
  plan->items = NULL;
  plan->n = plan->cap = 0;
}

static struct hcgrt_item *find_item(struct hcgrt_plan *plan, const char *key) {
  for (int i = 0; i < plan->n; i++)
    if (strcmp(plan->items[i].key, key) == 0)
      return &plan->items[i];
  return NULL;
}

/* The item for key, new or existing (*fresh says which), or NULL. */
static struct hcgrt_item *plan_slot(struct hcgrt_plan *plan, const char *key,
                                    const struct hcgrt_entry *e, int *fresh,
                                    hcg_error *err, int *rc) {
  struct hcgrt_item *it = find_item(plan, key);
  *fresh = 0;
  *rc = HCG_OK;
  if (it) {
    if (!hcgrt_options_equal(&it->entry->opts, &e->opts)) {
      *rc = hcg__fail(err, HCG_EINVAL,
                      "group '%s' is named twice in the set with different "
                      "communicator options",
                      key);
      return NULL;
    }
    return it;
  }
  if (plan->n == plan->cap) {
    int cap = plan->cap ? 2 * plan->cap : 16;
    struct hcgrt_item *v = realloc(plan->items, (size_t)cap * sizeof *v);
    if (!v) {
      *rc = hcg__fail(err, HCG_ENOMEM, "out of memory for a group plan");
      return NULL;
    }
    plan->items = v;
    plan->cap = cap;
  }
  it = &plan->items[plan->n];
  memset(it, 0, sizeof *it);
  snprintf(it->key, sizeof it->key, "%s", key);
  it->entry = e;
  it->embedding = -1;
  it->leader = -1;
  *fresh = 1;
  return it;
}

static int plan_request(struct hcgrt_plan *plan, const hcg_layout *L,
                        const struct hcgrt_entry *e, const hcg_request *req,
                        int rank, int all_keys, hcg_error *err) {
  char key[HCG_KEY_MAX];
  int rc = hcg_request_key(L, req, key, sizeof key);
  if (rc)
    return hcg__fail(err, rc, "cannot key a request of grid %d", req->grid);
  hcg_group g;
  int member = hcg_group_of_rank(L, req, rank, &g) == HCG_OK;
  if (!member && !all_keys && !find_item(plan, key))
    return HCG_OK;
  int fresh;
  struct hcgrt_item *it = plan_slot(plan, key, e, &fresh, err, &rc);
  if (!it || !fresh)
    return rc;
  it->member = member;
  if (member) {
    it->group = g;
    it->leader = g.first;
  }
  plan->n++;
  return HCG_OK;
}

static int plan_embedding(struct hcgrt_plan *plan, const hcg_layout *L,
                          const struct hcgrt_entry *e, int kind, int rank,
                          int all_keys, hcg_error *err) {
  char key[HCG_KEY_MAX];
  int rc = hcgrt_embedding_key(L, kind, key, sizeof key);
  if (rc)
    return hcg__fail(err, rc, "cannot key an embedding group");
  int emb[2], n = 0;
  int member = hcg_embedding_group_of_rank(L, kind, rank, emb, &n) == HCG_OK;
  if (!member && !all_keys && !find_item(plan, key))
    return HCG_OK;
  int fresh;
  struct hcgrt_item *it = plan_slot(plan, key, e, &fresh, err, &rc);
  if (!it || !fresh)
    return rc;
  it->member = member;
  it->embedding = kind;
  if (member) {
    it->emb[0] = emb[0];
    it->emb[1] = n > 1 ? emb[1] : emb[0];
    it->group.req.grid = hcg_layout_language(L);
    it->group.ordinal = -1;
    it->group.first = emb[0];
    it->group.size = n;
    it->group.index = emb[0] == rank ? 0 : 1;
    it->leader = emb[0];
  }
  plan->n++;
  return HCG_OK;
}

int hcgrt_plan_build(const hcg_groupset *set, int rank, int all_keys,
                     struct hcgrt_plan *plan, hcg_error *err) {
  memset(plan, 0, sizeof *plan);
  const hcg_layout *L = set->layout;
  int rc = HCG_OK;
  for (int i = 0; i < set->n && !rc; i++) {
    const struct hcgrt_entry *e = &set->entries[i];
    switch (e->kind) {
    case HCGRT_REQUEST:
      rc = plan_request(plan, L, e, &e->req, rank, all_keys, err);
      break;
    case HCGRT_EMBEDDING:
      rc = plan_embedding(plan, L, e, e->embedding, rank, all_keys, err);
      break;
    case HCGRT_COLLECTION:
      for (int f = 0; f < HCG_FIELD_COUNT && !rc; f++) {
        hcg_request req;
        if (hcg_collection_request(L, e->grid, f, &req) != HCG_OK)
          continue; /* not provided by this grid */
        rc = plan_request(plan, L, e, &req, rank, all_keys, err);
      }
      if (e->grid == hcg_layout_language(L))
        for (int k = HCG_EMBD; k <= HCG_POS_EMBD && !rc; k++)
          rc = plan_embedding(plan, L, e, k, rank, all_keys, err);
      break;
    }
  }
  if (rc)
    hcgrt_plan_free(plan);
  return rc;
}

int hcgrt_check_set(const hcg_ctx *ctx, const hcg_groupset *set, const char *fn,
                    hcg_error *err) {
  if (!ctx || !set)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to %s", fn);
  if (set->layout != ctx->layout)
    return hcg__fail(err, HCG_EINVAL,
                     "%s: the group set was made for another layout (make "
                     "it with hcg_groupset_create(hcg_ctx_layout(ctx)))",
                     fn);
  return HCG_OK;
}
