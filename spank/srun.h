/*
 * srun.h - srun's calls (srun.c), dispatched by plugin.c.
 */
#ifndef HCGP_SRUN_H
#define HCGP_SRUN_H

#include <slurm/spank.h>

/* init: notes whether srun makes the job's allocation itself, then
 * hcgp_option_init. */
int hcgp_srun_init(spank_t sp, int ac, char **av);
int hcgp_srun_post_opt(spank_t sp);
int hcgp_srun_user_init(spank_t sp);

#endif /* HCGP_SRUN_H */
