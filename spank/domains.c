/*
 * domains.c - the NVLink domains of a step's nodes and the node of every
 * task (domains.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "domains.h"

/* ---- host lists -----------------------------------------------------------
 */

enum { BRACKETS_MAX = 4, NUMBER_DIGITS_MAX = 9 };

struct expand {
  hcgp_host_fn fn;
  void *arg;
  long max, count;
  char name[HCGP_NODE_NAME_MAX + 1];
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Digits only, at most NUMBER_DIGITS_MAX of them. */
static int parse_number(const char *s, size_t n, long *out) {
  if (!n || n > NUMBER_DIGITS_MAX)
    return -1;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit(s[i]))
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

/* One item (no ',' outside brackets) after `used` bytes of name. */
static int expand_item(struct expand *e, size_t used, const char *s, size_t n,
                       int depth) {
  const char *open = memchr(s, '[', n);
  size_t lit = open ? (size_t)(open - s) : n;
  if (used + lit > HCGP_NODE_NAME_MAX)
    return -1;
  memcpy(e->name + used, s, lit);
  used += lit;
  if (!open) {
    if (!used)
      return -1; /* an empty name */
    e->name[used] = '\0';
    if (++e->count > e->max)
      return -1;
    return e->fn(e->arg, e->name, used);
  }
  if (depth >= BRACKETS_MAX)
    return -1;
  const char *close = memchr(open, ']', n - lit);
  if (!close || close == open + 1)
    return -1;
  const char *rest = close + 1;
  size_t nrest = n - (size_t)(rest - s);
  for (const char *p = open + 1; p < close;) {
    const char *comma = memchr(p, ',', (size_t)(close - p));
    const char *end = comma ? comma : close;
    const char *dash = memchr(p, '-', (size_t)(end - p));
    size_t wlo = (size_t)((dash ? dash : end) - p);
    long lo, hi;
    if (parse_number(p, wlo, &lo) ||
        (dash ? parse_number(dash + 1, (size_t)(end - dash - 1), &hi)
              : (hi = lo, 0)) ||
        hi < lo ||
        used + (wlo > NUMBER_DIGITS_MAX ? wlo : NUMBER_DIGITS_MAX) >
            HCGP_NODE_NAME_MAX)
      return -1;
    for (long v = lo; v <= hi; v++) {
      if (e->count >= e->max)
        return -1;
      int k =
          snprintf(e->name + used, NUMBER_DIGITS_MAX + 1, "%0*ld", (int)wlo, v);
      int rc = expand_item(e, used + (size_t)k, rest, nrest, depth + 1);
      if (rc)
        return rc;
    }
    if (!comma)
      break;
    p = comma + 1;
    if (p == close)
      return -1; /* "[1,]" */
  }
  return 0;
}

int hcgp_hostlist_each(const char *list, size_t len, long max, hcgp_host_fn fn,
                       void *arg) {
  if (!list || !fn || max < 0)
    return -1;
  struct expand e;
  e.fn = fn;
  e.arg = arg;
  e.max = max;
  e.count = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    int depth = 0;
    for (; j < len && (depth || list[j] != ','); j++) {
      char c = list[j];
      if (c <= ' ' || c > '~' || (c == '[' && depth) || (c == ']' && !depth))
        return -1;
      depth = c == '[' ? 1 : c == ']' ? 0 : depth;
    }
    if (depth || j == i)
      return -1;
    int rc = expand_item(&e, 0, list + i, j - i, 0);
    if (rc)
      return rc;
    if (j < len && j + 1 == len)
      return -1; /* a trailing ',' */
    i = j + 1;
  }
  return 0;
}

/* ---- task counts ------------------------------------------------------------
 */

int hcgp_tasks_per_node(const char *s, int nnodes, int *counts) {
  if (!s || nnodes < 1 || !counts)
    return -1;
  int at = 0;
  for (const char *p = s;;) {
    const char *q = p;
    while (is_digit(*q))
      q++;
    long c, reps = 1;
    if (parse_number(p, (size_t)(q - p), &c) || c < 1 || c > HCG_MAX_WORLD)
      return -1;
    if (q[0] == '(' && q[1] == 'x') {
      const char *r = q + 2;
      while (is_digit(*r))
        r++;
      if (*r != ')' || parse_number(q + 2, (size_t)(r - q - 2), &reps) ||
          reps < 1)
        return -1;
      q = r + 1;
    }
    if (reps > nnodes - at)
      return -1;
    for (long k = 0; k < reps; k++)
      counts[at++] = (int)c;
    if (!*q)
      break;
    if (*q != ',')
      return -1;
    p = q + 1;
  }
  return at == nnodes ? 0 : -1;
}

