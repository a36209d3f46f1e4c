/*
 * topology.c - the step's node names and topology.conf (topology.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "hostlist.h"
#include "topology.h"

int hcgp_names_add(void *arg, const char *name, size_t len) {
  struct hcgp_names *ns = arg;
  if (ns->n >= ns->max)
    return -1;
  if (ns->used + len + 1 > ns->cap) {
    size_t cap = ns->cap ? ns->cap * 2 : 4096;
    while (cap < ns->used + len + 1)
      cap *= 2;
    char *t = realloc(ns->text, cap);
    if (!t)
      return -1;
    ns->text = t;
    ns->cap = cap;
  }
  ns->at[ns->n++] = ns->used;
  memcpy(ns->text + ns->used, name, len + 1);
  ns->used += len + 1;
  return 0;
}

const char *hcgp_names_of(const struct hcgp_names *ns, int i) {
  return ns->text + ns->at[i];
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(((const struct hcgp_name_ref *)a)->name,
                ((const struct hcgp_name_ref *)b)->name);
}

static int find_name(const struct hcgp_names *ns, const char *name) {
  struct hcgp_name_ref key = {name, -1};
  const struct hcgp_name_ref *r =
      bsearch(&key, ns->by_name, (size_t)ns->n, sizeof key, cmp_names);
  return r ? r->index : -1;
}

void hcgp_names_free(struct hcgp_names *ns) {
  free(ns->text);
  free(ns->at);
  free(ns->by_name);
}

void hcgp_names_sort(struct hcgp_names *ns) {
  for (int i = 0; i < ns->n; i++) {
    ns->by_name[i].name = hcgp_names_of(ns, i);
    ns->by_name[i].index = i;
  }
  qsort(ns->by_name, (size_t)ns->n, sizeof *ns->by_name, cmp_names);
}

/* Case-insensitive "KEY=" at the start of a token. */
static int has_key(const char *tok, size_t n, const char *key) {
  size_t k = strlen(key);
  if (n <= k || tok[k] != '=')
    return 0;
  for (size_t i = 0; i < k; i++) {
    char c = tok[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != key[i])
      return 0;
  }
  return 1;
}

struct topo_read {
  struct hcgp_domains *d;
  const struct hcgp_names *ns;
  int domain;   /* the entry being read */
  int conflict; /* tree: a node under two leaf switches: its index + 1 */
  int other;    /* and its other switch */
  long budget;  /* names left to expand */
};

static int place_node(void *arg, const char *name, size_t len) {
  (void)len;
  struct topo_read *r = arg;
  r->budget--;
  int i = find_name(r->ns, name);
  if (i < 0)
    return 0;
  int *dom = &r->d->node_domain[i];
  if (*dom < 0)
    *dom = r->domain;
  else if (*dom != r->domain && r->d->kind == HCGP_TOPO_TREE && !r->conflict) {
    r->conflict = i + 1;
    r->other = r->domain;
  }
  return 0;
}

static int add_domain(struct hcgp_domains *d, const char *name, size_t len) {
  if (len > HCGP_NODE_NAME_MAX)
    return -1;
  char **t = realloc(d->domain, sizeof *t * (size_t)(d->ndomains + 1));
  if (!t)
    return -1;
  d->domain = t;
  if (!(t[d->ndomains] = strndup(name, len)))
    return -1;
  return d->ndomains++;
}

/* The logical line at p into line (a backslash at the end of a line
 * continues it; a '#' starts a comment): where the next one starts. */
static const char *logical_line(const char *p, const char *end, char *line) {
  size_t n = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    size_t k = (size_t)(stop - p);
    int more = k && p[k - 1] == '\\';
    memcpy(line + n, p, more ? k - 1 : k);
    n += more ? k - 1 : k;
    p = nl ? nl + 1 : end;
    if (!more)
      break;
  }
  line[n] = '\0';
  char *hash = strchr(line, '#');
  if (hash)
    *hash = '\0';
  return p;
}

/* The entry a logical line holds: ENTRY=NAME ... Nodes=LIST (keys in any
 * case) gives 1 with the name and the list; another line 0; an Include
 * line -1. */
static int line_entry(char *line, const char *entry, const char **name,
                      size_t *name_len, const char **nodes, size_t *nodes_len) {
  int first = 1, is_entry = 0;
  for (char *t = line; *t;) {
    while (*t == ' ' || *t == '\t' || *t == '\r')
      t++;
    if (!*t)
      break;
    size_t k = strcspn(t, " \t\r");
    if (first && k == 7 && !strncasecmp(t, "include", 7))
      return -1;
    if (first && has_key(t, k, entry)) {
      is_entry = 1;
      *name = t + strlen(entry) + 1;
      *name_len = k - strlen(entry) - 1;
    } else if (is_entry && has_key(t, k, "nodes")) {
      *nodes = t + 6;
      *nodes_len = k - 6;
    }
    first = 0;
    t += k;
  }
  return is_entry && *nodes ? 1 : 0;
}

int hcgp_topology_read(struct hcgp_domains *d, const struct hcgp_names *ns,
                       const struct hcgp_domain_input *in, char *why,
                       size_t cap) {
  const char *entry = d->kind == HCGP_TOPO_BLOCK ? "blockname" : "switchname";
  struct topo_read r = {d, ns, -1, 0, 0, HCGP_HOSTS_MAX};
  const char *p = in->topology, *end = in->topology + in->topology_len;
  char *line = malloc(in->topology_len + 1);
  if (!line) {
    snprintf(why, cap, "out of memory reading %s", in->topology_path);
    return -1;
  }
  int rc = 0;
  while (p < end && !rc) {
    p = logical_line(p, end, line);
    const char *name = NULL, *nodes = NULL;
    size_t name_len = 0, nodes_len = 0;
    int got = line_entry(line, entry, &name, &name_len, &nodes, &nodes_len);
    if (got < 0) {
      snprintf(why, cap, "%s uses Include, which hcg does not follow",
               in->topology_path);
      rc = -1;
    }
    if (got <= 0)
      continue;
    r.domain = add_domain(d, name, name_len);
    if (r.domain < 0) {
      snprintf(why, cap, "%s has a %.*s name of over %d bytes, or no memory",
               in->topology_path, (int)strlen(entry) - 4, entry,
               HCGP_NODE_NAME_MAX);
      rc = -1;
    } else if (hcgp_hostlist_each(nodes, nodes_len, r.budget, place_node, &r)) {
      snprintf(why, cap,
               "%s: the nodes of %.*s %.*s, '%.*s', are not a host list hcg "
               "reads (or more than %ld names)",
               in->topology_path, (int)strlen(entry) - 4, entry,
               (int)(name_len < 64 ? name_len : 64), name,
               (int)(nodes_len < 64 ? nodes_len : 64), nodes, HCGP_HOSTS_MAX);
      rc = -1;
    }
  }
  free(line);
  if (rc)
    return -1;
  const char *what = d->kind == HCGP_TOPO_BLOCK ? "block" : "leaf switch";
  if (r.conflict) {
    int i = r.conflict - 1;
    snprintf(why, cap, "%s puts node %s under two leaf switches (%s and %s)",
             in->topology_path, hcgp_names_of(ns, i),
             d->domain[d->node_domain[i]], d->domain[r.other]);
    return -1;
  }
  for (int i = 0; i < ns->n; i++)
    if (d->node_domain[i] < 0) {
      snprintf(why, cap, "%s puts node %s of this step in no %s",
               in->topology_path, hcgp_names_of(ns, i), what);
      return -1;
    }
  return 0;
}
