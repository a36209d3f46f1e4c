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
 *
 * What is left is Slurm's price for each variable set (spank_setenv zeroes
 * its 256 KiB). So srun passes in the step's environment the variables most
 * tasks share (forward_slurm.h), and a task does not set those it has as
 * they are there (hcgp_plan_share).
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
/* What a planned task does to its copy of the step's environment: removes
 * the variables `unset` names (names only: their values are empty), then
 * sets `required`, then `optional` (the placement check's). */
struct hcgp_plan_entry {
  struct hcgp_env_record unset, required, optional;
};
/* Local task lid (global rank `rank`) will do what e says (copied into the
 * plan, which may move: *p). HCG_OK; HCG_ELIMIT when the plan cannot grow
 * (the task is then not in it); HCG_EINVAL for a bad argument or a task
 * already in it. */
int hcgp_plan_put(struct hcgp_plan **p, int lid, uint32_t rank,
                  const struct hcgp_plan_entry *e);
/* 1 with the task's entry (pointing into the plan; read only) when local
 * task lid of job.step with this global rank is in the plan; else 0. */
HCGP_TASK_PATH int hcgp_plan_get(const struct hcgp_plan *p, uint32_t job,
                                 uint32_t step, int lid, uint32_t rank,
                                 struct hcgp_plan_entry *e);
/* The plugin's variables the step's environment holds already (`held`, n
 * entries "NAME=VALUE": srun puts there those most tasks share,
 * forward_slurm.h; or they are left over from an outer step): a task that
 * has one with that value need not set it. Rewrites every entry of the plan
 * (each put with nothing to unset) so that its task sets only what it
 * lacks, and removes those of `held` that stay but are not its own;
 * keep[i] says whether held[i] stays in the step's environment (some task
 * has it as it is) or must leave it before the tasks fork. HCG_OK;
 * HCG_ELIMIT (the plan as it was, every keep[i] 0) when n is over
 * HCGP_PLAN_HELD_MAX or the plan cannot grow; HCG_EINVAL for a bad
 * argument. O(tasks x variables x n). The names in `held` are distinct,
 * and so are each task's (hcg_rank_env gives each once): a name held twice
 * must be left out by the caller, and leave (taskenv_slurm.c). */
#define HCGP_PLAN_HELD_MAX 1024
int hcgp_plan_share(struct hcgp_plan **p, const char *const *held, size_t n,
                    unsigned char *keep);
void hcgp_plan_free(struct hcgp_plan *p);

#endif /* HCGP_TASKENV_H */
