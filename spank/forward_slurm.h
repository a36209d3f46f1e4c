/*
 * forward_slurm.h - the hand-over of the layout from srun to slurmstepd, on
 * Slurm's side (forward_slurm.c; the pure part is forward.h).
 */
#ifndef HCGP_FORWARD_SLURM_H
#define HCGP_FORWARD_SLURM_H

#include "hcg.h"
#include <slurm/spank.h>
#include <stdint.h>

/* srun: the step's value in srun's environment, which Slurm copies into
 * the step's: the layout, or the refusal. */
int hcgp_forward_set(uint32_t job, uint32_t step, const hcg_layout *layout);
int hcgp_forward_set_refusal(uint32_t job, uint32_t step);
/* srun: no value, so that an outer step's never reaches this one. */
void hcgp_forward_unset(void);
/* slurmstepd: the value srun forwarded (malloc'd), removed from the task's
 * environment; NULL when missing or unreadable (logged). */
char *hcgp_forward_take(spank_t sp);
/* slurmstepd: the same value removed, for a task without a layout. */
void hcgp_forward_unset_task(spank_t sp);
/* slurmstepd: srun's placement of the step (order.h) removed from the
 * task, once the step's domains are learnt. */
void hcgp_forward_unset_placement(spank_t sp);
/* slurmstepd: removes every HCG_* variable of the task that only the
 * plugin may set (hcgp_env_plugin_owned). */
int hcgp_forward_drop_inherited(spank_t sp);

/* Sets the task's variables (hcgp_task_setenv_fn, hcg_env_fn). A variable
 * it cannot set stops the walk with HCG_EENV, logged here: `failed` tells
 * the caller that this message, not the walk's hcg_error, says why. */
struct hcgp_setter {
  spank_t sp;
  int count;  /* variables set */
  int failed; /* a spank_setenv failed, and was logged */
};
int hcgp_setter_set(void *setter, const char *name, const char *value);

#endif /* HCGP_FORWARD_SLURM_H */
