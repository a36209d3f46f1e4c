/*
 * slurmstepd.c - slurmstepd: give each task its HCG_* variables.
 *
 * task_init runs in the forked task, as the user, just before exec. It is
 * the one remote callback allowed to fail (the task then fails to start,
 * the node stays up); every other remote callback only logs.
 *
 * Nothing here opens a file: the layout comes as canonical text from srun
 * through HCGP_FORWARD_ENV (see forward.h). The option's own argument, which
 * may be an @PATH, only tells whether the user asked for a layout.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "forward.h"
#include "plugin.h"

/* Special steps, from slurm.h (not included: the plugin needs spank.h
 * only). Their values are part of Slurm's protocol. */
#ifndef SLURM_EXTERN_CONT
#define SLURM_EXTERN_CONT (0xfffffffc)
#endif
#ifndef SLURM_BATCH_SCRIPT
#define SLURM_BATCH_SCRIPT (0xfffffffb)
#endif
#ifndef SLURM_INTERACTIVE_STEP
#define SLURM_INTERACTIVE_STEP (0xfffffffa)
#endif

struct setter {
  spank_t sp;
  int count;
};

static int set_var(void *arg, const char *name, const char *value) {
  struct setter *s = arg;
  spank_err_t rc = spank_setenv(s->sp, name, value, 1);
  if (rc != ESPANK_SUCCESS) {
    slurm_error(HCGP_LOG_PREFIX "cannot set %s for the task: %s", name,
                spank_strerror(rc));
    return -1;
  }
  s->count++;
  return 0;
}

/* Ends a task whose layout srun has refused and explained. slurmstepd's
 * exec_task does _exit(1) itself after a failed task_init, but first logs
 * two lines per task ("task_init() failed", "Failed to invoke spank plugin
 * stack"): 24 lines for 12 tasks after srun's own message. Ending the task
 * here the same way leaves srun's one line per node ("tasks 0-11: Exited
 * with exit code 1"). The unit tests, which call task_init in their own
 * process, define hcgp_test_task_exit to see the exit instead. */
extern void hcgp_test_task_exit(int status) __attribute__((weak));

static void end_refused_task(void) {
  if (hcgp_test_task_exit) {
    hcgp_test_task_exit(1);
    return;
  }
  _exit(1);
}

/* The step's SLURM_NTASKS as srun set it, or NULL (see
 * hcgp_step_heterogeneous). */
static const char *step_ntasks(spank_t sp, char *buf, size_t cap) {
  return spank_getenv(sp, "SLURM_NTASKS", buf, (int)cap) == ESPANK_SUCCESS
             ? buf
             : NULL;
}

/* Removes every HCG_* variable the task inherited that only the plugin may
 * set (hcgp_env_plugin_owned): leftovers of an outer step, or a user's
 * attempt to pose as another rank. User settings such as HCG_TIMEOUT stay.
 * Names are copied first because unsetting changes the array. */
static int drop_inherited(spank_t sp) {
  char **env = NULL;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env) {
    hcgp_log_error("cannot read the task's environment to remove stale HCG_* "
                   "variables");
    return -1;
  }
  size_t count = 0;
  for (char **e = env; *e; e++)
    count += (size_t)hcgp_env_plugin_owned(*e);
  if (!count)
    return 0;
  char **names = calloc(count, sizeof *names);
  if (!names) {
    hcgp_log_error("out of memory removing stale HCG_* variables");
    return -1;
  }
  size_t n = 0;
  int rc = 0;
  for (char **e = env; *e && n < count; e++)
    if (hcgp_env_plugin_owned(*e) &&
        !(names[n++] = strndup(*e, strcspn(*e, "="))))
      rc = -1;
  for (size_t i = 0; i < n; i++) {
    if (names[i] && spank_unsetenv(sp, names[i]) != ESPANK_SUCCESS)
      rc = -1;
    free(names[i]);
  }
  free(names);
  if (rc)
    hcgp_log_error("cannot remove the stale HCG_* variables of this task");
  return rc;
}

