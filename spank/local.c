/*
 * local.c - srun: read the layout as the user, check it against the step's
 * task count before any task starts, and hand the canonical text to
 * slurmstepd (see forward.h).
 *
 * srun runs as the user, so reading @PATH here reads exactly the files the
 * user may read. hcg_local_load is also used by sbatch and salloc.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "plugin.h"

/* Prints a layout error, and where the bound comes from when it is one. */
static void log_layout_error(const hcg_error *err) {
  hcg_log_hcg_error(err);
  if (err->code == HCG_ELIMIT && strstr(err->message, "the limit is"))
    slurm_error(HCG_LOG_PREFIX "the site's limit is max_layout_bytes=%zu in "
                               "plugstack.conf",
                hcg_state.args.max_layout_bytes);
}

static hcg_layout_config layout_config(int world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  cfg.language = hcg_state.args.language[0] ? hcg_state.args.language : NULL;
  cfg.max_bytes = hcg_state.args.max_layout_bytes;
  /* The text of an @PATH file was read once, here: name the file in
   * messages about it. */
  if (hcg_state.value && hcg_state.value[0] == '@')
    cfg.source_name = hcg_state.value + 1;
  return cfg;
}

int hcg_local_load(spank_t sp) {
  (void)sp;
  /* srun runs post_opt once per heterogeneous component: load once. */
  if (hcg_state.loaded || !hcg_option_active())
    return 0;
  if (hcg_option_check())
    return -1;

  hcg_error err = HCG_ERROR_INIT;
  const char *v = hcg_state.value;
  char *text = NULL;
  size_t len = 0;
  if (v[0] == '@') {
    if (hcg_layout_read_file(v + 1, hcg_state.args.max_layout_bytes, &text,
                             &len, &err)) {
      log_layout_error(&err);
      return -1;
    }
  } else {
    len = hcg_state.value_len;
    text = malloc(len + 1);
    if (!text) {
      hcg_log_error("out of memory for the layout");
      return -1;
    }
    memcpy(text, v, len + 1);
  }

  /* Without the task count only grammar and hard bounds can be judged;
   * everything that depends on the world waits for local_user_init. */
  hcg_layout_config cfg = layout_config(0);
  hcg_layout *layout = NULL;
  int rc = hcg_layout_parse(text, len, &cfg, &layout, &err);
  hcg_layout_free(layout);
  if (rc == HCG_ESYNTAX || rc == HCG_ELIMIT || rc == HCG_ENOMEM) {
    log_layout_error(&err);
    free(text);
    return -1;
  }
  hcg_state.text = text;
  hcg_state.text_len = len;
  hcg_state.loaded = 1;
  return 0;
}

/* Makes every task of the step fail before the user's program starts (see
 * forward.h for why srun must not simply fail here). The reason has been
 * printed already. */
static int refuse(uint32_t job, uint32_t step) {
  char *value = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcg_forward_refuse(job, step, &value, &err)) {
    hcg_log_hcg_error(&err);
    return -1;
  }
  /* Without the variable slurmstepd refuses the tasks as well. */
  (void)setenv(HCG_FORWARD_ENV, value, 1);
  free(value);
  return 0;
}

int hcg_local_user_init(spank_t sp) {
  /* A value inherited from an outer hcg step must never reach this step's
   * tasks, whatever happens next. */
  unsetenv(HCG_FORWARD_ENV);
  if (!hcg_option_active())
    return 0;

  uint32_t world = 0, job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
    /* Cannot even name the step: failing is the only option left. */
    hcg_log_error("srun did not tell the job step; cannot forward the layout");
    return -1;
  }
  if (!hcg_state.loaded && hcg_local_load(sp))
    return refuse(job, step);
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      world == 0) {
    hcg_log_error("srun did not tell the step's task count; cannot check the "
                  "layout, no task will run");
    return refuse(job, step);
  }
  if (hcg_step_heterogeneous(getenv("SLURM_NTASKS"), world)) {
    hcg_log_error("heterogeneous steps are not supported yet; no task will "
                  "run (give --hcg-layout to a step of one component only)");
    return refuse(job, step);
  }
  if (world > HCG_MAX_WORLD) {
    slurm_error(HCG_LOG_PREFIX "the step has %" PRIu32 " tasks; a layout "
                               "describes at most %d; no task will run",
                world, HCG_MAX_WORLD);
    return refuse(job, step);
  }

  hcg_layout_config cfg = layout_config((int)world);
  hcg_layout *layout = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcg_layout_parse(hcg_state.text, hcg_state.text_len, &cfg, &layout,
                       &err)) {
    log_layout_error(&err);
    slurm_error(HCG_LOG_PREFIX "the layout does not fit this step of %" PRIu32
                               " task%s; no task will run",
                world, world == 1 ? "" : "s");
    return refuse(job, step);
  }

  char *value = NULL;
  const char *language = hcg_grid_name(layout, hcg_layout_language(layout));
  int rc = hcg_forward_encode(job, step, language, hcg_layout_text(layout),
                              &value, &err);
  if (rc) {
    hcg_log_hcg_error(&err);
    rc = refuse(job, step);
  } else if (setenv(HCG_FORWARD_ENV, value, 1) != 0) {
    slurm_error(HCG_LOG_PREFIX "cannot set %s: %s; no task will run",
                HCG_FORWARD_ENV, strerror(errno));
    rc = refuse(job, step);
  } else {
    slurm_verbose(HCG_LOG_PREFIX "step %" PRIu32 ".%" PRIu32 ", %" PRIu32
                                 " tasks: %s",
                  job, step, world, hcg_layout_text(layout));
  }
  free(value);
  hcg_layout_free(layout);
  return rc;
}
