/*
 * hcg_placement.h - where ranks run: nodes, domains above them, and
 * whether a rank's groups stay inside them.
 *
 * Part of the core. Include hcg.h.
 */
#ifndef HCG_PLACEMENT_H
#define HCG_PLACEMENT_H

#include "hcg_env.h"
#include "hcg_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Placement: which node each rank runs on, and whether a rank's group along
 * a dim lies inside one node (NVLink) or crosses nodes. One check,
 * hcg_rank_placement, asks a callback for "the node of a rank": the plugin
 * answers from Slurm's task layout, `hcg check --nodes` from a modelled
 * distribution, so both give the same verdicts (doc/plugin.md, "Placement").
 */

/* The dims checked by default: Megatron's groups that want NVLink. */
#define HCG_PLACEMENT_DEFAULT_DIMS "tp,cp,ep,expt_tp"

/* Slurm's task distributions over nodes (srun --distribution). */
enum hcg_distribution {
  HCG_DIST_BLOCK = 0,  /* consecutive ranks fill a node, then the next */
  HCG_DIST_CYCLIC = 1, /* rank r on node r mod nodes */
  HCG_DIST_PLANE = 2   /* blocks of `plane` ranks dealt round-robin */
};

/* A modelled placement of `world` ranks on `nodes` nodes. */
typedef struct hcg_placement {
  int world, nodes;
  int tasks_per_node; /* 0: Slurm's even spread over `nodes` (block puts
                         the extra ranks on the first nodes); else nodes
                         are filled with this many (block) */
  int distribution;   /* enum hcg_distribution */
  int plane;          /* HCG_DIST_PLANE: ranks per block */
} hcg_placement;

/* Builds a placement from the CLI's words: exactly one of nodes and
 * tasks_per_node > 0 (the other 0), distribution "block", "cyclic",
 * "plane=P" or NULL (block). HCG_EINVAL with a message otherwise. */
int hcg_placement_make(int world, int nodes, int tasks_per_node,
                       const char *distribution, hcg_placement *out,
                       hcg_error *err);
/* The node (0 .. nodes-1) of a rank, O(1); -1 for a rank outside. */
int hcg_placement_node(const hcg_placement *p, int rank);

/* 1 when `name` is in the comma-separated list `dims` (NULL: the default
 * list). hcg_placement_dims_valid checks a list: names, no empty item. */
int hcg_placement_dim_listed(const char *dims, const char *name);
int hcg_placement_dims_valid(const char *dims);

/* The node of a rank as the caller knows it: a node id >= 0, or -1 for
 * "not on the node I am checking" (slurmstepd knows only its own node). */
typedef int (*hcg_node_fn)(void *arg, int rank);

/* One verdict: the rank's group along one dim, and whether its members
 * all answer the same node >= 0 (local 1) or not (local 0, with two
 * members on different nodes, or off the checked node, in `apart`). */
typedef struct hcg_placement_verdict {
  int grid, view, dim;
  int local;
  hcg_group group;
  int apart[2];
} hcg_placement_verdict;
typedef int (*hcg_placement_fn)(void *arg, const hcg_placement_verdict *v);

/* For every grid holding `rank`, every view, and every dim of it listed
 * in `dims` (NULL: the default; dims a view shares with its base are
 * checked once, in the base), calls fn with the verdict on the rank's group
 * along that dim. O(listed dims x group size) calls of node. A non-zero
 * return from fn stops the walk and is returned. */
int hcg_rank_placement(const hcg_layout *layout, int rank, const char *dims,
                       hcg_node_fn node, void *node_arg, hcg_placement_fn fn,
                       void *arg);

/* Whether all members of a group answer one node >= 0 (1) or not (0;
 * apart, if not NULL, gets two members that differ). O(group size). */
int hcg_group_on_one_node(const hcg_layout *layout, const hcg_group *group,
                          hcg_node_fn node, void *node_arg, int apart[2]);

/* The sentence of a verdict that is not local, the same in srun's warning
 * and in `hcg check`: "grid 'llm', dim 'tp': group [0,1,2,3] spans
 * NODE_A (rank 1) and NODE_B (rank 2)". node_a and node_b name the nodes
 * of apart[0] and apart[1]. Writes at most cap bytes, NUL included. */
