/*
 * plugin.h - what the files of the hcg SPANK plugin share. Every name here
 * is private to the plugin (prefix hcgp_); spank_hcg.map exports only the
 * slurm_spank_* entry points.
 *
 * One process runs one context (srun, sbatch/salloc, slurmd or slurmstepd),
 * and Slurm calls a plugin from one thread at a time, so plain globals
 * suffice.
 *
 * The files. plugin.c only dispatches each entry point, by context, to the
 * context's file; the rest never calls back into it:
 *
 *   plugin.c      SPANK_PLUGIN and the slurm_spank_* entry points
 *   srun.c        srun: read @PATH, check against the task count, forward
 *   alloc.c       sbatch/salloc: read @PATH and pass the text to the job
 *   slurmd.c      slurmd: check plugstack.conf once, for the admin's log
 *   slurmstepd.c  slurmstepd: set each task's HCG_* variables
 *   init_failure.c  slurm_spank_init_failure_mode (Slurm 25.05 and later)
 *
 * What the contexts share: the options (option.c), the layout as srun,
 * sbatch and salloc read it (layout.c), the process's state (state.c) and
 * its messages (log.c). The rest comes in pairs: NAME.c and NAME.h are
 * pure C (no Slurm, in libhcgspank.la, unit tested and fuzzed) and
 * NAME_slurm.c is what Slurm gives them and does with their answers:
 *
 *   args       plugstack.conf arguments
 *   forward    srun -> slurmstepd hand-over of the layout, per task
 *   hetstep    heterogeneous steps, in srun and slurmstepd
 *   placement  a node's placement check, in slurmstepd
 *   domains    the step's nodes, tasks and NVLink domains, in slurmstepd
 *
 * Return values. A function that takes an hcg_error returns HCG_OK or an
 * HCG_E* code with it filled, and logs nothing: the core's convention,
 * which the pure parts follow too; its caller on the Slurm side logs the
 * error. Every other function that can fail, the entry points included,
 * returns 0, or -1 once it has logged why: Slurm's convention, so that a
 * failure is passed on with a plain `return -1` and said exactly once. A
 * callback handed to the core or to a pure part returns what its type asks
 * (hcg_env_fn: HCG_OK or an HCG_E* code); one that logs its own failure
 * says so in its state (struct hcgp_setter), so that its caller does not
 * log a second, vaguer line. The one three-way answer, the placement
 * check's, is an enum.
 */
#ifndef HCGP_PLUGIN_H
#define HCGP_PLUGIN_H

#include <slurm/spank.h>
#include <stddef.h>

#include "args.h"
#include "domains.h"
#include "forward.h"
#include "hcg.h"

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

/* ---- state.c ----------------------------------------------------------- */
struct hcgp_state {
  struct hcgp_args args; /* plugstack.conf arguments                  */
  int args_bad;          /* how many were rejected                    */
  int registered;        /* --hcg-layout registered in this process   */

  /* --hcg-layout as Slurm handed it to the option callback. */
  int given;            /* the option was seen at least once          */
  char *value;          /* its argument (NULL if over HCGP_OPTION_CAP) */
  size_t value_len;     /* its length                                 */
  int from_env;         /* inherited from sbatch/salloc: a command-line
                           value may replace it                       */
  int conflict;         /* two different values were given            */
  int replaced_env;     /* a command-line value replaced the inherited */
  int component_cbs;    /* srun: callbacks since the last post_opt     */
  char *conflict_value; /* the second one, for the message           */

  /* srun, sbatch, salloc: the layout text after reading @PATH. */
  char *text;
  size_t text_len;
  int loaded;

  /* srun: it makes the job's allocation itself (it did not start inside a
   * job and was not given one), so it may fail a step (forward.h). */
  int srun_allocates;

  /* --hcg-placement=warn|refuse (enum hcgp_placement), when given. */
  int placement_given;
  int placement;
  int placement_bad; /* a value other than warn or refuse reached us */

  /* slurmstepd: the step's NVLink domains, learnt once (domains_slurm.c). */
  int domains_learnt;
  struct hcgp_domains domains;
};

extern struct hcgp_state hcgp_state;
void hcgp_state_free(void);

/* ---- log.c ------------------------------------------------------------- */
/* Where a message goes. Each is prefixed "hcg: ", which tells the user
 * which plugin speaks, and may span lines (the core's column and caret). */
