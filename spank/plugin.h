/*
 * plugin.h - what the files of the hcg SPANK plugin share. Every name here
 * is private to the plugin (prefix hcgp_); spank_hcg.map exports only the
 * slurm_spank_* entry points.
 *
 * One process runs one context (srun, sbatch/salloc, slurmd or slurmstepd),
 * and Slurm calls a plugin from one thread at a time, so plain globals
 * suffice. The files, none of which calls back into plugin.c:
 *
 *   plugin.c      SPANK_PLUGIN and the slurm_spank_* entry points; only
 *                 dispatches by spank_context() to the context files
 *   srun.c        srun: read @PATH, check against the task count, forward
 *   alloc.c       sbatch/salloc: read @PATH and pass the text to the job
 *   slurmd.c      slurmd: check plugstack.conf once, for the admin's log
 *   slurmstepd.c  slurmstepd: set each task's HCG_* variables
 *   option.c      --hcg-layout, --hcg-placement: registration, callbacks
 *   het.c         heterogeneous steps, in srun and slurmstepd
 *   placement_slurm.c  slurmstepd: the placement check of the node
 *   domains_slurm.c    slurmstepd: the step's NVLink domains, learnt once
 *   load.c        plugstack.conf arguments and the layout, as read by srun,
 *                 sbatch and salloc
 *   state.c       the process's state
 *   log.c         messages, all prefixed "hcg: "
 *   init_failure.c  slurm_spank_init_failure_mode (Slurm 25.05 and later)
 *   args.c        plugstack.conf parsing (pure C)      } libhcgspank.la,
 *   forward.c     srun -> slurmstepd hand-over (pure C) } also unit tested
 *   hetstep.c     heterogeneous steps (pure C)          }
 *   placement.c   a node's placement check (pure C)     }
 *   domains.c     the step's nodes, tasks, domains (pure C) }
 */
#ifndef HCGP_PLUGIN_H
#define HCGP_PLUGIN_H

#include <slurm/spank.h>
#include <stddef.h>

#include "args.h"
#include "domains.h"
#include "hcg.h"

/* Every message starts with this, whatever the context. */
#define HCGP_LOG_PREFIX "hcg: "

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
/* Prints "hcg: " + message; message may span lines (the core's column +
 * caret), which are printed as they are. */
void hcgp_log_error(const char *message);
/* Same, with the core's error code name when the message is empty. */
void hcgp_log_hcg_error(const hcg_error *err);

/* ---- option.c ---------------------------------------------------------- */
int hcgp_option_register(spank_t sp);
/* 1 when the option was given with a value other than "none". */
int hcgp_option_active(void);
/* Reports a conflicting or oversized --hcg-layout (srun, sbatch, salloc).
 * Returns 0 when the value can be used. */
int hcgp_option_check(void);

/* ---- load.c ------------------------------------------------------------ */
/* Reads the plugstack.conf arguments into hcgp_state.args. strict: every
 * rejected argument is an error (a person is watching); else it is logged
 * as ignored `where` ("on this node") and its default is used. */
void hcgp_load_args(int ac, char **av, int strict, const char *where);
/* init in srun, sbatch and salloc: a person is watching, so a rejected
 * plugstack.conf argument is an error; then --hcg-layout is registered. */
int hcgp_load_init(spank_t sp, int ac, char **av);
/* Reads the option's layout (text or @PATH, as the user) into
 * hcgp_state.text and checks what can be checked without the task count.
 * Once per process; 0 when there is nothing to load. */
int hcgp_load_layout(void);
/* The core's configuration for the loaded layout in a world of `world`
 * ranks (0: unknown yet). */
hcg_layout_config hcgp_load_config(int world);
/* Parses the loaded layout for `world` ranks under the site's policy. The
 * site's language= chooses among several grids: a one-grid layout's only
 * grid is its language module whatever the site names (doc/plugin.md). */
int hcgp_load_parse(int world, hcg_layout **out, hcg_error *err);
/* Prints a layout error, and where the bound comes from when it is one. */
void hcgp_log_layout_error(const hcg_error *err);

/* ---- het.c (heterogeneous steps, see hetstep.h) ------------------------ */
struct hcgp_task;
typedef int (*hcgp_het_setenv_fn)(void *arg, const char *name,
                                  const char *value);
/* srun init_post_opt, every call: forwards the layout to the components
 * after the first. */
int hcgp_het_post_opt(void);
/* srun user_init: 1 for a heterogeneous step, which srun leaves alone
 * (its slurmstepds check it, see hetstep.h). */
int hcgp_het_srun(spank_t sp);
/* slurmstepd task_init of a heterogeneous step: every variable of the
 * task's global rank through fn; logs once per component, -1 on error. */
int hcgp_het_task_init(spank_t sp, const char *forwarded,
                       const struct hcgp_task *task, hcgp_het_setenv_fn fn,
                       void *arg);

/* ---- the contexts ------------------------------------------------------ */
/* srun init: notes whether srun makes the job's allocation itself, then
 * hcgp_load_init. */
int hcgp_srun_init(spank_t sp, int ac, char **av);
int hcgp_srun_post_opt(spank_t sp);
int hcgp_srun_user_init(spank_t sp);
int hcgp_alloc_post_opt(spank_t sp);
int hcgp_slurmd_init(spank_t sp, int ac, char **av);
int hcgp_slurmstepd_init(spank_t sp, int ac, char **av);
int hcgp_slurmstepd_task_init(spank_t sp);
/* slurmstepd user_init (once per step, before the tasks): learns the
 * step's domains for them. Never fails. */
int hcgp_slurmstepd_user_init(spank_t sp);

/* ---- placement_slurm.c ------------------------------------------------- */
struct hcgp_task;
/* The policy in force: --hcg-placement, else plugstack placement=. */
int hcgp_placement_policy(void);
/* The placement check of a task (see placement_slurm.c): 0 to go on, 1
 * when the policy refuses the step (explained), -1 on an error (logged). */
int hcgp_stepd_placement(spank_t sp, const hcg_layout *L,
                         const struct hcgp_task *t);
/* The node's tasks by global id (malloc'd); NULL when Slurm does not say. */
int *hcgp_local_tasks(spank_t sp, int *n);

/* ---- domains_slurm.c ---------------------------------------------------- */
/* The step's NVLink domains (domains.h), learnt on the first call. */
const struct hcgp_domains *hcgp_stepd_domains(spank_t sp, const int *local,
                                              int nlocal);

#endif /* HCGP_PLUGIN_H */
