/*
 * slurmd.c - slurmd loads the plugin stack once at start: the place where
 * an admin reads about a broken plugstack.conf line, in slurmd's log.
 * Nothing else happens here, and nothing fails: a failure would keep the
 * node from starting.
 */
#include "slurmd.h"
#include "args_slurm.h"

int hcgp_slurmd_init(spank_t sp, int ac, char **av) {
  (void)sp;
  hcgp_args_load(ac, av, 0, "by slurmd");
  return 0;
}
