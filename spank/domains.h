/*
 * domains.h - the NVLink domains of a step's nodes, and where each task of
 * the step runs, as slurmstepd learns them. Pure C (no Slurm), so that the
 * unit tests, the fuzz target and the plugin run the same code;
 * domains_slurm.c gathers what it reads from Slurm.
 *
 * A node's slurmstepd knows its own tasks and its own topology address
 * (SLURM_TOPOLOGY_ADDR, set by slurmstepd itself from slurmd's topology
 * plugin). For the other nodes of the step it reads:
 *   - the step's nodes in Slurm's node order (SLURM_STEP_NODELIST) and
 *     their task counts (SLURM_STEP_TASKS_PER_NODE), which srun sets for
 *     every step, and where srun says Slurm put the step's tasks
 *     (order.h: the distribution over an order of the nodes, which srun
 *     read from Slurm's own layout of the step; Slurm 26.05 deals block
 *     in topology order, and nothing else in the step says so). The same
 *     facts reach every node, so every node learns the same. They must
 *     put exactly this node's own tasks (S_JOB_LOCAL_TO_GLOBAL_ID) on this
 *     node (S_JOB_NODEID), and the node list must count S_JOB_NNODES
 *     nodes with this node's name where its S_JOB_NODEID says, or nothing
 *     is checked;
 *   - topology.conf beside slurmstepd's own SLURM_CONF (the file Slurm's
 *     topology plugins read; slurmd sets SLURM_CONF for slurmstepd, the
 *     user cannot): the blocks (topology/block: BlockName=B Nodes=...) or
 *     the leaf switches (topology/tree: SwitchName=S Nodes=...) of the
 *     step's nodes. It must agree with this node's SLURM_TOPOLOGY_ADDR,
 *     or nothing is checked.
 * A node's domain is its block, or its leaf switch. What cannot be learnt
 * is said in one sentence (why) and nothing is checked; a cluster whose
 * address pattern is plain "node" (no topology plugin) has no domains and
 * nothing is said.
 *
 * Bounds: at most HCGP_STEP_NODES_MAX nodes, names of HCGP_NODE_NAME_MAX
 * bytes, HCGP_HOSTS_MAX names expanded from topology.conf; every number is
 * parsed with its range checked.
 *
 * The structs and bounds are in domains_types.h, below this header and
 * topology.h alike: topology.c fills a struct hcgp_domains without using
 * anything of domains.c.
 */
#ifndef HCGP_DOMAINS_H
#define HCGP_DOMAINS_H

#include <stddef.h>

#include "domains_types.h"
#include "hcg.h"
#include "hostlist.h"

/* Learns the domains from in; never fails otherwise than by saying why
 * (state UNKNOWN, or NONE). Free with hcgp_domains_free. */
void hcgp_domains_build(struct hcgp_domains *d,
                        const struct hcgp_domain_input *in);
void hcgp_domains_free(struct hcgp_domains *d);

/* hcg_node_fn's: the node of a task, and its domain (-1 when unknown). */
int hcgp_domains_node_of(void *domains, int rank);
int hcgp_domains_domain_of(void *domains, int rank);
/* "block b1", "switch s2" (at most cap bytes). */
void hcgp_domains_name(const struct hcgp_domains *d, int domain, char *buf,
                       size_t cap);

/* The suggestion of the step's line (hcg_placement_suggest) for a layout
 * whose groups cross, over the step's own nodes and domains, offering
 * block, cyclic and plane=S (S the crossing group's size) over the same
 * task counts, each under the node order Slurm gives it: cyclic and plane
 * the nodes' own order; block the order the step shows where it is block,
 * else both the nodes' own order and topology order (domains in
 * topology.conf's order, Slurm 26.05's rule unless CR_NO_DIST_TOPO_BLOCK),
 * since the step cannot tell which: block is offered only where it keeps
 * every group inside under both. Returns hcg_placement_suggest's answer. */
int hcgp_domains_suggest(const struct hcgp_domains *d, const hcg_layout *L,
                         const char *node_dims, const char *domain_dims,
                         int group_size, char *buf, size_t cap);

#endif /* HCGP_DOMAINS_H */
