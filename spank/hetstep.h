/*
 * hetstep.h - heterogeneous steps (srun A : B, sbatch hetjob + srun
 * --het-group): what srun and slurmstepd decide about them. Pure C (no
 * Slurm), so the unit tests run exactly the plugin's code.
 *
 * What Slurm 22.05 gives the plugin (found by experiment, doc/plugin.md):
 *   - A SPANK option belongs to the whole srun, not to a component: given in
 *     any component (or several times with one value) every component's
 *     slurmstepd sees it. Two different values are refused (option.c).
 *   - srun calls init_post_opt once per component, then local_user_init
 *     once, for whichever component's launch thread comes first: its
 *     S_JOB_ID and S_JOB_TOTAL_TASK_COUNT are that component's, and what it
 *     puts into srun's environment reaches that component, maybe others,
 *     maybe not (a race). What srun sets in init_post_opt reaches them all.
 *   - slurmstepd of component c has its own job id (S_JOB_ID), the
 *     component's task count (S_JOB_TOTAL_TASK_COUNT) and rank within the
 *     component (S_TASK_GLOBAL_ID); before task_init it sets the task's
 *     SLURM_PROCID (the step's global rank, the PMIx rank under --mpi=pmix),
 *     SLURM_NTASKS (the step's task count) and SLURM_HET_SIZE, replacing
 *     whatever the user exported.
 * So the ranks of a layout are the step's global ranks; srun puts the layout
 * text it read into the environment in init_post_opt ("hcg1:het:TEXT"), and
 * each component's slurmstepd checks the whole step before any of its tasks
 * runs: two components, whose ranks it derives from what it knows itself, the
 * layout fitting the step, no grid straddling them. Only two components: a
 * slurmstepd knows where its own component lies and the step's size, which
 * determines the other component only when there is one.
 */
#ifndef HCGP_HETSTEP_H
#define HCGP_HETSTEP_H

#include <stddef.h>
#include <stdint.h>

#include "forward.h"
#include "hcg.h"

/* The one number of components a layout may span. */
#define HCGP_HET_COMPONENTS 2

/* Every grid lies inside one component or spans whole components. The
 * step's ranks are [0, world); component 0 holds [0, first), component 1
 * [first, world). Fails with HCG_ELAYOUT and a message that names the grid,
 * its ranks and both components' ranks. */
int hcgp_het_check(const hcg_layout *layout, uint32_t first, uint32_t world,
                   hcg_error *err);

/* srun, init_post_opt: the value for every component, "hcg1:het:TEXT"
 * with the layout text srun read (malloc'ed into *out). */
int hcgp_het_encode(const char *text, size_t len, char **out, hcg_error *err);

/* One task of a heterogeneous step as slurmstepd sees it. The strings are
 * the task's SLURM_PROCID, SLURM_NTASKS and SLURM_HET_SIZE as slurmstepd
 * set them (NULL when missing). */
struct hcgp_het_task {
  struct hcgp_task task; /* job, step, policy; world and rank: the
                            component's (S_JOB_TOTAL_TASK_COUNT,
                            S_TASK_GLOBAL_ID)                         */
  const char *procid, *ntasks, *het_size;
};

/* What hcgp_task_env does for a task of a heterogeneous step: checks that
 * the numbers agree with each other (the component lies inside the step,
 * two components), that the value is srun's "het" value, that the layout
 * fits the whole step and respects the components, then calls fn
 * for every variable of the task's global rank. *first_task is set to 1
 * when this task is the first of its component (to print once). */
int hcgp_het_task_env(const char *forwarded, size_t len,
                      const struct hcgp_het_task *t, hcgp_task_setenv_fn fn,
                      void *arg, int *first_task, hcg_error *err);

#endif /* HCGP_HETSTEP_H */
