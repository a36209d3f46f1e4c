/*
 * domains.c - the NVLink domains of a step's nodes and the node of every
 * task (domains.h), from the step's layout (step.c) and topology.conf
 * (topology.c).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "domains.h"
#include "order.h"
#include "topology.h"

__attribute__((format(printf, 3, 4))) static void
unknown(struct hcgp_domains *d, int this_node, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  d->state = HCGP_DOMAINS_UNKNOWN;
  d->this_node = this_node;
  int n = snprintf(d->why, sizeof d->why, "NVLink domains not checked: ");
  vsnprintf(d->why + n, sizeof d->why - (size_t)n, fmt, ap);
  va_end(ap);
}

/* The kind of topology an address pattern names: its domain's position
 * from the end (1: block.node, the last switch of switch...switch.node),
 * or 0 for none ("node"), -1 for one hcg does not read. */
static int pattern_kind(const char *pattern, int *kind) {
  if (!strcmp(pattern, "node"))
    return 0;
  if (!strcmp(pattern, "block.node")) {
    *kind = HCGP_TOPO_BLOCK;
    return 1;
  }
  const char *p = pattern;
  while (!strncmp(p, "switch.", 7))
    p += 7;
  if (p != pattern && !strcmp(p, "node")) {
    *kind = HCGP_TOPO_TREE;
    return 1;
  }
  return -1;
}

void hcgp_domains_free(struct hcgp_domains *d) {
  if (!d)
    return;
  hcgp_step_free(&d->step);
  free(d->node_domain);
  for (int i = 0; i < d->ndomains; i++)
    free(d->domain[i]);
  free(d->domain);
  memset(d, 0, sizeof *d);
}

/* The step's nodes (their names into ns) and where its tasks run
 * (d->step), checked against this node's own tasks: 0, or -1 with d
 * UNKNOWN. */
static int learn_step(struct hcgp_domains *d,
                      const struct hcgp_domain_input *in,
                      struct hcgp_names *ns) {
  int nnodes = (int)in->nnodes, world = (int)in->world;
  ns->max = nnodes;
  ns->at = malloc(sizeof *ns->at * (size_t)nnodes);
  ns->by_name = malloc(sizeof *ns->by_name * (size_t)nnodes);
  int *counts = malloc(sizeof *counts * (size_t)nnodes);
  d->node_domain = malloc(sizeof *d->node_domain * (size_t)nnodes);
  char why[sizeof d->why - 64];
  if (!ns->at || !ns->by_name || !counts || !d->node_domain) {
    unknown(d, 0, "out of memory for the step's %d nodes", nnodes);
  } else if (!in->nodelist ||
             hcgp_hostlist_each(in->nodelist, strlen(in->nodelist), nnodes,
                                hcgp_names_add, ns) ||
             ns->n != nnodes) {
    unknown(d, 0, "SLURM_STEP_NODELIST=%.64s does not name the step's %d nodes",
            in->nodelist ? in->nodelist : "(unset)", nnodes);
  } else if (!in->tasks_per_node ||
             hcgp_tasks_per_node(in->tasks_per_node, nnodes, counts)) {
    unknown(d, 0,
            "SLURM_STEP_TASKS_PER_NODE=%.64s does not give the tasks of the "
            "step's %d nodes",
            in->tasks_per_node ? in->tasks_per_node : "(unset)", nnodes);
  } else if (!in->placement) {
    unknown(d, 0,
            "srun did not say where the step's tasks run (is srun's hcg "
            "plugin older than this node's, or its placement off?)");
  } else if (hcgp_order_decode(in->placement, counts, nnodes, world, &d->step,
                               why, sizeof why)) {
    unknown(d, 0, "%s", why);
  } else {
    int ok = counts[d->nodeid] == in->nlocal;
    for (int i = 0; ok && i < in->nlocal; i++)
      ok = hcgp_step_node(&d->step, in->local[i]) == d->nodeid;
    if (!ok)
      unknown(d, 1,
              "the tasks of this node are not where srun says Slurm put "
              "them (%.64s)",
              in->placement);
  }
  free(counts);
  return d->state == HCGP_DOMAINS_UNKNOWN ? -1 : 0;
}

/* This node's domain as Slurm gave it, ADDR = DOMAIN...NODE (the block, or
 * the last switch): *dom and *dlen; -1 with d UNKNOWN when the address
 * does not end in this node (me) under one domain. */
