/*
 * alloc.c - sbatch and salloc: the option is checked here (file read as
 * the user, grammar checked) and passed on to every srun of the job.
 *
 * Slurm already passes the option on: it stores the argument in the job's
 * SPANK environment as HCGP_OPTION_ENV, which the batch script (or the salloc
 * shell) sees as SLURM_SPANK_<that name>, and srun takes it from there as if
 * given on its command line. For @PATH that argument is the path, which an
 * srun on a compute node would read again, perhaps in another directory,
 * perhaps after the file changed or from a disk it cannot see. So, for
 * @PATH only, the stored argument is replaced by the text read here. The
 * task count of each srun is not known yet: srun checks it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "layout.h"
#include "log.h"
#include "option.h"
#include "state.h"

int hcgp_alloc_init(spank_t sp, int ac, char **av) {
  return hcgp_option_init(sp, ac, av);
}

int hcgp_alloc_post_opt(spank_t sp) {
  if (!hcgp_option_active())
    return 0;
  if (hcgp_layout_load())
    return -1;
  if (hcgp_state.value[0] != '@')
    return 0;

  /* Slurm copied the argument into both places before calling post_opt:
   * the job's SPANK environment, and our own environment (which sbatch
   * copies into the job's environment). Overwrite both. */
  spank_err_t rc =
      spank_job_control_setenv(sp, HCGP_OPTION_ENV, hcgp_state.text, 1);
  if (rc != ESPANK_SUCCESS) {
    hcgp_log(HCGP_LOG_ERROR, "cannot pass the layout to the job: %s",
             spank_strerror(rc));
    return -1;
  }
  if (setenv(HCGP_OPTION_ENV, hcgp_state.text, 1) != 0) {
    hcgp_log(HCGP_LOG_ERROR, "cannot pass the layout to the job: %s",
             strerror(errno));
    return -1;
  }
  return 0;
}
