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
 * looks at NVLink domains (plugstack's intra_domain_dims and placement) on
 * a cluster with a topology (srun's own configuration), and only where
 * srun's Slurm is the one the plugin was built for (Slurm's structures
 * change between releases).
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <slurm/slurm.h>
#include <slurm/slurm_version.h>
#include <slurm/spank.h>

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

/* Whether srun runs the Slurm (major.minor) whose slurm.h the plugin was
 * built with: the layout and configuration structures are read by that
 * header's definition. */
static int same_slurm(spank_t sp) {
  char *major = NULL, *minor = NULL;
  long a, b;
  char *end;
  if (spank_get_item(sp, S_SLURM_VERSION_MAJOR, &major) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_SLURM_VERSION_MINOR, &minor) != ESPANK_SUCCESS ||
      !major || !minor)
    return 0;
  a = strtol(major, &end, 10);
  if (*end)
    return 0;
  b = strtol(minor, &end, 10);
  return !*end && a == SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER) &&
         b == SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER);
}

/* Whether srun's configuration names no topology with domains: no
 * TopologyPlugin (or flat, default, none) and no topology.yaml beside
 * slurm.conf. Then no node has a domain and no layout is read (an RPC
 * the step would pay for nothing). Unknown: 0. */
static int no_topology(void) {
  const slurm_conf_t *conf =
      (const slurm_conf_t *)dlsym(RTLD_DEFAULT, "slurm_conf");
  if (!conf || !conf->slurm_conf || conf->slurm_conf[0] != '/')
    return 0;
  const char *t = conf->topology_plugin;
  if (t && t[0] && strcmp(t, "topology/flat") &&
      strcmp(t, "topology/default") && strcmp(t, "topology/none") &&
      strcmp(t, "default") && strcmp(t, "none"))
    return 0;
  const char *slash = strrchr(conf->slurm_conf, '/');
  size_t dir = (size_t)(slash - conf->slurm_conf) + 1;
  char path[4096];
  struct stat st;
  if (dir + sizeof "topology.yaml" > sizeof path)
    return 0;
  memcpy(path, conf->slurm_conf, dir);
  memcpy(path + dir, "topology.yaml", sizeof "topology.yaml");
  return stat(path, &st) != 0 && errno == ENOENT;
}

void hcgp_order_set(spank_t sp, uint32_t job, uint32_t step) {
  int same = same_slurm(sp);
  if (same && no_topology())
    return; /* nothing to tell: slurmstepd finds no domains */
  char *text = malloc(HCGP_ORDER_MAX + 1);
  char *value = malloc(HCGP_ORDER_MAX + 64);
  if (text && value) {
    if (same)
      layout_text(job, step, text, HCGP_ORDER_MAX + 1);
    else
      snprintf(text, HCGP_ORDER_MAX + 1,
               "!srun's Slurm is not the %d.%d the hcg plugin was built for",
               SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER),
               SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER));
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
