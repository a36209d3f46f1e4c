/*
 * hetstep_slurm.h - heterogeneous steps on Slurm's side (hetstep_slurm.c;
 * the pure part is hetstep.h).
 */
#ifndef HCGP_HETSTEP_SLURM_H
#define HCGP_HETSTEP_SLURM_H

#include "forward.h"
#include "forward_slurm.h"
#include <slurm/spank.h>

/* srun init_post_opt, every call: forwards the layout to the components
 * after the first. */
int hcgp_het_post_opt(void);
/* srun user_init: 1 for a heterogeneous step, whose check srun leaves to
 * its slurmstepds (hetstep.h); else 0. */
int hcgp_het_srun_defers(spank_t sp);
/* slurmstepd task_init of a heterogeneous step: every variable of the
 * task's global rank through the setter; says why once per component. */
int hcgp_het_task_init(spank_t sp, const char *forwarded,
                       const struct hcgp_task *task,
                       struct hcgp_setter *setter);

#endif /* HCGP_HETSTEP_SLURM_H */
