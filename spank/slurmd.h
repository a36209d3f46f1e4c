/*
 * slurmd.h - slurmd's call (slurmd.c), dispatched by plugin.c.
 */
#ifndef HCGP_SLURMD_H
#define HCGP_SLURMD_H

#include <slurm/spank.h>

int hcgp_slurmd_init(spank_t sp, int ac, char **av);

#endif /* HCGP_SLURMD_H */