/* ---- the step's task layout
 * ---------------------------------------------------- */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void hcgp_step_free(struct hcgp_step *s) {
  free(s->counts);
  free(s->start);
  free(s->sorted);
  free(s->sorted_sum);
  memset(s, 0, sizeof *s);
}

int hcgp_step_init(struct hcgp_step *s, const int *counts, int nnodes,
                   int world, int dist, int plane) {
  memset(s, 0, sizeof *s);
  if (nnodes < 1 || nnodes > HCGP_STEP_NODES_MAX || world < 1 ||
      (dist == HCG_DIST_PLANE && plane < 1))
    return -1;
  size_t n = (size_t)nnodes;
  s->counts = malloc(n * sizeof *s->counts);
  s->sorted = malloc(n * sizeof *s->sorted);
  s->start = malloc((n + 1) * sizeof *s->start);
  s->sorted_sum = malloc((n + 1) * sizeof *s->sorted_sum);
  if (!s->counts || !s->sorted || !s->start || !s->sorted_sum) {
    hcgp_step_free(s);
    return -1;
  }
  s->nnodes = nnodes;
  s->world = world;
  s->dist = dist;
  s->plane = dist == HCG_DIST_PLANE ? plane : 1;
  s->start[0] = 0;
  for (int i = 0; i < nnodes; i++) {
    if (counts[i] < 1) {
      hcgp_step_free(s);
      return -1;
    }
    s->counts[i] = s->sorted[i] = counts[i];
    s->start[i + 1] = s->start[i] + counts[i];
  }
  if (s->start[n] != world) {
    hcgp_step_free(s);
    return -1;
  }
  qsort(s->sorted, n, sizeof *s->sorted, cmp_int);
  s->sorted_sum[0] = 0;
  for (size_t i = 0; i < n; i++)
    s->sorted_sum[i + 1] = s->sorted_sum[i] + s->sorted[i];
  return 0;
}

/* Tasks dealt before round j: every node gives min(count, plane * j). */
static long long dealt_before(const struct hcgp_step *s, long long j) {
  long long cap = (long long)s->plane * j;
  int lo = 0, hi = s->nnodes; /* nodes with a count <= cap: [0, lo) */
  while (lo < hi) {
    int mid = lo + (hi - lo) / 2;
    if (s->sorted[mid] <= cap)
      lo = mid + 1;
    else
      hi = mid;
  }
  return s->sorted_sum[lo] + (long long)(s->nnodes - lo) * cap;
}

