/*
 * forward_slurm.c - the hand-over of forward.h through the environment:
 * srun puts the step's value into its own environment, which Slurm copies
 * into the step's; slurmstepd takes it out of each task's environment,
 * with every HCG_* variable only the plugin may set, before it sets the
 * task's own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "forward_slurm.h"
#include "log.h"
#include "order.h"
#include "state.h"
#include "taskenv.h"

/* ---- srun ---------------------------------------------------------------- */

int hcgp_forward_set(uint32_t job, uint32_t step, const hcg_layout *layout) {
  char *value = NULL;
  hcg_error err = HCG_ERROR_INIT;
  const char *language = hcg_grid_name(layout, hcg_layout_language(layout));
  int rc = -1;
  if (hcgp_forward_encode(job, step, language, hcg_layout_text(layout), &value,
                          &err) != HCG_OK)
    hcgp_log_hcg_error(&err);
  else if (setenv(HCGP_FORWARD_ENV, value, 1) != 0)
    hcgp_log(HCGP_LOG_ERROR, "cannot set %s: %s; no task will run",
             HCGP_FORWARD_ENV, strerror(errno));
  else
    rc = 0;
  free(value);
  return rc;
}

int hcgp_forward_set_refusal(uint32_t job, uint32_t step) {
  char *value = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcgp_forward_refuse(job, step, &value, &err) != HCG_OK) {
    hcgp_log_hcg_error(&err);
    return -1;
  }
  /* Without the variable slurmstepd refuses the tasks as well. */
  (void)setenv(HCGP_FORWARD_ENV, value, 1);
  free(value);
  return 0;
}

struct hcgp_task hcgp_task_of(uint32_t job, uint32_t step, uint32_t world,
                              uint32_t rank) {
  return (struct hcgp_task){job,
                            step,
                            world,
                            rank,
                            hcgp_state.args.export_dims,
                            hcgp_state.args.max_layout_bytes,
                            hcgp_state.args.language};
}

static int set_grid_shared(void *arg, const char *name, const char *value) {
  (void)arg;
  if (hcgp_env_grid_shared(name))
    (void)setenv(name, value, 1);
  return HCG_OK;
}

void hcgp_forward_share(const hcg_layout *layout, const struct hcgp_task *t) {
  extern char **environ;
  /* Names first: unsetting changes the array. */
  size_t count = 0, n = 0;
  for (char **e = environ; e && *e; e++)
    count += (size_t)hcgp_env_plugin_owned(*e);
  char **names = count ? calloc(count, sizeof *names) : NULL;
  if (count && !names)
    return; /* the nodes drop them */
  for (char **e = environ; e && *e && n < count; e++)
    if (hcgp_env_plugin_owned(*e))
      names[n++] = strndup(*e, strcspn(*e, "="));
  for (size_t i = 0; i < n; i++) {
    if (names[i])
      (void)unsetenv(names[i]);
    free(names[i]);
  }
  free(names);
  struct hcgp_task common = *t;
  common.rank = hcgp_layout_common_rank(layout);
  (void)hcgp_layout_task_env(layout, &common, set_grid_shared, NULL);
}

void hcgp_forward_unset(void) { unsetenv(HCGP_FORWARD_ENV); }

/* ---- slurmstepd ---------------------------------------------------------- */

char *hcgp_forward_take(spank_t sp) {
  size_t cap = HCGP_FORWARD_MAX + 1;
  char *buf = malloc(cap);
  if (!buf) {
    hcgp_log(HCGP_LOG_ERROR, "out of memory for the layout");
    return NULL;
  }
  spank_err_t rc = spank_getenv(sp, HCGP_FORWARD_ENV, buf, (int)cap);
  hcgp_forward_unset_task(sp);
  if (rc == ESPANK_SUCCESS)
    return buf;
  if (rc == ESPANK_ENV_NOEXIST)
    hcgp_log(HCGP_LOG_ERROR,
             "srun did not forward the layout of --hcg-layout: is the "
             "hcg plugin in srun's plugstack.conf?");
  else
    hcgp_log(HCGP_LOG_ERROR, "cannot read %s: %s", HCGP_FORWARD_ENV,
             spank_strerror(rc));
  free(buf);
  return NULL;
}

void hcgp_forward_unset_task(spank_t sp) {
  (void)spank_unsetenv(sp, HCGP_FORWARD_ENV);
}

void hcgp_forward_unset_placement(spank_t sp) {
  (void)spank_unsetenv(sp, HCGP_ORDER_ENV);
}

/* Leftovers of an outer step, or a user's attempt to pose as another rank;
 * user settings such as HCG_TIMEOUT stay. Names are copied first because
 * unsetting changes the array. */
