/*
 * taskenv_slurm.c - slurmstepd computes every local task's variables once,
 * in user_init, so that each forked task only sets its own (taskenv.h says
 * why that matters: what a task costs is the pages it touches).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

/* The plugin's variables in the step's environment, for hcgp_plan_share:
 * entry[0..n) those whose name it holds once (a name held twice leaves,
 * every entry of it), keep[i] the verdict on entry[i]. */
struct held {
  const char **entry;
  unsigned char *keep;
  size_t n;
};

static int held_kept(const char *entry, void *arg) {
  const struct held *h = arg;
  for (size_t i = 0; i < h->n; i++)
    if (h->entry[i] == entry)
      return h->keep[i];
  return 0;
}

static int same_name(const char *a, const char *b) {
  size_t n = strcspn(a, "=");
  return n == strcspn(b, "=") && !strncmp(a, b, n);
}

/* The step's environment once the plan is made: a variable of the plugin
 * that some planned task has as it is stays (srun put there those most
 * tasks share; the plan says which tasks remove or replace it); every
 * other leaves, once, instead of from each task's copy. 0, or -1 when the
 * environment cannot be read or changed (the caller then drops the plan). */
static int share_held(spank_t sp, struct hcgp_plan **p) {
  char **env = NULL;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env)
    return -1;
  size_t owned = 0;
  for (char **e = env; *e; e++)
    owned += (size_t)hcgp_env_plugin_owned(*e);
  if (!owned)
    return 0;
  if (owned > HCGP_PLAN_HELD_MAX)
    return hcgp_forward_drop_inherited(sp);
  struct held h = {calloc(owned, sizeof *h.entry), calloc(owned, 1), 0};
  if (!h.entry || !h.keep) {
    free(h.entry);
    free(h.keep);
    return hcgp_forward_drop_inherited(sp);
  }
  for (char **e = env; *e; e++)
    if (hcgp_env_plugin_owned(*e))
      h.entry[h.n++] = *e;
  /* A name held twice is no candidate, so every entry of it leaves (keep
   * marks them first): O(n^2), n bounded above. */
  for (size_t i = 0; i < h.n; i++)
    for (size_t j = 0; j < h.n && !h.keep[i]; j++)
      h.keep[i] = j != i && same_name(h.entry[i], h.entry[j]);
  size_t once = 0;
  for (size_t i = 0; i < h.n; i++)
    if (!h.keep[i])
      h.entry[once++] = h.entry[i];
  h.n = once;
  if (hcgp_plan_share(p, h.entry, h.n, h.keep) != HCG_OK)
    memset(h.keep, 0, h.n); /* the plan as it was: every one leaves */
  int rc = hcgp_forward_drop_inherited_but(sp, held_kept, &h);
  free(h.entry);
  free(h.keep);
  return rc;
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
    int in = plannable(sp, L, &task, lid);
    /* Read once recorded; nothing to unset yet (share_held). */
    struct hcgp_plan_entry e = {
        {NULL, 0, 0}, *hcgp_setter_recorded(0), *hcgp_setter_recorded(1)};
    if (!in || hcgp_plan_put(&p, lid, task.rank, &e) != HCG_OK)
      all = 0;
    hcgp_setter_discard();
  }
  hcgp_setter_record_only(0);
  /* Where this fails, each task computes its own and drops what it
   * inherited itself, and says so if it cannot. */
  hcgp_log_hold();
  int dropped = share_held(sp, &p) == 0;
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
  struct hcgp_plan_entry e;
  int found = spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
              spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS &&
              spank_get_item(sp, S_TASK_ID, &lid) == ESPANK_SUCCESS &&
              spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) == ESPANK_SUCCESS &&
              hcgp_plan_get(planned.plan, job, step, lid, rank, &e);
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
  size_t at = 0;
  const char *name, *value;
  while ((name = hcgp_env_record_next(&e.unset, &at, &value)))
    if (spank_unsetenv(sp, name) != ESPANK_SUCCESS) {
      hcgp_log(HCGP_LOG_ERROR, "cannot remove %s from the task", name);
      return -1;
    }
  int optional_failed = 0;
  if (hcgp_setter_set_records(sp, &e.required, &e.optional, &optional_failed))
    return -1;
  return optional_failed && hcgp_placement_failed() == HCGP_TASK_FAILED ? -1
                                                                        : 1;
}

void hcgp_taskenv_forget(void) {
  hcgp_plan_free(planned.plan);
  planned.plan = NULL;
  planned.forward_dropped = 0;
}
