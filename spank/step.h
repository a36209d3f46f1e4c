/*
 * step.h - where the tasks of a step run, as Slurm's step layout places
 * them: the task counts per node (SLURM_STEP_TASKS_PER_NODE) and the
 * distribution (block: consecutive; cyclic and plane: dealt to the nodes
 * with room left). Pure C (no Slurm).
 */
#ifndef HCGP_STEP_H
#define HCGP_STEP_H

/* Most nodes in a step hcg models. */
#define HCGP_STEP_NODES_MAX (1 << 20)

/* SLURM_STEP_TASKS_PER_NODE ("2(x3),1") into counts[0 .. nnodes-1], each
 * at least 1; 0, or -1 when it does not give exactly nnodes counts. */
int hcgp_tasks_per_node(const char *s, int nnodes, int *counts);

/* Where the tasks of a step run: counts per node and Slurm's distribution
 * (HCG_DIST_BLOCK, HCG_DIST_CYCLIC, HCG_DIST_PLANE with plane tasks). */
struct hcgp_step {
  int nnodes, world;
  int dist, plane;
  int *counts;           /* nnodes, in the order of `order` */
  int *order;            /* position -> node; NULL: the nodes' own order */
  int *node_counts;      /* nnodes, by node */
  long long *start;      /* nnodes + 1: block's first task of each node */
  int *sorted;           /* the counts, ascending */
  long long *sorted_sum; /* nnodes + 1: sums of the smallest counts */
};
/* 0, or -1 (no memory, or counts not summing to world). */
int hcgp_step_init(struct hcgp_step *s, const int *counts, int nnodes,
                   int world, int dist, int plane);
/* The same over the nodes taken in `order` (a permutation of 0 ..
 * nnodes-1, NULL for their own order): the distribution deals to order[0]
 * first; counts are by node. */
int hcgp_step_init_order(struct hcgp_step *s, const int *counts, int nnodes,
                         int world, int dist, int plane, const int *order);
void hcgp_step_free(struct hcgp_step *s);
/* The node (0 .. nnodes-1) of a task; -1 outside. O(log nodes), or
 * O(nodes) in the last rounds of cyclic and plane over uneven counts. */
int hcgp_step_node(const struct hcgp_step *s, int rank);

/* The distribution of SLURM_DISTRIBUTION's first word ("block",
 * "cyclic:fcyclic", "plane" with SLURM_DIST_PLANESIZE, "pack", ...) into
 * *dist (enum hcg_distribution) and *plane; -1 for arbitrary or a word
 * hcg does not model. */
int hcgp_step_distribution(const char *s, const char *plane_size, int world,
                           int *dist, int *plane);

#endif /* HCGP_STEP_H */
