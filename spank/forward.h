/*
 * forward.h - how srun hands the checked layout to slurmstepd, and what
 * slurmstepd computes from it for one task. Pure C (no Slurm), so the unit
 * tests and the benchmark run exactly the code the plugin runs.
 *
 * Why a variable of our own: Slurm forwards a SPANK option to slurmstepd as
 * the raw argument the user typed, and a plugin cannot change it. For
 * --hcg-layout=@PATH that argument is a path, and slurmstepd must never read
 * a user-named file. So srun, after reading the file as the user and
 * validating the layout against the step's task count, puts the CANONICAL
 * text (every offset explicit, every '*' resolved) into HCGP_FORWARD_ENV in
 * its own environment, which Slurm copies into the step's environment.
 * slurmstepd then only parses text, never opens a path.
 *
 * The name starts with "SLURM" because srun copies SLURM* variables even with
 * --export=NONE, which many sites use in batch scripts. The value is tied to
 * one step ("hcg1:JOB.STEP:LANGUAGE:CANONICAL"), so a stale value inherited
 * from an outer step can never be mistaken for this step's layout.
 * slurmstepd removes the variable from every task's environment.
 *
 * When srun finds that the layout does not fit the step, it says why and
 * forwards a refusal ("hcg1:JOB.STEP:!"). Whether srun also fails depends
 * on who made the job's allocation:
 *  - srun itself (it started outside any job): srun fails in
 *    slurm_spank_local_user_init. It then ends the step before any task or
 *    slurmstepd starts, and the helper process srun forks for an abnormal
 *    end completes the job it allocated, step included.
 *  - an existing job (a batch script, salloc, srun --jobid): srun goes on
 *    and every task fails in task_init, before the user's program starts;
 *    the step completes normally and srun exits non-zero. Failing srun
 *    here would leave its step behind in slurmctld (created, never
 *    launched, never completed, not even by scancel, until the job ends),
 *    holding its CPUs, so the script's next srun would wait forever. So
 *    it is in every Slurm measured: 22.05, 24.11 and 26.05 (Slurm 25.05's
 *    change to SPANK return codes, commit 74ff6df484, made positive ones
 *    fail too and did not change this).
 * The refusal is forwarded in both cases, so that the tasks refuse the
 * step even where srun ignores a failure (a plugin that plugstack.conf
 * loads as optional).
 */
#ifndef HCGP_FORWARD_H
#define HCGP_FORWARD_H

#include <stddef.h>
#include <stdint.h>

#include "hcg.h"

#define HCGP_FORWARD_ENV "SLURM_HCG_STEP_LAYOUT"
#define HCGP_FORWARD_MAGIC "hcg1"
/* Room for the header: magic, two 10-digit ids, a name and separators. */
#define HCGP_FORWARD_HEADER_MAX                                                \
  (sizeof HCGP_FORWARD_MAGIC + 24 + HCG_MAX_NAME + 4)
/* Largest value slurmstepd accepts. */
#define HCGP_FORWARD_MAX (HCGP_FORWARD_HEADER_MAX + HCG_MAX_LAYOUT_BYTES)

/* Builds the value for a step into a malloc'ed string (*out, caller frees).
 * language: the name of the language module's grid as chosen by srun. */
int hcgp_forward_encode(uint32_t job, uint32_t step, const char *language,
                        const char *canonical, char **out, hcg_error *err);

/* Builds the refusal for a step (see above). */
int hcgp_forward_refuse(uint32_t job, uint32_t step, char **out,
                        hcg_error *err);

/* 1 when `value` is the refusal for this job step. */
int hcgp_forward_refused(const char *value, size_t value_len, uint32_t job,
                         uint32_t step);

/* Splits a value. On success *text points into `value` (len bytes) and
 * language holds the grid name. Fails with HCG_EENV and a message when the
 * value is malformed or belongs to another job step, and with HCG_ELAYOUT
 * when it is a refusal. */
int hcgp_forward_decode(const char *value, size_t value_len, uint32_t job,
                        uint32_t step, char language[HCG_MAX_NAME + 1],
                        const char **text, size_t *len, hcg_error *err);