int hcgp_step_node(const struct hcgp_step *s, int rank) {
  if (!s || !s->counts || rank < 0 || rank >= s->world)
    return -1;
  if (s->dist == HCG_DIST_BLOCK) {
    int lo = 0, hi = s->nnodes - 1; /* the last node starting at <= rank */
    while (lo < hi) {
      int mid = lo + (hi - lo + 1) / 2;
      if (s->start[mid] <= rank)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  }
  /* Cyclic (plane 1) and plane: rounds in which each node with room left
   * takes up to `plane` tasks, nodes in order (Slurm's step layout). */
  long long P = s->plane;
  long long lo = 0, hi = (s->sorted[s->nnodes - 1] + P - 1) / P - 1;
  while (lo < hi) { /* the last round starting at <= rank */
    long long mid = lo + (hi - lo + 1) / 2;
    if (dealt_before(s, mid) <= rank)
      lo = mid;
    else
      hi = mid - 1;
  }
  long long k = rank - dealt_before(s, lo);
  if (s->sorted[0] >= P * (lo + 1))
    return (int)(k / P); /* a full round: every node takes plane tasks */
  if (s->sorted[0] == s->sorted[s->nnodes - 1])
    return (int)(k / (s->sorted[0] - P * lo)); /* equal counts: the rest */
  for (int i = 0; i < s->nnodes; i++) {
    long long left = s->counts[i] - P * lo;
    long long take = left < 0 ? 0 : left < P ? left : P;
    if (k < take)
      return i;
    k -= take;
  }
  return -1;
}

/* ---- the domains
 * ------------------------------------------------------------- */

/* The step's nodes by name, for lookups from topology.conf. */
struct name_ref {
  const char *name;
  int index;
};
struct names {
  char *text; /* every name, NUL-terminated, one after another */
  size_t used, cap;
  size_t *at;               /* node index -> offset in text */
  struct name_ref *by_name; /* sorted by name, once all are in */
  int n, max;
};

static int add_name(void *arg, const char *name, size_t len) {
  struct names *ns = arg;
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

static const char *name_of(const struct names *ns, int i) {
  return ns->text + ns->at[i];
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(((const struct name_ref *)a)->name,
                ((const struct name_ref *)b)->name);
}

static int find_name(const struct names *ns, const char *name) {
  struct name_ref key = {name, -1};
  const struct name_ref *r =
      bsearch(&key, ns->by_name, (size_t)ns->n, sizeof key, cmp_names);
  return r ? r->index : -1;
}

static void names_free(struct names *ns) {
  free(ns->text);
  free(ns->at);
  free(ns->by_name);
}

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
  const struct names *ns;
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

/* The entries of topology.conf that name nodes: BlockName=B Nodes=... for
 * blocks, SwitchName=S Nodes=... (leaf switches) for trees. -1 with why set
 * when the file cannot be used. */
static int read_topology(struct hcgp_domains *d, const struct names *ns,
                         const struct hcgp_domain_input *in) {
  const char *entry = d->kind == HCGP_TOPO_BLOCK ? "blockname" : "switchname";
  struct topo_read r = {d, ns, -1, 0, 0, HCGP_HOSTS_MAX};
  const char *p = in->topology, *end = in->topology + in->topology_len;
  char *line = malloc(in->topology_len + 1);
  if (!line) {
    unknown(d, 0, "out of memory reading %s", in->topology_path);
    return -1;
  }
  int rc = 0;
  while (p < end && !rc) {
    /* One logical line: a '\' at the end of a line continues it. */
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
    const char *name = NULL, *nodes = NULL;
    size_t name_len = 0, nodes_len = 0;
    int first = 1, is_entry = 0;
    for (char *t = line; *t;) {
      while (*t == ' ' || *t == '\t' || *t == '\r')
        t++;
      if (!*t)
        break;
      size_t k = strcspn(t, " \t\r");
      if (first && k == 7 && !strncasecmp(t, "include", 7)) {
        unknown(d, 0, "%s uses Include, which hcg does not follow",
                in->topology_path);
        rc = -1;
        break;
      }
      if (first && has_key(t, k, entry)) {
        is_entry = 1;
        name = t + strlen(entry) + 1;
        name_len = k - strlen(entry) - 1;
      } else if (is_entry && has_key(t, k, "nodes")) {
        nodes = t + 6;
        nodes_len = k - 6;
      }
      first = 0;
      t += k;
    }
    if (rc || !is_entry || !nodes)
      continue;
    r.domain = add_domain(d, name, name_len);
    if (r.domain < 0) {
      unknown(d, 0, "%s has a %.*s name of over %d bytes, or no memory",
              in->topology_path, (int)strlen(entry) - 4, entry,
              HCGP_NODE_NAME_MAX);
      rc = -1;
    } else if (hcgp_hostlist_each(nodes, nodes_len, r.budget, place_node, &r)) {
      unknown(d, 0,
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
    unknown(d, 0, "%s puts node %s under two leaf switches (%s and %s)",
            in->topology_path, name_of(ns, i), d->domain[d->node_domain[i]],
            d->domain[r.other]);
    return -1;
  }
  for (int i = 0; i < ns->n; i++)
    if (d->node_domain[i] < 0) {
      unknown(d, 0, "%s puts node %s of this step in no %s", in->topology_path,
              name_of(ns, i), what);
      return -1;
    }
  return 0;
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

/* The step's distribution over nodes from SLURM_DISTRIBUTION's first word
 * ("block", "cyclic:fcyclic", "plane", "pack", ...); -1 for arbitrary or
 * an unknown word. */
static int parse_distribution(const char *s, const char *plane_size, int world,
                              int *dist, int *plane) {
  size_t n = s ? strcspn(s, ":,") : 0;
  *plane = 0;
  if (!n || (n == 1 && s[0] == '*') || (n == 5 && !strncmp(s, "block", 5)) ||
      (n == 4 && !strncmp(s, "pack", 4)) ||
      (n == 6 && !strncmp(s, "nopack", 6))) {
    *dist = HCG_DIST_BLOCK;
    return 0;
  }
  if (n == 6 && !strncmp(s, "cyclic", 6)) {
    *dist = HCG_DIST_CYCLIC;
    return 0;
  }
  long p;
  if (n == 5 && !strncmp(s, "plane", 5) && plane_size &&
      !parse_number(plane_size, strlen(plane_size), &p) && p >= 1 &&
      p <= world) {
    *dist = HCG_DIST_PLANE;
    *plane = (int)p;
    return 0;
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
  int nnodes = (int)in->nnodes, world = (int)in->world;

  /* The step's nodes and tasks. */
  struct names ns;
  memset(&ns, 0, sizeof ns);
  ns.max = nnodes;
  ns.at = malloc(sizeof *ns.at * (size_t)nnodes);
  ns.by_name = malloc(sizeof *ns.by_name * (size_t)nnodes);
  int *counts = malloc(sizeof *counts * (size_t)nnodes);
  d->node_domain = malloc(sizeof *d->node_domain * (size_t)nnodes);
  int dist = 0, plane = 0;
  if (!ns.at || !ns.by_name || !counts || !d->node_domain) {
    unknown(d, 0, "out of memory for the step's %d nodes", nnodes);
  } else if (!in->nodelist ||
             hcgp_hostlist_each(in->nodelist, strlen(in->nodelist), nnodes,
                                add_name, &ns) ||
             ns.n != nnodes) {
    unknown(d, 0, "SLURM_STEP_NODELIST=%.64s does not name the step's %d nodes",
            in->nodelist ? in->nodelist : "(unset)", nnodes);
  } else if (!in->tasks_per_node ||
             hcgp_tasks_per_node(in->tasks_per_node, nnodes, counts)) {
    unknown(d, 0,
            "SLURM_STEP_TASKS_PER_NODE=%.64s does not give the tasks of the "
            "step's %d nodes",
            in->tasks_per_node ? in->tasks_per_node : "(unset)", nnodes);
  } else if (parse_distribution(in->distribution, in->plane_size, world, &dist,
                                &plane)) {
    unknown(d, 0,
            "SLURM_DISTRIBUTION=%.32s: hcg cannot tell where the other "
            "nodes' tasks are",
            in->distribution);
  } else if (hcgp_step_init(&d->step, counts, nnodes, world, dist, plane)) {
    unknown(d, 0,
            "SLURM_STEP_TASKS_PER_NODE=%.64s does not add up to the step's "
            "%d tasks",
            in->tasks_per_node, world);
  } else {
    int ok = counts[d->nodeid] == in->nlocal;
    for (int i = 0; ok && i < in->nlocal; i++)
      ok = hcgp_step_node(&d->step, in->local[i]) == d->nodeid;
    if (!ok)
      unknown(d, 1,
              "the tasks of this node are not where SLURM_STEP_TASKS_PER_NODE"
              "=%.32s and SLURM_DISTRIBUTION=%.32s put them",
              in->tasks_per_node,
              in->distribution ? in->distribution : "(unset)");
  }
  free(counts);
  if (d->state == HCGP_DOMAINS_UNKNOWN) {
    names_free(&ns);
    return;
  }

  /* This node's domain, as Slurm gave it: ADDR = DOMAIN...NODE. */
  const char *me = name_of(&ns, d->nodeid);
  size_t alen = strlen(in->addr), mlen = strlen(me);
  const char *dom = NULL;
  size_t dlen = 0;
  if (alen > mlen + 1 && in->addr[alen - mlen - 1] == '.' &&
      !strcmp(in->addr + alen - mlen, me)) {
    size_t plen = alen - mlen - 1; /* the switches or the block */
    const char *last = in->addr;
    for (size_t i = 0; i < plen; i++)
      if (in->addr[i] == '.')
        last = in->addr + i + 1;
    if (d->kind == HCGP_TOPO_TREE || last == in->addr) {
      dom = last;
      dlen = (size_t)(in->addr + plen - last);
    }
  }
  if (!dom || !dlen) {
    unknown(d, 1,
            "SLURM_TOPOLOGY_ADDR=%.128s does not put this node (%.64s) in "
            "one %s",
            in->addr, me, d->kind == HCGP_TOPO_BLOCK ? "block" : "leaf switch");
    names_free(&ns);
    return;
  }

  /* The other nodes' domains: topology.conf. */
  if (!in->topology_path) {
    unknown(d, 0, "topology.conf is not found: %s",
            in->topology_error ? in->topology_error
                               : "slurmstepd has no SLURM_CONF");
  } else if (!in->topology) {
    unknown(d, 0, "cannot read %s: %s", in->topology_path,
            in->topology_error ? in->topology_error : "unknown error");
  } else {
    for (int i = 0; i < nnodes; i++) {
      ns.by_name[i].name = name_of(&ns, i);
      ns.by_name[i].index = i;
      d->node_domain[i] = -1;
    }
    qsort(ns.by_name, (size_t)nnodes, sizeof *ns.by_name, cmp_names);
    if (!read_topology(d, &ns, in)) {
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
  }
  names_free(&ns);
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

/* Another distribution over the same counts, for the suggestion. */
struct other {
  const struct hcgp_domains *d;
  struct hcgp_step step;
};

static int other_node(void *arg, int rank) {
  return hcgp_step_node(&((struct other *)arg)->step, rank);
}

static int other_domain(void *arg, int rank) {
  const struct other *o = arg;
  int node = hcgp_step_node(&o->step, rank);
  return node < 0 ? -1 : o->d->node_domain[node];
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
    alt[nalts].d = d;
    if (hcgp_step_init(&alt[nalts].step, d->step.counts, d->step.nnodes,
                       d->step.world, dists[i], plane))
      continue;
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
    hcgp_step_free(&alt[i].step);
  return rc;
}
