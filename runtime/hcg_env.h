/*
 * hcg_env.h - the environment of a task, as the SPANK plugin exports it.
 *
 * Part of the core. Include hcg.h.
 */
#ifndef HCG_ENV_H
#define HCG_ENV_H

#include "hcg_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * The environment of a task (what the SPANK plugin exports):
 *   HCG_VERSION, HCG_LAYOUT, HCG_RANK, HCG_WORLD_SIZE, HCG_GRIDS,
 *   HCG_LANGUAGE, HCG_<GRID>_<DIM>_RANK/_SIZE, HCG_<GRID>_<VIEW>_<DIM>_...
 * Calls fn once per variable in that order, O(dims) calls; a non-zero return
 * from fn stops the walk and is returned. HCG_ENOTMEMBER for a rank outside
 * [0, world).
 */
typedef int (*hcg_env_fn)(void *arg, const char *name, const char *value);
int hcg_rank_env(const hcg_layout *layout, int rank, hcg_env_fn fn, void *arg);

/* Who shares a variable of hcg_rank_env: every task of the step
 * (HCG_VERSION, HCG_LAYOUT, HCG_WORLD_SIZE, HCG_LANGUAGE), one rank
 * (HCG_RANK, HCG_GRIDS), or one dim of one rank (HCG_<GRID>_..._RANK and
 * _SIZE, which the plugin's export_dims=no leaves out). */
enum hcg_env_scope {
  HCG_ENV_SHARED = 1,
  HCG_ENV_PER_RANK = 2,
  HCG_ENV_PER_DIM = 3,
  /* HCG_<GRID>_..._LOCAL: set by the plugin's placement check (see
   * hcg_rank_placement_env), not by hcg_rank_env. */
  HCG_ENV_PLACEMENT = 4
};
/* The scope of a variable name; 0 for a name hcg_rank_env never gives. */
int hcg_env_scope(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* HCG_ENV_H */
