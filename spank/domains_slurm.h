/*
 * domains_slurm.h - the step's NVLink domains as slurmstepd learns them
 * (domains_slurm.c; the pure part is domains.h).
 */
#ifndef HCGP_DOMAINS_SLURM_H
#define HCGP_DOMAINS_SLURM_H

#include "domains.h"
#include <slurm/spank.h>

/* The step's NVLink domains, learnt on the first call. */
const struct hcgp_domains *hcgp_domains_learn(spank_t sp, const int *local,
                                              int nlocal);
/* Frees them (slurm_spank_exit). */
void hcgp_domains_forget(void);

#endif /* HCGP_DOMAINS_SLURM_H */