/* One task: what slurm_spank_task_init computes. */
struct hcgp_task {
  uint32_t job, step; /* S_JOB_ID, S_JOB_STEPID                        */
  uint32_t world;     /* S_JOB_TOTAL_TASK_COUNT                        */
  uint32_t rank;      /* S_TASK_GLOBAL_ID                              */
  int export_dims;    /* plugstack export_dims                         */
  /* Site policy, applied again here because the variable comes through
   * the user's environment and can be forged (doc/security.md). */
  size_t max_bytes;     /* max_layout_bytes; 0: HCG_MAX_LAYOUT_BYTES only */
  const char *language; /* plugstack language=, NULL or "": none        */
};

/* Receives each variable of the task; non-zero stops the walk. */
typedef int (*hcgp_task_setenv_fn)(void *arg, const char *name,
                                   const char *value);

/* Decodes `forwarded`, parses the canonical layout for t->world ranks and
 * calls fn for every variable of hcg_rank_env that task t gets (those of
 * scope HCG_ENV_PER_DIM only with export_dims). O(layout text + dims): the
 * world size does not matter. A non-zero return from fn is returned as is;
 * layout and decoding errors return an HCG_E* code with err filled. */
int hcgp_task_env(const char *forwarded, size_t len, const struct hcgp_task *t,
                  hcgp_task_setenv_fn fn, void *arg, hcg_error *err);
/* The same, and on success *keep receives the parsed layout (the caller
 * frees it with hcg_layout_free), so that later work on the task (the
 * placement check) does not decode and parse it again. */
int hcgp_task_env_keep(const char *forwarded, size_t len,
                       const struct hcgp_task *t, hcgp_task_setenv_fn fn,
                       void *arg, hcg_layout **keep, hcg_error *err);

/* The variables of hcgp_task_env for task t from a layout already parsed
 * for its step (hcgp_forward_layout): what a plan made before the tasks
 * are forked records for each (taskenv.h). */
int hcgp_layout_task_env(const hcg_layout *L, const struct hcgp_task *t,
                         hcgp_task_setenv_fn fn, void *arg);

/* The layout of `forwarded` for task t's step (decoded, checked against
 * the site's policy and parsed as hcgp_task_env does), without the task's
 * variables: *out, which the caller frees with hcg_layout_free. */
int hcgp_forward_layout(const char *forwarded, size_t len,
                        const struct hcgp_task *t, hcg_layout **out,
                        hcg_error *err);

/* 1 when `name` (a variable name, up to '=' or the end) is an HCG_* setting
 * a user may give a task (HCG_TIMEOUT, HCG_LIBRARY, ...; doc/security.md);
 * every other HCG_* variable is the plugin's, and slurmstepd removes it from
 * the task before setting its own. */
int hcgp_env_user_setting(const char *name);

/* 1 when `entry` ("NAME=VALUE" or "NAME") is an HCG_* variable that only
 * the plugin may set (see hcgp_env_user_setting). */
int hcgp_env_plugin_owned(const char *entry);

/* 1 when a variable of the environment hcgp_layout_task_env gives (`name`)
 * has the same value for every task of one grid: the step's (HCG_VERSION,
 * HCG_LAYOUT, HCG_WORLD_SIZE, HCG_LANGUAGE), HCG_GRIDS and every dim's
 * _SIZE; not HCG_RANK nor a dim's _RANK. srun passes these on for the
 * largest grid's tasks (hcgp_layout_common_rank), and each node checks
 * them against what its tasks compute before it lets them stand in for a
 * task's own (taskenv.h). */
int hcgp_env_grid_shared(const char *name);
/* The first rank of the layout's largest grid (the first such grid): a
 * task whose variables of hcgp_env_grid_shared most tasks share. */
uint32_t hcgp_layout_common_rank(const hcg_layout *L);

/* srun: 1 when srun's command line (cmdline, len bytes of NUL-terminated
 * words, as in /proc/self/cmdline; NULL when unknown) may name an existing
 * job: a word starting with "--jobi", which is --jobid or an abbreviation
 * of it that srun's getopt_long accepts. Words of the user's program count
 * too: a wrong 1 only chooses the refusal by the tasks (see above). */
int hcgp_srun_cmdline_attaches(const char *cmdline, size_t len);

/* 1 when a step is heterogeneous: srun puts the task count of the whole
 * step in SLURM_NTASKS (ntasks, NULL when unset), which for a
 * heterogeneous step is the sum over its components and so differs from
 * this component's S_JOB_TOTAL_TASK_COUNT (world). A missing or malformed
 * value says nothing: 0. Shared by srun and slurmstepd, which read the
 * variable from different places. */
int hcgp_step_heterogeneous(const char *ntasks, uint32_t world);

#endif /* HCGP_FORWARD_H */
