/*
 * state.h - the one process's state of the plugin (state.c): what the
 * option callbacks and the layout left for the later calls (what one
 * context alone keeps is static in its file: srun.c, domains_slurm.c).
 * One process runs one context, and Slurm calls a plugin from one thread
 * at a time, so plain globals suffice.
 */
#ifndef HCGP_STATE_H
#define HCGP_STATE_H

#include <stddef.h>

#include "args.h"

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

  /* --hcg-placement=warn|refuse (enum hcgp_placement), when given. */
  int placement_given;
  int placement;
  int placement_bad; /* a value other than warn or refuse reached us */
};

extern struct hcgp_state hcgp_state;
void hcgp_state_free(void);

#endif /* HCGP_STATE_H */
