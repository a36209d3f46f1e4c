/*
 * layout.h - the layout as srun, sbatch and salloc read it (layout.c).
 */
#ifndef HCGP_LAYOUT_H
#define HCGP_LAYOUT_H

#include "hcg.h"

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

#endif /* HCGP_LAYOUT_H */
