/*
 * order_slurm.c - srun: where the step's tasks run, as Slurm decided it
 * (order.h), handed to slurmstepd in srun's environment, which Slurm
 * copies into the step's, beside the layout (forward_slurm.c).
 *
 * srun asks slurmctld for the step's layout (slurm_job_step_layout_get,
 * the layout slurmctld made and sent srun with the step) once the step
 * exists, in slurm_spank_local_user_init. The function is Slurm's own,
 * looked up in the srun process (libslurmfull), so that the plugin links
 * no Slurm library; where it is missing or fails, the value says why and
 * every node says the same. One RPC, only for a step whose placement check
 * looks at NVLink domains (plugstack's intra_domain_dims and placement).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <slurm/slurm.h>

#include "log.h"
#include "order.h"
#include "order_slurm.h"

typedef slurm_step_layout_t *(*layout_get_fn)(slurm_step_id_t *);
typedef void (*layout_free_fn)(slurm_step_layout_t *);

/* The text of the step's layout into buf; "!why" when it is not known. */
static void layout_text(uint32_t job, uint32_t step, char *buf, size_t cap) {
  char why[512];
  layout_get_fn get = (layout_get_fn)(uintptr_t)dlsym(
      RTLD_DEFAULT, "slurm_job_step_layout_get");
  layout_free_fn put = (layout_free_fn)(uintptr_t)dlsym(
      RTLD_DEFAULT, "slurm_job_step_layout_free");
  if (!get || !put) {
    snprintf(buf, cap,
             "!srun has no slurm_job_step_layout_get to read "
             "the step's layout with");
    return;
  }
  slurm_step_id_t id;
  memset(&id, 0, sizeof id);
  id.job_id = job;
  id.step_id = step;
  id.step_het_comp = NO_VAL;
  errno = 0;
  slurm_step_layout_t *l = get(&id);
  if (!l) {
    snprintf(buf, cap,
             "!srun could not read the step's layout from "
             "slurmctld (Slurm error %d)",
             errno);
    return;
  }
  int *counts = l->node_cnt >= 1 && l->node_cnt <= HCGP_STEP_NODES_MAX
                    ? malloc(sizeof *counts * l->node_cnt)
                    : NULL;
  int plane = (l->task_dist & SLURM_DIST_STATE_BASE) == SLURM_DIST_PLANE
                  ? (int)l->plane_size
                  : 0;
  if (!counts) {
    snprintf(buf, cap, "!srun cannot hold the step's layout of %u nodes",
             l->node_cnt);
  } else {
    for (uint32_t i = 0; i < l->node_cnt; i++)
      counts[i] = l->tasks ? (int)l->tasks[i] : 0;
    if (!l->tids || hcgp_order_encode((int)l->node_cnt, (int)l->task_cnt,
                                      counts, (const uint32_t *const *)l->tids,
                                      plane, buf, cap, why, sizeof why))
      snprintf(buf, cap, "!%s", l->tids ? why : "Slurm gave no task ids");
  }
  free(counts);
  put(l);
}

void hcgp_order_set(uint32_t job, uint32_t step) {
  char *text = malloc(HCGP_ORDER_MAX + 1);
  char *value = malloc(HCGP_ORDER_MAX + 64);
  if (text && value) {
    layout_text(job, step, text, HCGP_ORDER_MAX + 1);
    if (hcgp_order_value(job, step, text, value, HCGP_ORDER_MAX + 64) ||
        setenv(HCGP_ORDER_ENV, value, 1))
      unsetenv(HCGP_ORDER_ENV);
    else
      hcgp_log(HCGP_LOG_VERBOSE, "step %u.%u placed %.200s", job, step, text);
  }
  free(text);
  free(value);
}

void hcgp_order_unset(void) { unsetenv(HCGP_ORDER_ENV); }
