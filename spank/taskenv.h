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
 *
 * Better still, slurmstepd computes every local task's variables once,
 * before it forks them (user_init), into a plan; a forked task then only
 * reads its own entry and sets it. The plan lives in an anonymous mapping
 * of its own, not on the heap: memory slurmstepd holds on its heap when it
 * forks moves where Slurm's own allocations land in every task, which costs
 * each task the faults the plan saves.
 */
#ifndef HCGP_TASKENV_H
#define HCGP_TASKENV_H

/* A function a planned task runs between fork and exec. What a task costs
 * is the pages it touches first, code as well as data (doc/plugin.md): the
 * compiler gathers these functions in one place (.text.hot) instead of
 * leaving them among the rest of the plugin's code. */
#if defined(__GNUC__)
#define HCGP_TASK_PATH __attribute__((hot))
#else
#define HCGP_TASK_PATH
#endif

#include <stddef.h>
#include <stdint.h>

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
HCGP_TASK_PATH const char *hcgp_env_record_next(const struct hcgp_env_record *r,
                                                size_t *at, const char **value);

/* The variables of a node's tasks, by local task id: O(local tasks x their
 * variables). Made and freed by one thread; a task reads its copy. */
struct hcgp_plan;
/* An empty plan for ntasks local tasks of step job.step; NULL when ntasks
 * is out of range or the mapping cannot be made. */
struct hcgp_plan *hcgp_plan_new(uint32_t job, uint32_t step, int ntasks);
/* Local task lid (global rank `rank`) will set `required`, then `optional`
 * (copied into the plan, which may move: *p). HCG_OK; HCG_ELIMIT when the
 * plan cannot grow (the task is then not in it); HCG_EINVAL for a bad
 * argument or a task already in it. */
int hcgp_plan_put(struct hcgp_plan **p, int lid, uint32_t rank,
                  const struct hcgp_env_record *required,
                  const struct hcgp_env_record *optional);
/* 1 with the task's records (pointing into the plan; read only) when local
 * task lid of job.step with this global rank is in the plan; else 0. */
HCGP_TASK_PATH int hcgp_plan_get(const struct hcgp_plan *p, uint32_t job,
                                 uint32_t step, int lid, uint32_t rank,
                                 struct hcgp_env_record *required,
                                 struct hcgp_env_record *optional);
void hcgp_plan_free(struct hcgp_plan *p);

#endif /* HCGP_TASKENV_H */
