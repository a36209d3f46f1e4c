/*
 * plugin.c - the entry points Slurm calls, dispatched by context and
 * nothing else, so that what runs where is obvious.
 *
 * Slurm loads the same object in srun (S_CTX_LOCAL), sbatch/salloc
 * (S_CTX_ALLOCATOR), slurmd (S_CTX_SLURMD) and slurmstepd (S_CTX_REMOTE).
 *
 * Failure policy (doc/interfaces.md section 4): where a person is
 * watching (srun, sbatch, salloc) every problem is an error and stops the
 * command. On a compute node a failing init, init_post_opt or user_init can
 * drain the node or take down every job step, so there the plugin only
 * logs, and refuses a bad job in slurm_spank_task_init, which fails just
 * that job's tasks.
 */
/*
 * The plugin's files. Every name in them is private to the plugin (prefix
 * hcgp_); spank_hcg.map exports only the slurm_spank_* entry points. Each
 * file has its own header (NAME.h) declaring what it offers the others.
 *
 * One process runs one context (srun, sbatch/salloc, slurmd or slurmstepd),
 * and Slurm calls a plugin from one thread at a time, so plain globals
 * suffice.
 *
 * The files. plugin.c only dispatches each entry point, by context, to the
 * context's file; the rest never calls back into it:
 *
 *   plugin.c      SPANK_PLUGIN and the slurm_spank_* entry points
 *   srun.c        srun: read @PATH, check against the task count, forward
 *   alloc.c       sbatch/salloc: read @PATH and pass the text to the job
 *   slurmd.c      slurmd: check plugstack.conf once, for the admin's log
 *   slurmstepd.c  slurmstepd: set each task's HCG_* variables
 *   init_failure.c  slurm_spank_init_failure_mode (Slurm 25.05 and later)
 *
 * What the contexts share: the options (option.c), the layout as srun,
 * sbatch and salloc read it (layout.c), the process's state (state.c) and
 * its messages (log.c). The rest comes in pairs: NAME.c and NAME.h are
 * pure C (no Slurm, in libhcgspank.la, unit tested and fuzzed) and
 * NAME_slurm.c is what Slurm gives them and does with their answers:
 *
 *   args       plugstack.conf arguments
 *   forward    srun -> slurmstepd hand-over of the layout, per task
 *   hetstep    heterogeneous steps, in srun and slurmstepd
 *   placement  a node's placement check, in slurmstepd
 *   order      where Slurm put the step's tasks: read by srun from
 *              slurmctld, handed on to slurmstepd (order_slurm.c)
 *   taskenv    each task's variables, waiting to be set: planned in
 *              slurmstepd's user_init for every local task, less those
 *              srun passed that it shares (forward_slurm.h), set in
 *              task_init
 *   domains    the step's nodes, tasks and NVLink domains, in slurmstepd
 *              (standing on hostlist.c, step.c, order.c and topology.c,
 *              pure too; domains_types.h, types and no function, is what
 *              domains.c and topology.c share, below both)
 *
 * Return values. A function that takes an hcg_error returns HCG_OK or an
 * HCG_E* code with it filled, and logs nothing: the core's convention,
 * which the pure parts follow too; its caller on the Slurm side logs the
 * error. Every other function that can fail, the entry points included,
 * returns 0, or -1 once it has logged why: Slurm's convention, so that a
 * failure is passed on with a plain `return -1` and said exactly once. A
 * callback handed to the core or to a pure part returns what its type asks
 * (hcg_env_fn: HCG_OK or an HCG_E* code); one that logs its own failure
 * says so in its state (struct hcgp_setter), so that its caller does not
 * log a second, vaguer line. The one three-way answer, the placement
 * check's, is an enum.
 */
#include "alloc.h"
#include "domains_slurm.h"
#include "slurmd.h"
#include "slurmstepd.h"
#include "srun.h"
#include "state.h"
#include "taskenv_slurm.h"

SPANK_PLUGIN(hcg, 1);

int slurm_spank_init(spank_t sp, int ac, char **av) {
  switch (spank_context()) {
  case S_CTX_LOCAL: /* srun */
    return hcgp_srun_init(sp, ac, av);
  case S_CTX_ALLOCATOR: /* sbatch, salloc */
    return hcgp_alloc_init(sp, ac, av);
  case S_CTX_REMOTE:
    return hcgp_slurmstepd_init(sp, ac, av);
  case S_CTX_SLURMD:
    return hcgp_slurmd_init(sp, ac, av);
  default:
    return 0;
  }
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  switch (spank_context()) {
  case S_CTX_LOCAL:
    return hcgp_srun_post_opt(sp);
  case S_CTX_ALLOCATOR:
    return hcgp_alloc_post_opt(sp);
  default:
    return 0;
  }
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  return spank_context() == S_CTX_LOCAL ? hcgp_srun_user_init(sp) : 0;
}

int slurm_spank_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  return spank_context() == S_CTX_REMOTE ? hcgp_slurmstepd_user_init(sp) : 0;
}

HCGP_TASK_PATH int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  return spank_context() == S_CTX_REMOTE ? hcgp_slurmstepd_task_init(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  hcgp_state_free();
  hcgp_domains_forget();
  hcgp_taskenv_forget();
  return 0;
}
