/*
 * option.h - --hcg-layout and --hcg-placement (option.c).
 */
#ifndef HCGP_OPTION_H
#define HCGP_OPTION_H

#include <slurm/spank.h>
#include <stddef.h>

#define HCGP_OPTION_NAME "hcg-layout"
/* Where Slurm puts the option's argument for other processes of the job:
 * "_SLURM_SPANK_OPTION_" + plugin name + "_" + option name, with characters
 * that are not alphanumeric turned into '_'. sbatch and salloc also store it
 * in the job's SPANK environment, which the batch script and the salloc
 * shell see with the prefix "SLURM_SPANK_"; srun reads it from there. */
#define HCGP_OPTION_ENV "_SLURM_SPANK_OPTION_hcg_hcg_layout"
#define HCGP_OPTION_INHERITED_ENV "SLURM_SPANK_" HCGP_OPTION_ENV
/* --hcg-layout=none: no layout for this step, even one inherited from
 * sbatch or salloc. Not a layout: a grid needs NAME=SIZE dims. */
#define HCGP_OPTION_NONE "none"

/* Longest option argument remembered at all; longer ones (which the kernel
 * does not even pass on a command line) are only counted. */
#define HCGP_OPTION_CAP (1u << 20)

/* init in srun, sbatch and salloc: a person is watching, so a rejected
 * plugstack.conf argument is an error; then the options are registered. */
int hcgp_option_init(spank_t sp, int ac, char **av);
int hcgp_option_register(spank_t sp);
/* 1 when the option was given with a value other than "none". */
int hcgp_option_active(void);
/* Reports a conflicting or oversized --hcg-layout (srun, sbatch, salloc). */
int hcgp_option_check(void);

#endif /* HCGP_OPTION_H */
