/*
 * plugin.h - state shared by the files of the hcg SPANK plugin.
 *
 * One process runs one context (srun, sbatch/salloc or slurmstepd), and
 * Slurm calls a plugin from one thread at a time, so plain globals suffice.
 *
 *   plugin.c     SPANK_PLUGIN, the slurm_spank_* entry points, dispatch by
 *                spank_context()
 *   option.c     --hcg-layout: registration and the option callback
 *   local.c      srun: read @PATH, validate against the task count, forward
 *   allocator.c  sbatch/salloc: read @PATH and pass the text to the job
 *   remote.c     slurmstepd: set each task's HCG_* variables
 *   args.c       plugstack.conf arguments (pure C)
 *   forward.c    srun -> slurmstepd hand-over, per-task computation (pure C)
 */
#ifndef HCG_SPANK_PLUGIN_H
#define HCG_SPANK_PLUGIN_H

#include <slurm/spank.h>
#include <stddef.h>

#include "args.h"
#include "hcg.h"

/* Every message starts with this, whatever the context. */
#define HCG_LOG_PREFIX "hcg: "

#define HCG_OPTION_NAME "hcg-layout"
/* Where Slurm puts the option's argument for other processes of the job:
 * "_SLURM_SPANK_OPTION_" + plugin name + "_" + option name, with characters
 * that are not alphanumeric turned into '_'. sbatch and salloc also store it
 * in the job's SPANK environment, which the batch script and the salloc
 * shell see with the prefix "SLURM_SPANK_"; srun reads it from there. */
#define HCG_OPTION_ENV "_SLURM_SPANK_OPTION_hcg_hcg_layout"
#define HCG_OPTION_INHERITED_ENV "SLURM_SPANK_" HCG_OPTION_ENV
/* --hcg-layout=none: no layout for this step, even one inherited from
 * sbatch or salloc. Not a layout: a grid needs NAME=SIZE dims. */
#define HCG_OPTION_NONE "none"

/* Longest option argument remembered at all; longer ones (which the kernel
 * does not even pass on a command line) are only counted. */
#define HCG_OPTION_CAP (1u << 20)

struct hcg_state {
  struct hcg_args args; /* plugstack.conf arguments                  */
  int args_bad;         /* how many were rejected                    */
  int registered;       /* --hcg-layout registered in this process   */

  /* --hcg-layout as Slurm handed it to the option callback. */
  int given;            /* the option was seen at least once          */
  char *value;          /* its argument (NULL if over HCG_OPTION_CAP) */
  size_t value_len;     /* its length                                 */
  int from_env;         /* inherited from sbatch/salloc: a command-line
                           value may replace it                       */
  int conflict;         /* two different values were given            */
  char *conflict_value; /* the second one, for the message           */

  /* srun, sbatch, salloc: the layout text after reading @PATH. */
  char *text;
  size_t text_len;
  int loaded;
};

extern struct hcg_state hcg_state;

/* option.c */
int hcg_option_register(spank_t sp);
/* 1 when the option was given with a value other than "none". */
int hcg_option_active(void);
/* Reports a conflicting or oversized --hcg-layout (srun, sbatch, salloc).
 * Returns 0 when the value can be used. */
int hcg_option_check(void);
void hcg_state_free(void);

/* local.c and allocator.c share the reading of the layout. */
int hcg_local_load(spank_t sp);
int hcg_local_user_init(spank_t sp);
int hcg_allocator_post_opt(spank_t sp);

/* remote.c */
int hcg_remote_task_init(spank_t sp);

/* plugin.c: prints "hcg: " + message; message may span lines (the core's
 * column + caret), which are printed as they are. */
void hcg_log_error(const char *message);
/* Same, with the core's error code name when the message is empty. */
void hcg_log_hcg_error(const hcg_error *err);

#endif /* HCG_SPANK_PLUGIN_H */
