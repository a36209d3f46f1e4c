/*
 * placement.c - the placement check of one node (placement.h).
 */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "placement.h"

static int note(void *arg, const hcg_placement_verdict *v) {
  struct hcgp_node_check *c = arg;
  if (v->local)
    return 0;
  if (!c->crossing++ || v->group.first < c->example.group.first)
    c->example = *v;
  return 0;
}

int hcgp_level_check(const hcg_layout *L, const char *dims, const int *local,
                     int nlocal, hcg_node_fn where, void *warg,
                     hcg_node_fn mine, void *marg,
                     struct hcgp_node_check *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < nlocal; i++) {
    int rc = hcg_rank_placement(L, local[i], dims, where, warg, note, out);
    if (rc)
      return rc;
  }
  out->speak = out->crossing && mine(marg, out->example.group.first) >= 0;
  return HCG_OK;
}

/* The first group, over the listed dims in layout order, that `where`
 * does not find inside one id: 1 (in *out), 0 none, -1 past the bound. */
static int first_crossing(const hcg_layout *L, const char *dims,
                          hcg_node_fn where, void *warg,
                          hcg_placement_verdict *out) {
  long long cost = 0;
  for (int g = 0; g < hcg_layout_num_grids(L); g++)
    for (int v = 0; v < hcg_grid_num_views(L, g); v++)
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++)
        if (!(v && hcg_dim_shared(L, g, v, d)) &&
            hcg_placement_dim_listed(dims, hcg_dim_name(L, g, v, d)))
          cost += hcg_grid_size(L, g);
  if (cost > HCGP_FIRST_CROSSING_MAX)
    return -1;
  for (int g = 0; g < hcg_layout_num_grids(L); g++)
    for (int v = 0; v < hcg_grid_num_views(L, g); v++)
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++) {
        if ((v && hcg_dim_shared(L, g, v, d)) || hcg_dim_size(L, g, v, d) < 2 ||
            !hcg_placement_dim_listed(dims, hcg_dim_name(L, g, v, d)))
          continue; /* a group of one rank never crosses */
        hcg_request req = {g, v, 1u << d};
        int groups = hcg_request_num_groups(L, &req);
        for (int o = 0; o < groups; o++) {
          memset(out, 0, sizeof *out);
          if (hcg_group_at(L, &req, o, &out->group) != HCG_OK)
            return -1;
          if (hcg_group_on_one_node(L, &out->group, where, warg, out->apart))
            continue;
          out->grid = g;
          out->view = v;
          out->dim = d;
          return 1;
        }
      }
  return 0;
}

int hcgp_domain_check(const hcg_layout *L, const char *dims, const int *local,
                      int nlocal, hcg_node_fn where, void *warg,
                      hcg_node_fn mine, void *marg, int may_speak,
                      int step_wide, struct hcgp_node_check *out) {
  int rc =
      hcgp_level_check(L, dims, local, nlocal, where, warg, mine, marg, out);
  out->step = -1;
  if (rc)
    return rc;
  if (!may_speak)
    out->speak = 0;
  /* A node without a crossing group of its own holds no first member: it
   * needs the step's verdict only to refuse with the others. */
  if (!step_wide && !(may_speak && out->crossing))
    return HCG_OK;
  hcg_placement_verdict first;
  int found = first_crossing(L, dims, where, warg, &first);
  if (found < 0)
    return HCG_OK;
  out->step = found;
  out->speak = 0;
  if (found) {
    out->example = first;
    out->speak = may_speak && mine(marg, first.group.first) >= 0;
  }
  return HCG_OK;
}

int hcgp_node_check(const hcg_layout *L, const char *dims, const int *local,
                    int nlocal, hcg_node_fn on, void *arg,
                    struct hcgp_node_check *out) {
  return hcgp_level_check(L, dims, local, nlocal, on, arg, on, arg, out);
}

void hcgp_placement_line(const hcg_layout *L, const struct hcgp_node_check *c,
                         const char *here, int policy, char *buf, size_t cap) {
  char what[HCG_ERROR_MAX];
  hcg_placement_message(L, &c->example, here, "another node", what,
                        sizeof what);
  if (policy == HCGP_PLACEMENT_REFUSE)
    snprintf(buf, cap,
             "placement: %s: a group of an intra-node dim crosses nodes and "
             "the placement policy is refuse; no task will run",
             what);
  else
    snprintf(buf, cap,
             "warning: placement: %s: its traffic leaves the node "
             "(placement=warn; see hcg explain --nodes)",
             what);
}

void hcgp_domain_line(const hcg_layout *L, const struct hcgp_node_check *c,
                      const char *here, const char *there, int policy,
                      const char *suggestion, char *buf, size_t cap) {
  char what[HCG_ERROR_MAX];
  hcg_placement_message(L, &c->example, here, there, what, sizeof what);
  if (policy == HCGP_PLACEMENT_REFUSE)
    snprintf(buf, cap,
             "placement: %s: a group of an intra-domain dim crosses NVLink "
             "domains and the placement policy is refuse; no task will run%s%s",
             what, suggestion ? "; to keep every group inside, " : "",
             suggestion ? suggestion : "");
  else
    snprintf(buf, cap,
             "warning: placement: %s: its traffic leaves the NVLink domain "
             "(placement=warn)%s%s",
             what,
             suggestion ? "; to keep every group inside, "
                        : "; see hcg check --domain-size",
             suggestion ? suggestion : "");
}
