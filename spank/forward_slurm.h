/*
 * forward_slurm.h - the hand-over of the layout from srun to slurmstepd, on
 * Slurm's side (forward_slurm.c; the pure part is forward.h).
 */
#ifndef HCGP_FORWARD_SLURM_H
#define HCGP_FORWARD_SLURM_H

#include "forward.h"
#include "hcg.h"
#include <slurm/spank.h>
#include <stdint.h>

#include "taskenv.h"

/* srun: the step's value in srun's environment, which Slurm copies into
 * the step's: the layout, or the refusal. */
int hcgp_forward_set(uint32_t job, uint32_t step, const hcg_layout *layout);
/* Task `rank` of step job.step of `world` tasks, with this host's
 * plugstack arguments (export_dims, max_layout_bytes, language=). */
struct hcgp_task hcgp_task_of(uint32_t job, uint32_t step, uint32_t world,
                              uint32_t rank);
/* srun, once the step's layout is forwarded: puts into srun's own
 * environment, which Slurm copies into the step's, the variables the tasks
 * of the layout's largest grid share (hcgp_env_grid_shared), after
 * removing every HCG_* variable only the plugin may set that srun
 * inherited. Each node keeps one only where its tasks compute it as it is,
 * and then none of those tasks sets it (taskenv.h): Slurm's spank_setenv is
 * what a task's variables cost. Nothing here can refuse the step: a
 * variable that is not set is set by each task. */
void hcgp_forward_share(const hcg_layout *layout, const struct hcgp_task *t);
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
/* The same, but for the entries ("NAME=VALUE") keep(entry, arg) keeps. */
int hcgp_forward_drop_inherited_but(spank_t sp,
                                    int (*keep)(const char *entry, void *arg),
                                    void *arg);

/* A task's variables (hcgp_task_setenv_fn, hcg_env_fn): recorded, and set
 * by hcgp_setter_flush once the task has freed what it allocated
 * (taskenv.h). A variable that cannot be set is logged here: `failed` tells
 * the caller that this message, not the walk's hcg_error, says why. */
struct hcgp_setter {
  spank_t sp;
  int failed;   /* a spank_setenv failed, and was logged */
  int optional; /* the placement check's: its failure fails the check */
};
int hcgp_setter_set(void *setter, const char *name, const char *value);
/* Sets what was recorded, the placement check's last: 0, or -1 when a
 * variable could not be set (logged); one of the placement check's sets
 * *optional_failed instead. */
int hcgp_setter_flush(spank_t sp, int *optional_failed);
/* Sets the records given (a plan's, taskenv.h) as hcgp_setter_flush does. */
HCGP_TASK_PATH int
hcgp_setter_set_records(spank_t sp, const struct hcgp_env_record *required,
                        const struct hcgp_env_record *optional,
                        int *optional_failed);
/* Planning in user_init: with `on`, a variable that does not fit fails
 * (the setter's `failed`, nothing logged) instead of being set. */
void hcgp_setter_record_only(int on);
/* What was recorded: the task's own variables, or (optional) the placement
 * check's. hcgp_setter_discard empties both and sets nothing. */
const struct hcgp_env_record *hcgp_setter_recorded(int optional);
void hcgp_setter_discard(void);

#endif /* HCGP_FORWARD_SLURM_H */