static int own_domain(struct hcgp_domains *d,
                      const struct hcgp_domain_input *in, const char *me,
                      const char **dom, size_t *dlen) {
  size_t alen = strlen(in->addr), mlen = strlen(me);
  *dom = NULL;
  *dlen = 0;
  if (alen > mlen + 1 && in->addr[alen - mlen - 1] == '.' &&
      !strcmp(in->addr + alen - mlen, me)) {
    size_t plen = alen - mlen - 1; /* the switches or the block */
    const char *last = in->addr;
    for (size_t i = 0; i < plen; i++)
      if (in->addr[i] == '.')
        last = in->addr + i + 1;
    if (d->kind == HCGP_TOPO_TREE || last == in->addr) {
      *dom = last;
      *dlen = (size_t)(in->addr + plen - last);
    }
  }
  if (*dom && *dlen)
    return 0;
  unknown(d, 1,
          "SLURM_TOPOLOGY_ADDR=%.128s does not put this node (%.64s) in "
          "one %s",
          in->addr, me, d->kind == HCGP_TOPO_BLOCK ? "block" : "leaf switch");
  return -1;
}

/* The other nodes' domains, from topology.conf, which must put this node
 * (me) where Slurm does (dom): d KNOWN, or UNKNOWN with why. */
static void learn_topology(struct hcgp_domains *d,
                           const struct hcgp_domain_input *in,
                           struct hcgp_names *ns, const char *me,
                           const char *dom, size_t dlen) {
  if (!in->topology_path) {
    unknown(d, 0, "topology.conf is not found: %s",
            in->topology_error ? in->topology_error
                               : "slurmstepd has no SLURM_CONF");
    return;
  }
  if (!in->topology) {
    unknown(d, 0, "cannot read %s: %s", in->topology_path,
            in->topology_error ? in->topology_error : "unknown error");
    return;
  }
  for (int i = 0; i < ns->n; i++)
    d->node_domain[i] = -1;
  hcgp_names_sort(ns);
  char why[sizeof d->why];
  if (hcgp_topology_read(d, ns, in, why, sizeof why)) {
    unknown(d, 0, "%s", why);
    return;
  }
  const char *mine = d->domain[d->node_domain[d->nodeid]];
  if (strlen(mine) != dlen || strncmp(mine, dom, dlen))
    unknown(d, 1,
            "%s puts this node (%s) in %s %s, but Slurm says %.*s "
            "(SLURM_TOPOLOGY_ADDR=%.128s): was it changed after slurmd "
            "started?",
            in->topology_path, me,
            d->kind == HCGP_TOPO_BLOCK ? "block" : "leaf switch", mine,
            (int)dlen, dom, in->addr);
  else
    d->state = HCGP_DOMAINS_KNOWN;
}

void hcgp_domains_build(struct hcgp_domains *d,
                        const struct hcgp_domain_input *in) {
  memset(d, 0, sizeof *d);
  d->state = HCGP_DOMAINS_NONE;
  if (!in->pattern || !in->addr)
    return; /* Slurm gave no address: no topology to speak of */
  int back = pattern_kind(in->pattern, &d->kind);
  if (!back)
    return;
  if (back < 0) {
    unknown(d, 0,
            "SLURM_TOPOLOGY_ADDR_PATTERN=%.64s names no block (block.node) "
            "or switch (switch.node)",
            in->pattern);
    return;
  }
  d->nodeid = (int)in->nodeid;
  if (in->nnodes < 1 || in->nnodes > HCGP_STEP_NODES_MAX || in->nodeid < 0 ||
      in->nodeid >= in->nnodes || in->world < in->nnodes ||
      in->world > HCG_MAX_WORLD) {
    unknown(d, 0, "Slurm gave no usable node count or node index");
    return;
  }
  struct hcgp_names ns;
  memset(&ns, 0, sizeof ns);
  const char *dom;
  size_t dlen;
  if (!learn_step(d, in, &ns)) {
    const char *me = hcgp_names_of(&ns, d->nodeid);
    if (!own_domain(d, in, me, &dom, &dlen))
      learn_topology(d, in, &ns, me, dom, dlen);
  }
  hcgp_names_free(&ns);
}

int hcgp_domains_node_of(void *arg, int rank) {
  const struct hcgp_domains *d = arg;
  return d->state == HCGP_DOMAINS_KNOWN ? hcgp_step_node(&d->step, rank) : -1;
}

int hcgp_domains_domain_of(void *arg, int rank) {
  const struct hcgp_domains *d = arg;
  int node = hcgp_domains_node_of(arg, rank);
  return node < 0 ? -1 : d->node_domain[node];
}

void hcgp_domains_name(const struct hcgp_domains *d, int domain, char *buf,
                       size_t cap) {
  if (d && domain >= 0 && domain < d->ndomains)
    snprintf(buf, cap, "%s %s", d->kind == HCGP_TOPO_BLOCK ? "block" : "switch",
             d->domain[domain]);
  else
    snprintf(buf, cap, "another domain");
}

