/*
 * order.c - Slurm's layout of a step as a distribution over an order of
 * its nodes (order.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"
#include "hostlist.h"
#include "order.h"

struct first {
  uint32_t tid; /* the node's first task */
  int node;
};

static int cmp_first(const void *a, const void *b) {
  const struct first *x = a, *y = b;
  return (x->tid > y->tid) - (x->tid < y->tid);
}

/* Whether the step s puts every task of Slurm's layout where Slurm did. */
static int reproduces(const struct hcgp_step *s, int nnodes, const int *counts,
                      const uint32_t *const *tids) {
  for (int i = 0; i < nnodes; i++)
    for (int k = 0; k < counts[i]; k++)
      if (hcgp_step_node(s, (int)tids[i][k]) != i)
        return 0;
  return 1;
}

/* "a-b," or "a," for the run order[i .. j-1] of consecutive indices. */
static int put_ranges(const int *order, int nnodes, char *buf, size_t cap) {
  size_t n = 0;
  for (int i = 0; i < nnodes;) {
    int j = i + 1;
    while (j < nnodes && order[j] == order[j - 1] + 1)
      j++;
    int w = j - i > 1
                ? snprintf(buf + n, cap - n, "%s%d-%d", i ? "," : "", order[i],
                           order[j - 1])
                : snprintf(buf + n, cap - n, "%s%d", i ? "," : "", order[i]);
    if (w < 0 || (size_t)w >= cap - n)
      return -1;
    n += (size_t)w;
    i = j;
  }
  return 0;
}

int hcgp_order_encode(int nnodes, int world, const int *counts,
                      const uint32_t *const *tids, int plane, char *buf,
                      size_t cap, char *why, size_t whycap) {
  if (nnodes < 1 || nnodes > HCGP_STEP_NODES_MAX || world < nnodes ||
      world > HCG_MAX_WORLD || !counts || !tids) {
    snprintf(why, whycap,
             "Slurm's layout of the step has no usable node or "
             "task count");
    return -1;
  }
  struct first *f = malloc(sizeof *f * (size_t)nnodes);
  int *order = malloc(sizeof *order * (size_t)nnodes);
  int rc = -1, identity = 1;
  long long sum = 0;
  snprintf(why, whycap, "out of memory for the step's %d nodes", nnodes);
  for (int i = 0; f && order && i < nnodes; i++) {
    sum += counts[i];
    if (counts[i] < 1 || !tids[i] || sum > world)
      break;
    f[i].node = i;
    f[i].tid = tids[i][0];
    for (int k = 1; k < counts[i]; k++)
      if (tids[i][k] < f[i].tid)
        f[i].tid = tids[i][k];
    if (i == nnodes - 1 && sum == world)
      rc = 0;
  }
  if (f && order && rc)
    snprintf(why, whycap,
             "Slurm's layout of the step does not add up to "
             "its %d tasks",
             world);
  if (!rc) {
    rc = -1;
    qsort(f, (size_t)nnodes, sizeof *f, cmp_first);
    for (int i = 0; i < nnodes; i++) {
      order[i] = f[i].node;
      identity = identity && order[i] == i;
    }
    /* plane: Slurm's plane size when the layout has one; else the run of
     * consecutive tasks the first node starts with, which is the plane
     * size wherever the node has more tasks than that. */
    int run = 1, first = order[0];
    while (run < counts[first] && tids[first][run] == tids[first][0] + run)
      run++;
    const int dists[4] = {HCG_DIST_BLOCK, HCG_DIST_CYCLIC, HCG_DIST_PLANE,
                          HCG_DIST_PLANE};
    const int planes[4] = {0, 0, plane, run};
    snprintf(why, whycap,
             "Slurm dealt the step's tasks in a way hcg does not model "
             "(not block, cyclic or plane over its nodes: "
             "--distribution=arbitrary?)");
    for (int d = 0; d < 4 && rc; d++) {
      struct hcgp_step s;
      if ((dists[d] == HCG_DIST_PLANE &&
           (planes[d] < 1 || planes[d] > world)) ||
          hcgp_step_init_order(&s, counts, nnodes, world, dists[d], planes[d],
                               identity ? NULL : order))
        continue;
      if (reproduces(&s, nnodes, counts, tids)) {
        int w = dists[d] == HCG_DIST_PLANE
                    ? snprintf(buf, cap, "plane=%d", planes[d])
                    : snprintf(buf, cap, "%s",
                               dists[d] == HCG_DIST_BLOCK ? "block" : "cyclic");
        size_t n = (size_t)w;
        int fits = w >= 0 && n + 2 < cap;
        if (fits && !identity) {
          buf[n] = ':';
          fits = !put_ranges(order, nnodes, buf + n + 1, cap - n - 1);
        }
        if (!fits)
          snprintf(why, whycap,
                   "the order of the step's %d nodes is longer than hcg "
                   "forwards (%zu bytes)",
                   nnodes, cap);
        else
          rc = 0;
      }
      hcgp_step_free(&s);
    }
  }
  free(f);
  free(order);
  if (rc && cap)
    buf[0] = '\0';
  return rc;
}

