/*
 * placement.h - the placement check of one node, as slurmstepd runs it.
 * Pure C (no Slurm), so that the unit tests and the benchmark run the
 * plugin's own code; stepd_placement.c answers its questions with SPANK.
 *
 * A node knows only its own tasks: Slurm tells slurmstepd the global ids of
 * the node's tasks (S_JOB_LOCAL_TO_GLOBAL_ID) and whether a global id is
 * local (S_JOB_GLOBAL_TO_LOCAL_ID). For each of them, the group along every
 * intra-node dim either stays on this node or crosses to another. Cost:
 * O(local tasks x group size) lookups, whatever the world size.
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
};

/* The node's tasks: global ids local[0 .. nlocal-1]; on(arg, rank) is 0
 * for a rank of this node and -1 for any other. dims: the intra-node list.
 * HCG_OK, or an error of the core. */
int hcgp_node_check(const hcg_layout *layout, const char *dims,
                    const int *local, int nlocal, hcg_node_fn on, void *arg,
                    struct hcgp_node_check *out);

/* The step's line, without the "hcg: " prefix: what crosses (named as
 * hcg_placement_message does, `here` naming this node), and what the
 * policy (enum hcgp_placement) does about it. */
void hcgp_placement_line(const hcg_layout *layout,
                         const struct hcgp_node_check *c, const char *here,
                         int policy, char *buf, size_t cap);

#endif /* HCGP_PLACEMENT_H */
