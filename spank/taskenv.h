/*
 * taskenv.h - where a task's variables wait until slurmstepd sets them
 * (taskenv.c; pure: no Slurm; forward_slurm.c uses it).
 *
 * Slurm's spank_setenv (setenvf) allocates, zeroes and frees 256 KiB on
 * every call. In a task slurmstepd has just forked, that buffer lands on
 * pages the task has not written yet whenever the plugin holds memory of
 * its own at the time of the call: some 64 page faults a task, which were
 * most of what the plugin cost (doc/plugin.md, "What a task costs"). So a
 * task records its variables in a fixed buffer, allocating nothing, and
 * sets them only once it has freed all it allocated.
 */
#ifndef HCGP_TASKENV_H
#define HCGP_TASKENV_H

#include <stddef.h>

#include "hcg.h"

/* Variables recorded in the caller's buffer as "NAME\0VALUE\0", in order. */
struct hcgp_env_record {
  char *buf;
  size_t cap, used;
};
/* HCG_OK, or HCG_ELIMIT with nothing recorded when there is no room
 * (HCG_EINVAL for a NULL argument). */
int hcgp_env_record_add(struct hcgp_env_record *r, const char *name,
                        const char *value);
/* The name of the entry at *at (0 first) and *value, *at moved past it;
 * NULL after the last. */
const char *hcgp_env_record_next(const struct hcgp_env_record *r, size_t *at,
                                 const char **value);

#endif /* HCGP_TASKENV_H */