void hcg_placement_message(const hcg_layout *layout,
                           const hcg_placement_verdict *v, const char *node_a,
                           const char *node_b, char *buf, size_t cap);

/* The variable of a verdict: HCG_<GRID>[_<VIEW>]_<DIM>_LOCAL, value 1 or
 * 0 (scope HCG_ENV_PLACEMENT). Calls fn once per verdict of
 * hcg_rank_placement, in its order. */
int hcg_rank_placement_env(const hcg_layout *layout, int rank, const char *dims,
                           hcg_node_fn node, void *node_arg, hcg_env_fn fn,
                           void *arg);

/* ---------------------------------------------------------------------------
 * Domains above the node: sets of nodes that share one fast fabric (an
 * NVL72 rack, a topology/block block, a leaf switch). The check is
 * hcg_rank_placement asked for "the domain of a rank". Where domains are
 * known, a dim on the domain list is judged at the domain level only
 * (doc/plugin.md, "NVLink domains").
 */

/* The dims checked against domains by default: the expert all-to-all. A
 * site with NVL72 tensor parallelism adds tp. */
#define HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS "ep,expt_tp"

/* The modelled domain of a rank when every domain_size consecutive nodes
 * form a domain (the last may hold fewer): node / domain_size. -1 for a
 * rank outside the world or domain_size < 1. O(1). */
int hcg_placement_domain(const hcg_placement *p, int domain_size, int rank);

/* The dims judged at the node level when domains are known: the names of
 * node_dims (NULL: HCG_PLACEMENT_DEFAULT_DIMS) not in domain_dims (NULL:
 * HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS), comma-separated, into out ("" when
 * none is left; an empty list checks nothing). HCG_ELIMIT when cap is too
 * small, HCG_EINVAL for a NULL out. */
int hcg_placement_node_level_dims(const char *node_dims,
                                  const char *domain_dims, char *out,
                                  size_t cap);

/* The variable of a domain verdict: HCG_<GRID>[_<VIEW>]_<DIM>_DOMAIN_LOCAL,
 * 1 when the rank's group along the dim lies inside one domain, 0 when it
 * crosses domains (scope HCG_ENV_PLACEMENT). Calls fn once per verdict of
 * hcg_rank_placement(dims, domain) (dims NULL: the domain default). */
int hcg_rank_domain_env(const hcg_layout *layout, int rank, const char *dims,
                        hcg_node_fn domain, void *domain_arg, hcg_env_fn fn,
                        void *arg);

/* Every group of one dim of a grid's view, checked with `where` (a node or
 * a domain of a rank): the number of groups, how many are not inside one
 * (*crossing, may be NULL) and the first of those (*example, may be NULL;
 * its `local` is 1 when none crosses). O(grid size) calls of where.
 * Returns the number of groups, or -HCG_EINVAL for a bad argument. */
int hcg_dim_placement(const hcg_layout *layout, int grid, int view, int dim,
                      hcg_node_fn where, void *where_arg, int *crossing,
                      hcg_placement_verdict *example);

/* Where every rank runs: its node and, when domain is not NULL, its
 * domain. */
typedef struct hcg_placement_where {
  hcg_node_fn node;
  void *node_arg;
  hcg_node_fn domain; /* NULL: no domains; only nodes are checked */
  void *domain_arg;
} hcg_placement_where;

/* Another task placement the caller can offer, e.g. "--distribution=cyclic"
 * and where the ranks would then run. */
typedef struct hcg_placement_alt {
  const char *name;
  hcg_placement_where where;
} hcg_placement_alt;

/* A suggestion for a layout whose groups cross their level (node or domain)
 * under the placement `now`: tried first with one crossing dim moved earlier
 * in its order (faster varying; the layout parsed again), then with each of
 * `alts`; one clause into buf ("put ep before dp, as in 'tp=2,ep=4,dp=2';
 * or --distribution=cyclic"). Returns 1 with one, 0 when nothing crosses or
 * nothing tried helps (buf says so), HCG_ELIMIT past about 2^25 lookups of
 * where, HCG_ENOMEM, HCG_EINVAL. */
int hcg_placement_suggest(const hcg_layout *layout, const char *node_dims,
                          const char *domain_dims,
                          const hcg_placement_where *now,
                          const hcg_placement_alt *alts, int nalts, char *buf,
                          size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* HCG_PLACEMENT_H */
