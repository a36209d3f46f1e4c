/*
 * srun.c - srun: check the layout against the step's task count before any
 * task starts, and hand the canonical text to slurmstepd (see forward.h,
 * also for how a layout that does not fit is refused).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "forward_slurm.h"
#include "hetstep_slurm.h"
#include "layout.h"
#include "log.h"
#include "option.h"
#include "order_slurm.h"
#include "placement_slurm.h"
#include "srun.h"
#include "state.h"

/* The longest command line of srun read to tell whether it names a job;
 * a longer one is taken to name one. */
enum { CMDLINE_MAX = 1 << 20 };

/* 1 when srun's command line may name an existing job (--jobid), or
 * cannot be read. */
static int cmdline_attaches(void) {
  FILE *f = fopen("/proc/self/cmdline", "re");
  if (!f)
    return 1;
  char *buf = malloc(CMDLINE_MAX);
  size_t n = buf ? fread(buf, 1, CMDLINE_MAX, f) : 0;
  int attaches = !buf || ferror(f) || n == CMDLINE_MAX ||
                 hcgp_srun_cmdline_attaches(buf, n);
  free(buf);
  fclose(f);
  return attaches;
}

/* srun makes the job's allocation itself (it did not start inside a job
 * and was not given one), so it may fail a step (forward.h). */
static int srun_allocates;

int hcgp_srun_init(spank_t sp, int ac, char **av) {
  /* Before srun reads its options and asks for an allocation: srun makes
   * its own allocation unless it runs inside a job (SLURM_JOB_ID, which
   * batch scripts, salloc shells and tasks have) or is given one (--jobid).
   * This decides how a layout that does not fit is refused (forward.h). */
  srun_allocates =
      !getenv("SLURM_JOB_ID") && !getenv("SLURM_JOBID") && !cmdline_attaches();
  return hcgp_option_init(sp, ac, av);
}

/* Options are complete: read @PATH and check the syntax now, before srun
 * asks for an allocation. The task count comes later. */
int hcgp_srun_post_opt(spank_t sp) {
  (void)sp;
  return hcgp_layout_load() ? -1 : hcgp_het_post_opt();
}

/* Refuses the step whose layout does not fit, its reason printed: the
 * tasks will fail in task_init, and srun fails now if it made the job's
 * allocation (forward.h). */
static int refuse(uint32_t job, uint32_t step) {
  if (hcgp_forward_set_refusal(job, step))
    return -1;
  return srun_allocates ? -1 : 0;
}

int hcgp_srun_user_init(spank_t sp) {
  if (hcgp_het_srun_defers(sp))
    return 0; /* a heterogeneous step: see hetstep.h */
  /* A value inherited from an outer hcg step must never reach this step's
   * tasks, whatever happens next. */
  hcgp_forward_unset();
  hcgp_order_unset();
  if (!hcgp_option_active())
    return 0;

  uint32_t world = 0, job = 0, step = 0;
  if (spank_get_item(sp, S_JOB_ID, &job) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &step) != ESPANK_SUCCESS) {
    /* Cannot even name the step: failing is the only option left. */
    hcgp_log(HCGP_LOG_ERROR,
             "srun did not tell the job step; cannot forward the layout");
    return -1;
  }
  if (!hcgp_state.loaded && hcgp_layout_load())
    return refuse(job, step);
  if (spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      world == 0) {
    hcgp_log(HCGP_LOG_ERROR,
             "srun did not tell the step's task count; cannot check the "
             "layout, no task will run");
    return refuse(job, step);
  }
  if (world > HCG_MAX_WORLD) {
    hcgp_log(HCGP_LOG_ERROR,
             "the step has %" PRIu32 " tasks; a layout describes at most %d; "
             "no task will run",
             world, HCG_MAX_WORLD);
    return refuse(job, step);
  }

  hcg_layout *layout = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcgp_layout_parse((int)world, &layout, &err)) {
    hcgp_layout_log_error(&err);
    hcgp_log(HCGP_LOG_ERROR,
             "the layout does not fit this step of %" PRIu32
             " task%s; no task will run",
             world, world == 1 ? "" : "s");
    return refuse(job, step);
  }

  /* slurmstepd holds the canonical text to the site's limit (it cannot trust
   * the user's input length), so srun refuses here what it would refuse. */
  size_t clen = strlen(hcg_layout_text(layout));
  if (clen > hcgp_state.args.max_layout_bytes) {
    hcgp_log(HCGP_LOG_ERROR,
             "the layout spelled out in full (every offset and size explicit) "
             "is %zu bytes, longer than this site's max_layout_bytes=%zu; "
             "no task will run",
             clen, hcgp_state.args.max_layout_bytes);
    hcg_layout_free(layout);
    return refuse(job, step);
  }
  int rc = 0;
  struct hcgp_task task = hcgp_task_of(job, step, world, 0);
  if (hcgp_forward_set(job, step, layout))
    rc = refuse(job, step);
  else
    hcgp_forward_share(layout, &task);
  if (!rc && hcgp_placement_policy() != HCGP_PLACEMENT_OFF &&
      hcgp_state.args.intra_domain_dims[0])
    /* Where the tasks run, for the NVLink domain check (order.h). */
    hcgp_order_set(sp, job, step);
  if (!rc)
    hcgp_log(HCGP_LOG_VERBOSE,
             "step %" PRIu32 ".%" PRIu32 ", %" PRIu32 " tasks: %s", job, step,
             world, hcg_layout_text(layout));
  hcg_layout_free(layout);
  return rc;
}
