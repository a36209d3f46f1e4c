/*
 * step.c - the node of every task of a step (step.h).
 */
#include <stdlib.h>
#include <string.h>

#include "hcg.h"
#include "hostlist.h"
#include "step.h"

int hcgp_tasks_per_node(const char *s, int nnodes, int *counts) {
  if (!s || nnodes < 1 || !counts)
    return -1;
  int at = 0;
  for (const char *p = s;;) {
    const char *q = p + strspn(p, "0123456789");
    long c, reps = 1;
    if (hcgp_parse_digits(p, (size_t)(q - p), &c) || c < 1 || c > HCG_MAX_WORLD)
      return -1;
    if (q[0] == '(' && q[1] == 'x') {
      const char *r = q + 2 + strspn(q + 2, "0123456789");
      if (*r != ')' || hcgp_parse_digits(q + 2, (size_t)(r - q - 2), &reps) ||
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

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void hcgp_step_free(struct hcgp_step *s) {
  free(s->counts);
  free(s->order);
  free(s->node_counts);
  free(s->start);
  free(s->sorted);
  free(s->sorted_sum);
  memset(s, 0, sizeof *s);
}

int hcgp_step_init(struct hcgp_step *s, const int *counts, int nnodes,
                   int world, int dist, int plane) {
  return hcgp_step_init_order(s, counts, nnodes, world, dist, plane, NULL);
}

int hcgp_step_init_order(struct hcgp_step *s, const int *counts, int nnodes,
                         int world, int dist, int plane, const int *order) {
  memset(s, 0, sizeof *s);
  if (nnodes < 1 || nnodes > HCGP_STEP_NODES_MAX || world < 1 ||
      (dist == HCG_DIST_PLANE && plane < 1))
    return -1;
  size_t n = (size_t)nnodes;
  s->counts = malloc(n * sizeof *s->counts);
  s->sorted = malloc(n * sizeof *s->sorted);
  s->start = malloc((n + 1) * sizeof *s->start);
  s->sorted_sum = malloc((n + 1) * sizeof *s->sorted_sum);
  s->node_counts = malloc(n * sizeof *s->node_counts);
  if (order && (s->order = malloc(n * sizeof *s->order)))
    memcpy(s->order, order, n * sizeof *s->order);
  if (!s->counts || !s->sorted || !s->start || !s->sorted_sum ||
      !s->node_counts || (order && !s->order)) {
    hcgp_step_free(s);
    return -1;
  }
  s->nnodes = nnodes;
  s->world = world;
  s->dist = dist;
  s->plane = dist == HCG_DIST_PLANE ? plane : 1;
  s->start[0] = 0;
  for (int i = 0; i < nnodes; i++) {
    int node = order ? order[i] : i;
    if (node < 0 || node >= nnodes || counts[node] < 1) {
      hcgp_step_free(s);
      return -1;
    }
    s->node_counts[i] = counts[i];
    s->counts[i] = s->sorted[i] = counts[node];
    s->start[i + 1] = s->start[i] + counts[node];
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

static int step_position(const struct hcgp_step *s, int rank);

int hcgp_step_node(const struct hcgp_step *s, int rank) {
  int at = step_position(s, rank);
  return at < 0 || !s->order ? at : s->order[at];
}

/* The position (in the order) of the node of a task. */
static int step_position(const struct hcgp_step *s, int rank) {
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

int hcgp_step_distribution(const char *s, const char *plane_size, int world,
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
      !hcgp_parse_digits(plane_size, strlen(plane_size), &p) && p >= 1 &&
      p <= world) {
    *dist = HCG_DIST_PLANE;
    *plane = (int)p;
    return 0;
  }
  return -1;
}
