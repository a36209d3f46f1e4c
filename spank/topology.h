/*
 * topology.h - the domain of every node of a step, read from topology.conf:
 * BlockName=B Nodes=... (topology/block) or SwitchName=S Nodes=... (the
 * leaf switches of topology/tree), continued lines joined, comments
 * dropped, Include refused. Pure C (no Slurm); domains.c calls it.
 */
#ifndef HCGP_TOPOLOGY_H
#define HCGP_TOPOLOGY_H

#include <stddef.h>

#include "domains_types.h"

/* The step's nodes by name, for lookups from topology.conf. */
struct hcgp_name_ref {
  const char *name;
  int index;
};
struct hcgp_names {
  char *text; /* every name, NUL-terminated, one after another */
  size_t used, cap;
  size_t *at;                    /* node index -> offset in text */
  struct hcgp_name_ref *by_name; /* sorted by name, once all are in */
  int n, max;
};

/* hcgp_host_fn: appends a name (at most ns->max). */
int hcgp_names_add(void *ns, const char *name, size_t len);
/* The i-th name added. */
const char *hcgp_names_of(const struct hcgp_names *ns, int i);
/* Fills by_name, for lookups, once every name is in. */
void hcgp_names_sort(struct hcgp_names *ns);
void hcgp_names_free(struct hcgp_names *ns);

/* Reads in->topology into d's domains (d->kind says blocks or switches):
 * d->domain gets every entry's name, d->node_domain (all -1 before) the
 * domain of each node of ns (sorted). 0, or -1 with why (one sentence, at
 * most cap bytes) when the file cannot be used. */
int hcgp_topology_read(struct hcgp_domains *d, const struct hcgp_names *ns,
                       const struct hcgp_domain_input *in, char *why,
                       size_t cap);

#endif /* HCGP_TOPOLOGY_H */
