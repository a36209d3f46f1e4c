/*
 * placement_slurm.h - a node's placement check on Slurm's side
 * (placement_slurm.c; the pure part is placement.h).
 */
#ifndef HCGP_PLACEMENT_SLURM_H
#define HCGP_PLACEMENT_SLURM_H

#include "forward.h"
#include "hcg.h"
#include <slurm/spank.h>

/* The policy in force: --hcg-placement, else plugstack placement=. */
int hcgp_placement_policy(void);
/* The node's tasks by global id (malloc'd); NULL when Slurm does not say. */
int *hcgp_local_tasks(spank_t sp, int *n);
/* What the placement check decides for a task. */
enum hcgp_task_verdict {
  HCGP_TASK_RUNS,    /* the task runs (a warning may have been printed)  */
  HCGP_TASK_REFUSED, /* the policy refuses the step, and said why        */
  HCGP_TASK_FAILED,  /* the check failed under refuse (logged)           */
};
enum hcgp_task_verdict hcgp_placement_task(spank_t sp, const hcg_layout *L,
                                           const struct hcgp_task *t);
/* hcgp_placement_task in user_init, for local task lid (-1 to end): the
 * task's id does not come from Slurm there. */
void hcgp_placement_plan_for(int lid);
/* A placement variable could not be set (logged): says the check failed,
 * and fails the task under refuse only. */
enum hcgp_task_verdict hcgp_placement_failed(void);
/* slurmstepd, once per step before the tasks are forked
 * (slurm_spank_user_init): the node's verdicts on the layout, which every
 * task then inherits instead of computing them again (each is O(local
 * tasks x groups)); hcgp_placement_task computes them where this did not
 * run. */
void hcgp_placement_prepare(spank_t sp, const hcg_layout *L, uint32_t job,
                            uint32_t step);

#endif /* HCGP_PLACEMENT_SLURM_H */
