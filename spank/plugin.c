/*
 * plugin.c - the entry points Slurm calls, dispatched by context and
 * nothing else, so that what runs where is obvious (see plugin.h).
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
#include "plugin.h"

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

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  return spank_context() == S_CTX_REMOTE ? hcgp_slurmstepd_task_init(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  hcgp_state_free();
  return 0;
}