int hcgp_forward_drop_inherited(spank_t sp) {
  return hcgp_forward_drop_inherited_but(sp, NULL, NULL);
}

static int dropped(const char *entry, int (*keep)(const char *, void *),
                   void *arg) {
  return hcgp_env_plugin_owned(entry) && !(keep && keep(entry, arg));
}

int hcgp_forward_drop_inherited_but(spank_t sp,
                                    int (*keep)(const char *entry, void *arg),
                                    void *arg) {
  char **env = NULL;
  if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS || !env) {
    hcgp_log(HCGP_LOG_ERROR, "cannot read the task's environment to remove "
                             "stale HCG_* variables");
    return -1;
  }
  size_t count = 0;
  for (char **e = env; *e; e++)
    count += (size_t)dropped(*e, keep, arg);
  if (!count)
    return 0;
  char **names = calloc(count, sizeof *names);
  if (!names) {
    hcgp_log(HCGP_LOG_ERROR, "out of memory removing stale HCG_* variables");
    return -1;
  }
  size_t n = 0;
  int rc = 0;
  for (char **e = env; *e && n < count; e++)
    if (dropped(*e, keep, arg) && !(names[n++] = strndup(*e, strcspn(*e, "="))))
      rc = -1;
  for (size_t i = 0; i < n; i++) {
    if (names[i] && spank_unsetenv(sp, names[i]) != ESPANK_SUCCESS)
      rc = -1;
    free(names[i]);
  }
  free(names);
  if (rc)
    hcgp_log(HCGP_LOG_ERROR,
             "cannot remove the stale HCG_* variables of this task");
  return rc;
}

/* The task's own variables until hcgp_setter_flush, and the placement
 * check's: static, the forked task's own copy, untouched (and unpaid for)
 * until the task records. Room for the longest layout and the rest; more
 * is set at once. */
static char required_buf[2 * HCGP_FORWARD_MAX], optional_buf[HCGP_FORWARD_MAX];
static struct hcgp_env_record recorded[2] = {
    {required_buf, sizeof required_buf, 0},
    {optional_buf, sizeof optional_buf, 0}};

HCGP_TASK_PATH static int set_now(spank_t sp, const char *name,
                                  const char *value) {
  spank_err_t rc = spank_setenv(sp, name, value, 1);
  if (rc == ESPANK_SUCCESS)
    return 0;
  hcgp_log(HCGP_LOG_ERROR, "cannot set %s for the task: %s", name,
           spank_strerror(rc));
  return -1;
}

/* user_init planning (hcgp_setter_record_only): nothing may be set, for
 * there it would be set for every task. */
static int record_only;

/* Sets what r holds: 0, or -1 at the first failure. */
HCGP_TASK_PATH static int set_all(spank_t sp, const struct hcgp_env_record *r) {
  size_t at = 0;
  const char *name, *value;
  int rc = 0;
  while (!rc && (name = hcgp_env_record_next(r, &at, &value)))
    rc = set_now(sp, name, value);
  return rc;
}

/* Sets what r holds, and empties it: 0, or -1 at the first failure. */
static int set_recorded(spank_t sp, struct hcgp_env_record *r) {
  int rc = set_all(sp, r);
  r->used = 0;
  return rc;
}

int hcgp_setter_set_records(spank_t sp, const struct hcgp_env_record *required,
                            const struct hcgp_env_record *optional,
                            int *optional_failed) {
  if (set_all(sp, required))
    return -1;
  if (set_all(sp, optional))
    *optional_failed = 1;
  return 0;
}

int hcgp_setter_flush(spank_t sp, int *optional_failed) {
  int rc =
      hcgp_setter_set_records(sp, &recorded[0], &recorded[1], optional_failed);
  hcgp_setter_discard();
  return rc;
}

void hcgp_setter_record_only(int on) { record_only = on; }

const struct hcgp_env_record *hcgp_setter_recorded(int optional) {
  return &recorded[optional != 0];
}

void hcgp_setter_discard(void) { recorded[0].used = recorded[1].used = 0; }

int hcgp_setter_set(void *setter, const char *name, const char *value) {
  struct hcgp_setter *s = setter;
  struct hcgp_env_record *r = &recorded[s->optional != 0];
  if (hcgp_env_record_add(r, name, value) == HCG_OK)
    return HCG_OK;
  /* No room: in order, what was recorded, then this one; while planning,
   * the task computes its own instead. */
  if (record_only || set_recorded(s->sp, r) || set_now(s->sp, name, value)) {
    s->failed = 1;
    return HCG_EENV;
  }
  return HCG_OK;
}
