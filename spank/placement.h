/*
 * placement.h - the placement check of one node, as slurmstepd runs it.
 * Pure C (no Slurm), so that the unit tests and the benchmark run the
 * plugin's own code; placement_slurm.c answers its questions with SPANK.
 *
 * A node knows only its own tasks: Slurm tells slurmstepd the global ids of
 * the node's tasks (S_JOB_LOCAL_TO_GLOBAL_ID) and whether a global id is
 * local (S_JOB_GLOBAL_TO_LOCAL_ID). For each of them, the group along every
 * intra-node dim either stays on this node or crosses to another. Cost:
 * O(local tasks x group size) lookups, whatever the world size.
 *
 * Where slurmstepd learns the step's NVLink domains (domains.h), the dims
 * of the domain list are checked the same way against domains, and left
 * off the node check: they may leave the node, not the domain.
 *
 * One line per step: each node that sees a crossing group picks, among
 * those it sees, the one with the smallest first member, and speaks only
 * when that member is its own. A crossing group has members on two nodes
 * or more, so on two nodes both see the same groups and exactly one
 * speaks; on more nodes, nodes that see disjoint sets of crossing groups
 * may each speak once (doc/plugin.md).
 */
#ifndef HCGP_PLACEMENT_H
#define HCGP_PLACEMENT_H

#include "hcg.h"

struct hcgp_node_check {
  int crossing;                  /* verdicts of local tasks that cross    */
  int speak;                     /* 1: this node prints the step's line    */
  hcg_placement_verdict example; /* the crossing group with the smallest
                                    first member this node sees           */
  int step; /* hcgp_domain_check: 1 a group of the step crosses (example is
               the step's first), 0 none does, -1 not looked for         */
};

/* The node's tasks: global ids local[0 .. nlocal-1]; on(arg, rank) is 0
 * for a rank of this node and -1 for any other. dims: the intra-node list.
 * HCG_OK, or an error of the core. */
int hcgp_node_check(const hcg_layout *layout, const char *dims,
                    const int *local, int nlocal, hcg_node_fn on, void *arg,
                    struct hcgp_node_check *out);

/* The same check at another level: where(warg, rank) is the level's id
 * (a domain) of any rank of the step, mine(marg, rank) >= 0 for a rank of
 * this node (who speaks: the node holding the example's first member). */
int hcgp_level_check(const hcg_layout *layout, const char *dims,
                     const int *local, int nlocal, hcg_node_fn where,
                     void *warg, hcg_node_fn mine, void *marg,
                     struct hcgp_node_check *out);

/* The check where `where` knows the level (a domain, or a node) of every
 * rank of the step (domains.h): hcgp_level_check, and the step's verdict:
 * whether any group of the step crosses (out->step), and the step's first
 * crossing group (dims in layout order, groups in order) as the example,
 * the same on every node, so that every node decides alike (a refusal
 * starts no task anywhere) and exactly one node speaks. Finding it costs
 * up to the listed dims' grid sizes in lookups, so only a task that needs
 * it looks: the one that may speak (may_speak: the node's first) when one
 * of its node's groups crosses and, with step_wide, every task (refuse);
 * past HCGP_FIRST_CROSSING_MAX
 * out->step is -1 and the node's own example and rule are kept. With
 * may_speak 0, speak is 0. */
#define HCGP_FIRST_CROSSING_MAX (1L << 24)
int hcgp_domain_check(const hcg_layout *layout, const char *dims,
                      const int *local, int nlocal, hcg_node_fn where,
                      void *warg, hcg_node_fn mine, void *marg, int may_speak,
                      int step_wide, struct hcgp_node_check *out);

/* The step's line, without the "hcg: " prefix: what crosses (named as
 * hcg_placement_message does, `here` naming this node), and what the
 * policy (enum hcgp_placement) does about it. */
void hcgp_placement_line(const hcg_layout *layout,
                         const struct hcgp_node_check *c, const char *here,
                         int policy, char *buf, size_t cap);

/* The step's line for a group crossing NVLink domains: the group, the
 * domains of example.apart (here, there: "block b1"), what the policy does
 * and, when suggestion is not NULL, hcg_placement_suggest's clause. */
void hcgp_domain_line(const hcg_layout *layout, const struct hcgp_node_check *c,
                      const char *here, const char *there, int policy,
                      const char *suggestion, char *buf, size_t cap);

#endif /* HCGP_PLACEMENT_H */
