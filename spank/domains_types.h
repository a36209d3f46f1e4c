/*
 * domains_types.h - the data of a step's NVLink domains: what slurmstepd
 * read (struct hcgp_domain_input) and what is learnt from it (struct
 * hcgp_domains). domains.c builds the domains and topology.c fills their
 * blocks or switches from topology.conf; both include this header, which
 * declares no function, so neither depends on the other through it
 * (domains.h, which declares domains.c's functions, stays above topology.c).
 * domains.h says what each fact is and where it comes from.
 */
#ifndef HCGP_DOMAINS_TYPES_H
#define HCGP_DOMAINS_TYPES_H

#include <stddef.h>

#include "step.h"

#define HCGP_HOSTS_MAX (1L << 22)
/* topology.conf larger than this is not read. */
#define HCGP_TOPOLOGY_MAX_BYTES (8 << 20)

enum hcgp_topo { HCGP_TOPO_BLOCK = 1, HCGP_TOPO_TREE = 2 };

/* What slurmstepd read (domains_slurm.c); NULL for what is not set. */
struct hcgp_domain_input {
  const char *pattern, *addr; /* SLURM_TOPOLOGY_ADDR_PATTERN, _ADDR    */
  const char *nodelist;       /* SLURM_STEP_NODELIST                   */
  const char *tasks_per_node; /* SLURM_STEP_TASKS_PER_NODE             */
  const char *placement;      /* srun's text (order.h), or NULL        */
  long nnodes, nodeid, world; /* S_JOB_NNODES, S_JOB_NODEID, tasks     */
  const int *local;           /* this node's tasks (global ids)        */
  int nlocal;
  const char *topology; /* topology.conf's text, or NULL         */
  size_t topology_len;
  const char *topology_path;  /* its path, or NULL: not found          */
  const char *topology_error; /* why it was not found or not read      */
};

enum hcgp_domains_state {
  HCGP_DOMAINS_NONE = 0,    /* no topology: nothing checked, nothing said */
  HCGP_DOMAINS_KNOWN = 1,   /* every node of the step has a domain        */
  HCGP_DOMAINS_UNKNOWN = 2, /* not learnt: why says so                    */
};

struct hcgp_domains {
  int state;     /* enum hcgp_domains_state                         */
  int this_node; /* UNKNOWN: the reason is this node's own (its
                    address), not one every node finds               */
  char why[512]; /* UNKNOWN: one sentence, no prefix                 */
  int kind;      /* enum hcgp_topo                                   */
  int nodeid;    /* this node's index                                */
  struct hcgp_step step;
  int *node_domain; /* per node of the step: its domain's number        */
  char **domain;    /* per domain number: its name (block or switch)   */
  int ndomains;
};

#endif /* HCGP_DOMAINS_TYPES_H */
