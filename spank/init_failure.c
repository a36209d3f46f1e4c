/*
 * init_failure.c - Slurm 25.05 and later: what a failure of
 * slurm_spank_init means. Built where spank.h has ESPANK_JOB_FAILURE.
 *
 * Slurm's default, ESPANK_NODE_FAILURE, drains the node when a required
 * plugin's init fails in slurmd or slurmstepd. The plugin's init never
 * fails there (slurmd.c, slurmstepd.c: a bad plugstack.conf argument is
 * logged and its default used), but should it ever, the job is at fault
 * and the node must stay up. In srun, sbatch and salloc any non-zero
 * value fails the command, as before.
 */

#include <slurm/spank.h>

int slurm_spank_init_failure_mode = ESPANK_JOB_FAILURE;
