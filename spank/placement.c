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

int hcgp_node_check(const hcg_layout *L, const char *dims, const int *local,
                    int nlocal, hcg_node_fn on, void *arg,
                    struct hcgp_node_check *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < nlocal; i++) {
    int rc = hcg_rank_placement(L, local[i], dims, on, arg, note, out);
    if (rc)
      return rc;
  }
  out->speak = out->crossing && on(arg, out->example.group.first) >= 0;
  return HCG_OK;
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
