/*
 * slurmstepd.c - slurmstepd: give each task its HCG_* variables.
 *
 * init registers the options and reads plugstack.conf; user_init learns
 * the step's NVLink domains and computes every local task's variables once
 * for the node's tasks; task_init sets a task's planned variables, or does
 * the rest itself.
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

#include "args_slurm.h"
#include "domains_slurm.h"
#include "forward.h"
#include "forward_slurm.h"
#include "hetstep_slurm.h"
#include "log.h"
#include "option.h"
#include "placement_slurm.h"
#include "slurmstepd.h"
#include "state.h"
#include "taskenv_slurm.h"

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

/* Ends a task whose layout srun has refused and explained. slurmstepd's
 * exec_task does _exit(1) itself after a failed task_init, but first logs
 * two lines per task ("task_init() failed", "Failed to invoke spank plugin
 * stack"): 24 lines for 12 tasks after srun's own message. Ending the task
 * here the same way leaves srun's one line per node ("tasks 0-11: Exited
 * with exit code 1"). */
static void end_refused_task(void) { _exit(1); }

/* The step's SLURM_NTASKS as srun set it, or NULL (see
 * hcgp_step_heterogeneous). */
static const char *step_ntasks(spank_t sp, char *buf, size_t cap) {
  return spank_getenv(sp, "SLURM_NTASKS", buf, (int)cap) == ESPANK_SUCCESS
             ? buf
             : NULL;
}

int hcgp_slurmstepd_init(spank_t sp, int ac, char **av) {
  /* The option must be known here too, or Slurm drops it from the launch
   * message; a failure is remembered and reported in task_init. */
  hcgp_args_load(ac, av, 0, "on this node");
  (void)hcgp_option_register(sp);
  return 0;
}

/* Runs once per step on each node, before the tasks are forked, so that
 * they inherit what it computes instead of each computing it again: the
 * step's domains (domains_slurm.c), the node's placement verdicts
 * (placement_slurm.h) and every local task's variables (taskenv_slurm.h),
 * for a plain step whose layout srun forwarded. A task that finds nothing
 * computes its own, and says what is wrong. Nothing here fails. */
int hcgp_slurmstepd_user_init(spank_t sp) {
  /* As step_wants_layout requires of a task: a plan spares a task them. */
  if (!hcgp_option_active() || !hcgp_state.registered || hcgp_state.conflict)
    return 0;
  int placement = hcgp_placement_policy() != HCGP_PLACEMENT_OFF;
  int nlocal = 0;
  int *local = hcgp_local_tasks(sp, &nlocal);
  if (placement && local && hcgp_state.args.intra_domain_dims[0])
    (void)hcgp_domains_learn(sp, local, nlocal);
  uint32_t job = 0, step = 0, world = 0;
  char ntasks[32];
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      step == SLURM_BATCH_SCRIPT || step == SLURM_EXTERN_CONT ||
      step == SLURM_INTERACTIVE_STEP || world < 1 ||
      hcgp_step_heterogeneous(step_ntasks(sp, ntasks, sizeof ntasks), world)) {
    free(local);
    return 0;
  }
  size_t cap = HCGP_FORWARD_MAX + 1;
  char *buf = malloc(cap);
  hcg_layout *layout = NULL;
  hcg_error err = HCG_ERROR_INIT;
  struct hcgp_task task = hcgp_task_of(job, step, world, 0);
  if (buf &&
      spank_getenv(sp, HCGP_FORWARD_ENV, buf, (int)cap) == ESPANK_SUCCESS &&
      !hcgp_forward_refused(buf, strlen(buf), job, step) &&
      hcgp_forward_layout(buf, strlen(buf), &task, &layout, &err) == HCG_OK) {
    if (placement)
      hcgp_placement_prepare(sp, layout, job, step);
    if (local)
      hcgp_taskenv_plan(sp, layout, &task, local, nlocal);
  }
  hcg_layout_free(layout);
  free(buf);
  free(local);
  return 0;
}

/* Whether a task of this step gets hcg's environment: 1 yes; 0 no (the
 * batch, extern and interactive steps, and a step without --hcg-layout,
 * which an outer step's layout must not leak into); -1 after logging an
 * error. */