enum hcgp_log_level {
  HCGP_LOG_ERROR,   /* slurm_error: srun's terminal, the node's log       */
  HCGP_LOG_INFO,    /* slurm_info: the node's log                         */
  HCGP_LOG_VERBOSE, /* slurm_verbose: srun -v, the node's log if verbose  */
  HCGP_LOG_TASK,    /* the task's stderr (task_init runs in the task): a
                       warning the user reads once, without "error:"     */
};
void hcgp_log(enum hcgp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* An error of the core or of a pure part: its message, or its code's name
 * when the message is empty. */
void hcgp_log_hcg_error(const hcg_error *err);

/* ---- option.c ---------------------------------------------------------- */
/* init in srun, sbatch and salloc: a person is watching, so a rejected
 * plugstack.conf argument is an error; then the options are registered. */
int hcgp_option_init(spank_t sp, int ac, char **av);
int hcgp_option_register(spank_t sp);
/* 1 when the option was given with a value other than "none". */
int hcgp_option_active(void);
/* Reports a conflicting or oversized --hcg-layout (srun, sbatch, salloc). */
int hcgp_option_check(void);

/* ---- args_slurm.c ------------------------------------------------------ */
/* Reads the plugstack.conf arguments into hcgp_state.args. strict: every
 * rejected argument is an error (a person is watching); else it is logged
 * as ignored `where` ("on this node") and its default is used. */
void hcgp_args_load(int ac, char **av, int strict, const char *where);

/* ---- layout.c ---------------------------------------------------------- */
/* Reads the option's layout (text or @PATH, as the user) into
 * hcgp_state.text and checks what can be checked without the task count.
 * Once per process; 0 also when there is nothing to load. */
int hcgp_layout_load(void);
/* Parses the loaded layout for `world` ranks under the site's policy. The
 * site's language= chooses among several grids: a one-grid layout's only
 * grid is its language module whatever the site names (doc/plugin.md). */
int hcgp_layout_parse(int world, hcg_layout **out, hcg_error *err);
/* Logs a layout error, and where the bound comes from when it is one. */
void hcgp_layout_log_error(const hcg_error *err);

/* ---- forward_slurm.c (forward.h) --------------------------------------- */
/* srun: the step's value in srun's environment, which Slurm copies into
 * the step's: the layout, or the refusal. */
int hcgp_forward_set(uint32_t job, uint32_t step, const hcg_layout *layout);
int hcgp_forward_set_refusal(uint32_t job, uint32_t step);
/* srun: no value, so that an outer step's never reaches this one. */
void hcgp_forward_unset(void);
/* slurmstepd: the value srun forwarded (malloc'd), removed from the task's
 * environment; NULL when missing or unreadable (logged). */
char *hcgp_forward_take(spank_t sp);
/* slurmstepd: the same value removed, for a task without a layout. */
void hcgp_forward_unset_task(spank_t sp);
/* slurmstepd: removes every HCG_* variable of the task that only the
 * plugin may set (hcgp_env_plugin_owned). */
int hcgp_forward_drop_inherited(spank_t sp);

/* Sets the task's variables (hcgp_task_setenv_fn, hcg_env_fn). A variable
 * it cannot set stops the walk with HCG_EENV, logged here: `failed` tells
 * the caller that this message, not the walk's hcg_error, says why. */
struct hcgp_setter {
  spank_t sp;
  int count;  /* variables set */
  int failed; /* a spank_setenv failed, and was logged */
};
int hcgp_setter_set(void *setter, const char *name, const char *value);

/* ---- hetstep_slurm.c (hetstep.h) --------------------------------------- */
/* srun init_post_opt, every call: forwards the layout to the components
 * after the first. */
int hcgp_het_post_opt(void);
/* srun user_init: 1 for a heterogeneous step, whose check srun leaves to
 * its slurmstepds (hetstep.h); else 0. */
int hcgp_het_srun_defers(spank_t sp);
/* slurmstepd task_init of a heterogeneous step: every variable of the
 * task's global rank through the setter; says why once per component. */
int hcgp_het_task_init(spank_t sp, const char *forwarded,
                       const struct hcgp_task *task,
                       struct hcgp_setter *setter);

/* ---- placement_slurm.c (placement.h) ----------------------------------- */
/* The policy in force: --hcg-placement, else plugstack placement=. */
int hcgp_placement_policy(void);
/* The node's tasks by global id (malloc'd); NULL when Slurm does not say. */
int *hcgp_local_tasks(spank_t sp, int *n);
/* What the placement check decides for a task. */
enum hcgp_task_verdict {
  HCGP_TASK_RUNS,    /* the task runs (a warning may have been printed)  */
  HCGP_TASK_REFUSED, /* the policy refuses the step, and said why        */
  HCGP_TASK_FAILED,  /* the check failed under refuse (logged)           */
};
enum hcgp_task_verdict hcgp_placement_task(spank_t sp, const hcg_layout *L,
                                           const struct hcgp_task *t);

/* ---- domains_slurm.c (domains.h) --------------------------------------- */
/* The step's NVLink domains, learnt on the first call. */
const struct hcgp_domains *hcgp_domains_learn(spank_t sp, const int *local,
                                              int nlocal);

/* ---- the contexts ------------------------------------------------------ */
/* srun init: notes whether srun makes the job's allocation itself, then
 * hcgp_option_init. */
int hcgp_srun_init(spank_t sp, int ac, char **av);
int hcgp_srun_post_opt(spank_t sp);
int hcgp_srun_user_init(spank_t sp);
int hcgp_alloc_init(spank_t sp, int ac, char **av);
int hcgp_alloc_post_opt(spank_t sp);
int hcgp_slurmd_init(spank_t sp, int ac, char **av);
int hcgp_slurmstepd_init(spank_t sp, int ac, char **av);
/* slurmstepd user_init (once per step, before the tasks): learns the
 * step's domains for them. Never fails. */
int hcgp_slurmstepd_user_init(spank_t sp);
int hcgp_slurmstepd_task_init(spank_t sp);

#endif /* HCGP_PLUGIN_H */
