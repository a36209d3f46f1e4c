/*
 * plugin.c - the entry points Slurm calls, dispatched by context.
 *
 * Slurm loads the same object in srun (local), sbatch/salloc (allocator),
 * slurmd and slurmstepd (remote). Each slurm_spank_* function below only
 * decides which file handles the call, so that what runs where is obvious.
 *
 * Failure policy (INTERFACES.md section 4): where a person is watching (srun,
 * sbatch, salloc) every problem is an error and stops the command. On a
 * compute node a failing init, init_post_opt or user_init can drain the node
 * or take down every job step, so there the plugin only logs, and refuses a
 * bad job in slurm_spank_task_init, which fails just that job's tasks.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin.h"

SPANK_PLUGIN(hcg, 1);

struct hcg_state hcg_state;

void hcg_log_error(const char *message) {
  slurm_error(HCG_LOG_PREFIX "%s", message);
}

void hcg_log_hcg_error(const hcg_error *err) {
  if (err->message[0])
    hcg_log_error(err->message);
  else
    hcg_log_error(hcg_strerror(err->code));
}

static void report_strict(void *arg, const char *message) {
  (void)arg;
  hcg_log_error(message);
}

static void report_lenient(void *arg, const char *message) {
  const char *where = arg;
  slurm_error(HCG_LOG_PREFIX "%s (ignored %s; the default is used)", message,
              where);
}

static void load_args(int ac, char **av, int strict, const char *where) {
  hcg_args_defaults(&hcg_state.args);
  hcg_state.args_bad =
      hcg_args_parse(&hcg_state.args, ac, av,
                     strict ? report_strict : report_lenient, (void *)where);
}

int slurm_spank_init(spank_t sp, int ac, char **av) {
  switch (spank_context()) {
  case S_CTX_LOCAL:
  case S_CTX_ALLOCATOR:
    load_args(ac, av, 1, NULL);
    if (hcg_state.args_bad)
      return -1;
    return hcg_option_register(sp);
  case S_CTX_REMOTE:
    /* The option must be known here too, or Slurm drops it from the launch
     * message; a failure is remembered and reported in task_init. */
    load_args(ac, av, 0, "on this node");
    (void)hcg_option_register(sp);
    return 0;
  case S_CTX_SLURMD:
    /* slurmd loads the stack once at start: the place where an admin reads
     * about a broken plugstack.conf line in slurmd's log. */
    load_args(ac, av, 0, "by slurmd");
    return 0;
  default:
    return 0;
  }
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  switch (spank_context()) {
  case S_CTX_LOCAL:
    /* Options are complete: read @PATH and check the syntax now, before srun
     * asks for an allocation. The task count comes later. */
    return hcg_local_load(sp);
  case S_CTX_ALLOCATOR:
    return hcg_allocator_post_opt(sp);
  default:
    return 0;
  }
}

int slurm_spank_local_user_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_LOCAL)
    return 0;
  return hcg_local_user_init(sp);
}

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  (void)ac;
  (void)av;
  if (spank_context() != S_CTX_REMOTE)
    return 0;
  return hcg_remote_task_init(sp);
}

int slurm_spank_exit(spank_t sp, int ac, char **av) {
  (void)sp;
  (void)ac;
  (void)av;
  hcg_state_free();
  return 0;
}
