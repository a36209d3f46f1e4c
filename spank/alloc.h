/*
 * alloc.h - sbatch's and salloc's calls (alloc.c), dispatched by plugin.c.
 */
#ifndef HCGP_ALLOC_H
#define HCGP_ALLOC_H

#include <slurm/spank.h>

int hcgp_alloc_init(spank_t sp, int ac, char **av);
int hcgp_alloc_post_opt(spank_t sp);

#endif /* HCGP_ALLOC_H */
