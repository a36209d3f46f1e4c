/*
 * contract.h - what the core promises its in-tree users beyond hcg.h:
 * which of the task's HCG_* variables a name is, the stem of a dim's
 * variables, and the reading of a caller's growable config struct. libhcg
 * (runtime/lib: ctx.c, groupset.c) needs these and nothing else of the
 * core's private data model; internal.h includes this header, so the core
 * declares each of them once, here.
 */
#ifndef HCG_CORE_CONTRACT_H
#define HCG_CORE_CONTRACT_H

#include <stddef.h>

#include "hcg.h"

/* ---- config.c ---------------------------------------------------------- */
/* Copies a caller's config struct `cfg` (NULL: none) into `out`, a struct
 * of this library's size `mine` starting from `defaults`: as many bytes as
 * both sizes hold, with `size` and `version` set to this library's. min is
 * the smallest size accepted (the struct as 1.0 had it). HCG_EINVAL with a
 * message naming `type` for a size or version no INIT macro gives. */
int hcg__config_read(const void *cfg, const void *defaults, size_t mine,
                     size_t min, void *out, const char *type, hcg_error *err);
/* The call for a config type T. In 1.0 the smallest size is the whole
 * struct; a release that appends fields passes the 1.0 size as min. */
#define HCG__CONFIG_READ(T, cfg, defaults, out, err)                           \
  hcg__config_read((cfg), (defaults), sizeof(T), sizeof(T), (out), #T, (err))
/* The same for a struct that has grown: FIELD is the first field appended
 * after its first release, whose size a caller may still pass. */
#define HCG__CONFIG_READ_SINCE(T, FIELD, cfg, defaults, out, err)              \
  hcg__config_read((cfg), (defaults), sizeof(T), offsetof(T, FIELD), (out),    \
                   #T, (err))

/* ---- env.c ------------------------------------------------------------- */
/* The variables every task gets whatever its layout, in hcg_rank_env's
 * order; env.c alone spells their names. */
enum hcg__env_var {
  HCG__VAR_VERSION,
  HCG__VAR_LAYOUT,
  HCG__VAR_RANK,
  HCG__VAR_WORLD_SIZE,
  HCG__VAR_GRIDS,
  HCG__VAR_LANGUAGE,
  HCG__FIXED_VARS
};
/* Which of them `name` is, or -1 (a per-dim variable, or none). */
int hcg__env_var(const char *name);
/* "HCG_<GRID>[_<VIEW>]_<DIM>" upper-cased, the stem of _RANK and _SIZE. */
void hcg__env_stem(char *out, size_t cap, const struct hcg_layout *L, int g,
                   int v, int d);

#endif /* HCG_CORE_CONTRACT_H */
