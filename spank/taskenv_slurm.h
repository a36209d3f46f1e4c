/*
 * taskenv_slurm.h - slurmstepd plans its tasks' variables before it forks
 * them (taskenv_slurm.c; the plan itself is taskenv.h).
 */
#ifndef HCGP_TASKENV_SLURM_H
#define HCGP_TASKENV_SLURM_H

#include "forward.h"
#include "hcg.h"
#include "taskenv.h"
#include <slurm/spank.h>

/* user_init, for a plain step with --hcg-layout whose layout L srun
 * forwarded (t: the step's task, any rank): computes each local task's
 * variables and placement verdict (local[lid] is its global rank). A task
 * goes into the plan only when it runs and computing it said nothing; any
 * other computes its own in task_init, where what it says reaches the
 * user. With a plan, the HCG_* variables the step inherited are dropped
 * from its environment (hcgp_forward_drop_inherited) for all its tasks,
 * and when every local task is in it, so are the variables srun forwarded,
 * which no task then reads. Fails nothing. */
void hcgp_taskenv_plan(spank_t sp, const hcg_layout *L,
                       const struct hcgp_task *t, const int *local, int nlocal);
/* task_init, first of all: sets the task's planned variables (and removes
 * the forwarded ones where user_init left them). 1 when it did (the task
 * runs), 0 when there is no plan or the task is not in it (nothing done:
 * the task checks its step, drops what it inherited and computes its own),
 * -1 when the task must not start (logged). A plan exists only for a step
 * that passed the checks task_init would make (slurmstepd.c), so a planned
 * task reads nothing else. */
HCGP_TASK_PATH int hcgp_taskenv_apply(spank_t sp);
/* The end of the step: the plan unmapped. */
void hcgp_taskenv_forget(void);

#endif /* HCGP_TASKENV_SLURM_H */
