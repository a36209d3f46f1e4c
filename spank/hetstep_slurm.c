/*
 * hetstep_slurm.c - heterogeneous steps in srun and slurmstepd: the Slurm
 * side of hetstep.h, called from srun.c and slurmstepd.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "forward_slurm.h"
#include "hetstep.h"
#include "hetstep_slurm.h"
#include "log.h"
#include "option.h"
#include "state.h"

/* srun calls init_post_opt once per component: a second call means a
 * heterogeneous step, and what is set in the environment now reaches every
 * component (local_user_init's may not: hetstep.h). Done again for each
 * later component, whose options may change things; slurmstepd refuses a
 * step of more than two. */
int hcgp_het_post_opt(void) {
  static int calls;
  hcgp_state.component_cbs = 0; /* the next component's options follow */
  if (calls < HCGP_HET_COMPONENTS)
    calls++;
  if (calls < HCGP_HET_COMPONENTS)
    return 0;
  /* Never let an outer step's value reach a component. */
  hcgp_forward_unset();
  /* The first call loaded the layout before this component's options were
   * read: a different value given here is seen only now. */
  if (hcgp_state.given && hcgp_option_check())
    return -1;
  if (!hcgp_option_active() || !hcgp_state.loaded)
    return 0;
  char *value = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcgp_het_encode(hcgp_state.text, hcgp_state.text_len, &value, &err);
  if (rc)
    hcgp_log_hcg_error(&err);
  else if (setenv(HCGP_FORWARD_ENV, value, 1) != 0) {
    hcgp_log(HCGP_LOG_ERROR, "cannot set %s: %s", HCGP_FORWARD_ENV,
             strerror(errno));
    rc = -1;
  }
  free(value);
  return rc ? -1 : 0;
}

int hcgp_het_srun_defers(spank_t sp) {
  uint32_t world = 0;
  if (!hcgp_option_active() ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) != ESPANK_SUCCESS ||
      !hcgp_step_heterogeneous(getenv("SLURM_NTASKS"), world))
    return 0;
  /* Slurm calls this once, for whichever component's launch comes first,
   * and what it sets in the environment reaches some components and not
   * others: so nothing is set or removed here. Every component's
   * slurmstepd checks the whole step before its tasks run. */
  hcgp_log(HCGP_LOG_VERBOSE, "heterogeneous step: the layout is checked "
                             "by each component's slurmstepd");
  return 1;
}

/* A variable of the task, read as slurmstepd set it; NULL if missing. */
static const char *task_var(spank_t sp, const char *name, char *buf,
                            size_t cap) {
  return spank_getenv(sp, name, buf, (int)cap) == ESPANK_SUCCESS ? buf : NULL;
}

int hcgp_het_task_init(spank_t sp, const char *forwarded,
                       const struct hcgp_task *task,
                       struct hcgp_setter *setter) {
  char procid[32], ntasks[32], het_size[32];
  struct hcgp_het_task t = {
      *task, task_var(sp, "SLURM_PROCID", procid, sizeof procid),
      task_var(sp, "SLURM_NTASKS", ntasks, sizeof ntasks),
      task_var(sp, "SLURM_HET_SIZE", het_size, sizeof het_size)};
  hcg_error err = HCG_ERROR_INIT;
  int first = 0;
  int rc = hcgp_het_task_env(forwarded, strlen(forwarded), &t, hcgp_setter_set,
                             setter, &first, &err);
  /* Every component refuses on its own, so each says why once: the
   * reasons may differ between nodes (their plugstack.conf). A variable
   * that could not be set was logged by the setter. */
  if (rc && !setter->failed && first)
    hcgp_log(HCGP_LOG_ERROR, "no task of this component runs: %s",
             err.message[0] ? err.message : hcg_strerror(rc));
  return rc ? -1 : 0;
}
