/*
 * taskenv_slurm.c - slurmstepd computes every local task's variables once,
 * in user_init, so that each forked task only sets its own (taskenv.h says
 * why that matters: what a task costs is the pages it touches).
 */
#include <inttypes.h>
#include <stdint.h>

#include "forward.h"
#include "forward_slurm.h"
#include "log.h"
#include "placement_slurm.h"
#include "taskenv.h"
#include "taskenv_slurm.h"

/* Side by side: a planned task reads these and nothing else of the
 * plugin's data. */
static struct {
  struct hcgp_plan *plan;
  int forward_dropped; /* HCGP_FORWARD_ENV and HCGP_ORDER_ENV: gone */
} planned;

/* Computes task t (local id lid) as its task_init would: 1 when it runs,
 * with its variables recorded, and said nothing. */
static int plannable(spank_t sp, const hcg_layout *L, const struct hcgp_task *t,
                     int lid) {
  struct hcgp_setter setter = {sp, 0, 0};
  hcgp_log_hold();
  hcgp_placement_plan_for(lid);
  int runs = hcgp_layout_task_env(L, t, hcgp_setter_set, &setter) == HCG_OK &&
             hcgp_placement_task(sp, L, t) == HCGP_TASK_RUNS;
  hcgp_placement_plan_for(-1);
  unsigned said = hcgp_log_release();
  return runs && !said;
}

void hcgp_taskenv_plan(spank_t sp, const hcg_layout *L,
                       const struct hcgp_task *t, const int *local,
                       int nlocal) {
  hcgp_taskenv_forget();
  struct hcgp_plan *p = hcgp_plan_new(t->job, t->step, nlocal);
  if (!p)
    return;
  int all = 1;
  hcgp_setter_record_only(1);
  for (int lid = 0; lid < nlocal; lid++) {
    struct hcgp_task task = *t;
    task.rank = (uint32_t)local[lid];
    if (!plannable(sp, L, &task, lid) ||
        hcgp_plan_put(&p, lid, task.rank, hcgp_setter_recorded(0),
                      hcgp_setter_recorded(1)) != HCG_OK)
      all = 0;
    hcgp_setter_discard();
  }
  hcgp_setter_record_only(0);
  /* The HCG_* variables srun passed on leave the step's environment here,
   * once, instead of from each task's copy; where that fails, each task
   * computes its own and drops them itself, and says so if it cannot. */
  hcgp_log_hold();
  int dropped = hcgp_forward_drop_inherited(sp) == 0;
  hcgp_log_release();
  if (!dropped) {
    hcgp_plan_free(p);
    return;
  }
  /* No task reads what srun forwarded when all are planned: it leaves the
   * step's environment here too, so that no task removes it itself. */
  if (all) {
    hcgp_forward_unset_task(sp);
    hcgp_forward_unset_placement(sp);
  }
  planned.plan = p;
  planned.forward_dropped = all;
}

int hcgp_taskenv_apply(spank_t sp) {
  if (!planned.plan)
    return 0;
  uint32_t job = 0, step = 0, rank = 0;
  int lid = -1;
  struct hcgp_env_record required, optional;
  int found =
      spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
      spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
      spank_get_item(sp, S_TASK_ID, &lid) == ESPANK_SUCCESS &&
      spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS &&
      hcgp_plan_get(planned.plan, job, step, lid, rank, &required, &optional);
  if (!found) {
    if (!planned.forward_dropped)
      return 0;
    /* Every local task was planned, and what it would compute its own
     * from is gone: Slurm's view of this task changed since user_init. */
    hcgp_log(HCGP_LOG_ERROR,
             "task %" PRIu32 " (local %d) of step %" PRIu32 ".%" PRIu32
             " is not among the tasks this node planned for",
             rank, lid, job, step);
    return -1;
  }
  if (!planned.forward_dropped) {
    hcgp_forward_unset_task(sp);
    hcgp_forward_unset_placement(sp);
  }
  int optional_failed = 0;
  if (hcgp_setter_set_records(sp, &required, &optional, &optional_failed))
    return -1;
  return optional_failed && hcgp_placement_failed() == HCGP_TASK_FAILED ? -1
                                                                        : 1;
}

void hcgp_taskenv_forget(void) {
  hcgp_plan_free(planned.plan);
  planned.plan = NULL;
  planned.forward_dropped = 0;
}