/* Another distribution over the same counts, for the suggestion: under
 * one node order, or two (step2 set: a group must fit under both, so the
 * "node" and "domain" of a rank are the pairs of the two). */
struct other {
  const struct hcgp_domains *d;
  struct hcgp_step step, step2;
  int two;
};

static int other_node(void *arg, int rank) {
  const struct other *o = arg;
  int a = hcgp_step_node(&o->step, rank);
  if (!o->two || a < 0)
    return a;
  int b = hcgp_step_node(&o->step2, rank);
  return b < 0 ? -1 : a * o->step.nnodes + b;
}

static int other_domain(void *arg, int rank) {
  const struct other *o = arg;
  int a = hcgp_step_node(&o->step, rank);
  if (a < 0)
    return -1;
  if (!o->two)
    return o->d->node_domain[a];
  int b = hcgp_step_node(&o->step2, rank);
  return b < 0 ? -1
               : o->d->node_domain[a] * o->d->ndomains + o->d->node_domain[b];
}

/* Topology order: nodes by domain (topology.conf's order), then index. */
static const struct hcgp_domains *by_domain_of;
static int cmp_by_domain(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  int dx = by_domain_of->node_domain[x], dy = by_domain_of->node_domain[y];
  return dx != dy ? (dx > dy) - (dx < dy) : (x > y) - (x < y);
}

/* The alternative `dist` into o: 0, or -1 (no memory, or nothing to add). */
static int other_init(struct other *o, const struct hcgp_domains *d, int dist,
                      int plane) {
  const struct hcgp_step *s = &d->step;
  memset(o, 0, sizeof *o);
  o->d = d;
  if (dist != HCG_DIST_BLOCK)
    return hcgp_step_init(&o->step, s->node_counts, s->nnodes, s->world, dist,
                          plane);
  /* Pairs of two orders' nodes and domains must fit in an int. */
  if (s->nnodes > 46340 || d->ndomains > 46340)
    return -1;
  int *order = malloc(sizeof *order * (size_t)s->nnodes);
  if (!order)
    return -1;
  int same = 1;
  for (int i = 0; i < s->nnodes; i++)
    order[i] = i;
  by_domain_of = d;
  qsort(order, (size_t)s->nnodes, sizeof *order, cmp_by_domain);
  for (int i = 0; i < s->nnodes; i++)
    same = same && order[i] == i;
  int rc = hcgp_step_init(&o->step, s->node_counts, s->nnodes, s->world,
                          HCG_DIST_BLOCK, 0);
  if (!rc && !same) {
    o->two = 1;
    rc = hcgp_step_init_order(&o->step2, s->node_counts, s->nnodes, s->world,
                              HCG_DIST_BLOCK, 0, order);
  }
  free(order);
  return rc;
}

static void other_free(struct other *o) {
  hcgp_step_free(&o->step);
  hcgp_step_free(&o->step2);
}

int hcgp_domains_suggest(const struct hcgp_domains *d, const hcg_layout *L,
                         const char *node_dims, const char *domain_dims,
                         int group_size, char *buf, size_t cap) {
  if (!d || d->state != HCGP_DOMAINS_KNOWN)
    return HCG_EINVAL;
  const int dists[3] = {HCG_DIST_BLOCK, HCG_DIST_CYCLIC, HCG_DIST_PLANE};
  struct other alt[3];
  char label[3][48];
  hcg_placement_alt alts[3];
  int nalts = 0;
  for (int i = 0; i < 3; i++) {
    int plane = dists[i] == HCG_DIST_PLANE ? group_size : 0;
    if ((dists[i] == HCG_DIST_PLANE && (plane < 2 || plane >= d->step.world)) ||
        (dists[i] == d->step.dist &&
         (dists[i] != HCG_DIST_PLANE || plane == d->step.plane)))
      continue;
    if (other_init(&alt[nalts], d, dists[i], plane)) {
      other_free(&alt[nalts]);
      continue;
    }
    if (plane)
      snprintf(label[nalts], sizeof label[nalts], "--distribution=plane=%d",
               plane);
    else
      snprintf(label[nalts], sizeof label[nalts], "--distribution=%s",
               dists[i] == HCG_DIST_BLOCK ? "block" : "cyclic");
    alts[nalts].name = label[nalts];
    alts[nalts].where = (hcg_placement_where){other_node, &alt[nalts],
                                              other_domain, &alt[nalts]};
    nalts++;
  }
  hcg_placement_where now = {hcgp_domains_node_of, (void *)d,
                             hcgp_domains_domain_of, (void *)d};
  int rc = hcg_placement_suggest(L, node_dims, domain_dims, &now, alts, nalts,
                                 buf, cap);
  for (int i = 0; i < nalts; i++)
    other_free(&alt[i]);
  return rc;
}