static int step_wants_layout(spank_t sp, uint32_t *job, uint32_t *step) {
  if (spank_get_item(sp, S_JOB_ID, job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, step) != ESPANK_SUCCESS) {
    hcgp_log(HCGP_LOG_ERROR, "cannot tell which job step this task belongs to");
    return -1;
  }
  if (*step == SLURM_BATCH_SCRIPT || *step == SLURM_EXTERN_CONT ||
      *step == SLURM_INTERACTIVE_STEP)
    return 0;
  if (!hcgp_option_active()) {
    if (hcgp_forward_drop_inherited(sp))
      return -1;
    hcgp_forward_unset_task(sp);
    hcgp_forward_unset_placement(sp);
    return 0;
  }
  if (!hcgp_state.registered) {
    hcgp_log(HCGP_LOG_ERROR,
             "--hcg-layout could not be registered on this node; see "
             "the slurmd log");
    return -1;
  }
  if (hcgp_state.conflict) {
    hcgp_log(HCGP_LOG_ERROR,
             "--hcg-layout reached this node with two different values");
    return -1;
  }
  return 1;
}

/* A task of a plain (not heterogeneous) step: its variables from the
 * layout in buf, then the placement check. 0, or -1 when the task must not
 * run (logged). */
static int export_task(spank_t sp, const char *buf,
                       const struct hcgp_task *task,
                       struct hcgp_setter *setter) {
  hcg_layout *layout = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcgp_task_env_keep(buf, strlen(buf), task, hcgp_setter_set, setter,
                              &layout, &err);
  if (rc != HCG_OK) {
    /* A variable that could not be set was logged by the setter. */
    if (!setter->failed)
      hcgp_log(HCGP_LOG_ERROR,
               "task %" PRIu32 " of step %" PRIu32 ".%" PRIu32 ": %s",
               task->rank, task->job, task->step,
               err.message[0] ? err.message : hcg_strerror(rc));
    return -1;
  }
  enum hcgp_task_verdict verdict = hcgp_placement_task(sp, layout, task);
  hcg_layout_free(layout);
  hcgp_forward_unset_placement(sp);
  switch (verdict) {
  case HCGP_TASK_REFUSED:
    end_refused_task();
    return -1;
  case HCGP_TASK_FAILED:
    return -1;
  case HCGP_TASK_RUNS:
    break;
  }
  return 0;
}

/* task_init for a task not in the plan: all of it, from the step's
 * checks on. */
static int task_init_computed(spank_t sp) {
  uint32_t job = 0, step = 0, world = 0, rank = 0;
  int wants = step_wants_layout(sp, &job, &step);
  if (wants <= 0)
    return wants;
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS) {
    hcgp_log(HCGP_LOG_ERROR,
             "cannot get the task's rank and the step's task count");
    return -1;
  }
  struct hcgp_task task = hcgp_task_of(job, step, world, rank);
  char ntasks[32];
  int het =
      hcgp_step_heterogeneous(step_ntasks(sp, ntasks, sizeof ntasks), world);
  if (hcgp_forward_drop_inherited(sp))
    return -1;

  char *buf = hcgp_forward_take(sp);
  if (!buf)
    return -1;

  if (hcgp_forward_refused(buf, strlen(buf), job, step)) {
    /* srun has explained why; one line from the first task is enough. */
    if (rank == 0)
      hcgp_log(HCGP_LOG_ERROR,
               "srun refused the layout of this step; no task runs");
    free(buf);
    end_refused_task();
    return -1;
  }

  struct hcgp_setter setter = {sp, 0, 0};
  int rc;
  if (het) {
    /* hetstep.h: the ranks are the step's; one message per component. */
    hcgp_forward_unset_placement(sp);
    rc = hcgp_het_task_init(sp, buf, &task, &setter);
    if (rc)
      end_refused_task();
  } else {
    rc = export_task(sp, buf, &task, &setter);
  }
  free(buf);
  if (rc)
    return rc;
  /* Only now, with all the task allocated freed (taskenv.h). */
  int placement_failed = 0;
  if (hcgp_setter_flush(sp, &placement_failed))
    return -1;
  return placement_failed && hcgp_placement_failed() == HCGP_TASK_FAILED ? -1
                                                                         : 0;
}

int hcgp_slurmstepd_task_init(spank_t sp) {
  /* Planned in user_init (a plain step only): the task only sets its
   * variables, and touches nothing else. */
  int planned = hcgp_taskenv_apply(sp);
  if (planned)
    return planned < 0 ? -1 : 0;
  return task_init_computed(sp);
}
