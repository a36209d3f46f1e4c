/*
 * slurmstepd.h - slurmstepd's calls (slurmstepd.c), dispatched by plugin.c.
 */
#ifndef HCGP_SLURMSTEPD_H
#define HCGP_SLURMSTEPD_H

#include <slurm/spank.h>

#include "taskenv.h"

int hcgp_slurmstepd_init(spank_t sp, int ac, char **av);
/* user_init (once per step, before the tasks): learns the step's domains
 * and plans every local task's variables for them. Never fails. */
int hcgp_slurmstepd_user_init(spank_t sp);
/* task_init: a planned task sets its variables and nothing else; any
 * other checks its step and computes its own. */
HCGP_TASK_PATH int hcgp_slurmstepd_task_init(spank_t sp);

#endif /* HCGP_SLURMSTEPD_H */