/* The node ranges of text (nnodes indices, each once) into order. */
static int get_ranges(const char *p, int nnodes, int *order) {
  char *seen = calloc((size_t)nnodes, 1);
  int n = 0, ok = seen != NULL;
  while (ok && *p) {
    const char *q = p + strspn(p, "0123456789");
    long a, b;
    ok = !hcgp_parse_digits(p, (size_t)(q - p), &a) && a < nnodes;
    b = a;
    if (ok && *q == '-') {
      const char *r = q + 1 + strspn(q + 1, "0123456789");
      ok = !hcgp_parse_digits(q + 1, (size_t)(r - q - 1), &b) && b >= a &&
           b < nnodes;
      q = r;
    }
    for (long k = a; ok && k <= b; k++) {
      ok = !seen[k] && n < nnodes;
      if (ok) {
        seen[k] = 1;
        order[n++] = (int)k;
      }
    }
    if (ok && *q == ',' && q[1])
      q++;
    else
      ok = ok && !*q;
    p = q;
  }
  free(seen);
  return ok && n == nnodes ? 0 : -1;
}

int hcgp_order_decode(const char *text, const int *counts, int nnodes,
                      int world, struct hcgp_step *s, char *why,
                      size_t whycap) {
  memset(s, 0, sizeof *s);
  if (text[0] == '!') {
    size_t n = 0;
    for (const char *p = text + 1; *p && n + 1 < whycap && n < 400; p++)
      why[n++] = *p >= ' ' && *p <= '~' ? *p : '?';
    why[n < whycap ? n : 0] = '\0';
    return -1;
  }
  size_t dlen = strcspn(text, ":");
  int dist = -1;
  long plane = 0;
  if (dlen == 5 && !strncmp(text, "block", 5))
    dist = HCG_DIST_BLOCK;
  else if (dlen == 6 && !strncmp(text, "cyclic", 6))
    dist = HCG_DIST_CYCLIC;
  else if (dlen > 6 && !strncmp(text, "plane=", 6) &&
           !hcgp_parse_digits(text + 6, dlen - 6, &plane) && plane >= 1 &&
           plane <= world)
    dist = HCG_DIST_PLANE;
  int *order = NULL;
  int rc = -1;
  if (dist < 0) {
    snprintf(why, whycap,
             "srun's placement of the step (%.32s) names no "
             "distribution hcg knows",
             text);
    return -1;
  }
  if (text[dlen] == ':') {
    order = malloc(sizeof *order * (size_t)nnodes);
    if (!order || get_ranges(text + dlen + 1, nnodes, order)) {
      snprintf(why, whycap,
               "srun's order of the step's nodes does not name "
               "each of its %d nodes once",
               nnodes);
      free(order);
      return -1;
    }
  }
  rc = hcgp_step_init_order(s, counts, nnodes, world, dist, (int)plane, order);
  if (rc)
    snprintf(why, whycap, "srun's placement does not fit the step's %d tasks",
             world);
  free(order);
  return rc;
}

int hcgp_order_value(uint32_t job, uint32_t step, const char *text, char *buf,
                     size_t cap) {
  int w = snprintf(buf, cap, HCGP_ORDER_MAGIC ":%" PRIu32 ".%" PRIu32 ":%s",
                   job, step, text);
  return w < 0 || (size_t)w >= cap ? -1 : 0;
}

const char *hcgp_order_text(const char *value, uint32_t job, uint32_t step) {
  char head[64];
  int w = snprintf(head, sizeof head,
                   HCGP_ORDER_MAGIC ":%" PRIu32 ".%" PRIu32 ":", job, step);
  if (!value || w < 0 || strncmp(value, head, (size_t)w))
    return NULL;
  return value + w;
}