int hcgp_slurmstepd_init(spank_t sp, int ac, char **av) {
  /* The option must be known here too, or Slurm drops it from the launch
   * message; a failure is remembered and reported in task_init. */
  hcgp_load_args(ac, av, 0, "on this node");
  (void)hcgp_option_register(sp);
  return 0;
}

int hcgp_slurmstepd_task_init(spank_t sp) {
  uint32_t job = 0, step = 0, world = 0, rank = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
    hcgp_log_error("cannot tell which job step this task belongs to");
    return -1;
  }
  if (step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT ||
      step == SLURM_INTERACTIVE_STEP)
    return 0;

  if (drop_inherited(sp))
    return -1;
  if (!hcgp_option_active()) {
    /* Never let an outer step's layout leak into a step without one. */
    (void)spank_unsetenv(sp, HCGP_FORWARD_ENV);
    return 0;
  }
  if (!hcgp_state.registered) {
    hcgp_log_error("--hcg-layout could not be registered on this node; see "
                   "the slurmd log");
    return -1;
  }
  if (hcgp_state.conflict) {
    hcgp_log_error("--hcg-layout reached this node with two different values");
    return -1;
  }
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) {
    hcgp_log_error("cannot get the task's rank and the step's task count");
    return -1;
  }
  char ntasks[32];
  int het =
      hcgp_step_heterogeneous(step_ntasks(sp, ntasks, sizeof ntasks), world);

  size_t cap = HCGP_FORWARD_MAX + 1;
  char *buf = malloc(cap);
  if (!buf) {
    hcgp_log_error("out of memory for the layout");
    return -1;
  }
  spank_err_t erc = spank_getenv(sp, HCGP_FORWARD_ENV, buf, (int)cap);
  (void)spank_unsetenv(sp, HCGP_FORWARD_ENV);
  if (erc != ESPANK_SUCCESS) {
    if (erc == ESPANK_ENV_NOEXIST)
      hcgp_log_error("srun did not forward the layout of --hcg-layout: is the "
                     "hcg plugin in srun's plugstack.conf?");
    else
      slurm_error(HCGP_LOG_PREFIX "cannot read %s: %s", HCGP_FORWARD_ENV,
                  spank_strerror(erc));
    free(buf);
    return -1;
  }

  if (hcgp_forward_refused(buf, strlen(buf), job, step)) {
    /* srun has explained why; one line from the first task is enough. */
    if (rank == 0)
      hcgp_log_error("srun refused the layout of this step; no task runs");
    free(buf);
    end_refused_task();
    return -1;
  }

  struct hcgp_task task = {job,
                           step,
                           world,
                           rank,
                           hcgp_state.args.export_dims,
                           hcgp_state.args.max_layout_bytes,
                           hcgp_state.args.language};
  hcg_error err = HCG_ERROR_INIT;
  struct setter setter = {sp, 0};
  if (het) {
    /* hetstep.h: the ranks are the step's; one message per component. */
    int hrc = hcgp_het_task_init(sp, buf, &task, set_var, &setter);
    free(buf);
    if (hrc)
      end_refused_task();
    return hrc;
  }
  hcg_layout *layout = NULL;
  int rc = hcgp_task_env_keep(buf, strlen(buf), &task, set_var, &setter,
                              &layout, &err);
  if (rc == 0) {
    int placed = hcgp_stepd_placement(sp, layout, &task);
    hcg_layout_free(layout);
    if (placed > 0) {
      free(buf);
      end_refused_task();
      return -1;
    }
    rc = placed ? -1 : 0;
  }
  if (rc == 0)
    slurm_verbose(HCGP_LOG_PREFIX "task %" PRIu32 " of step %" PRIu32
                                  ".%" PRIu32 ": %d variables",
                  rank, job, step, setter.count);
  else if (rc > 0)
    slurm_error(
        HCGP_LOG_PREFIX "task %" PRIu32 " of step %" PRIu32 ".%" PRIu32 ": %s",
        rank, job, step, err.message[0] ? err.message : hcg_strerror(rc));
  free(buf);
  return rc ? -1 : 0;
}
