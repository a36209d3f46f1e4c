/*
 * order.h - where the tasks of a step run, as Slurm decided it, in a few
 * bytes: srun reads the step's layout from Slurm (order_slurm.c) and hands
 * it to slurmstepd as the distribution that reproduces it exactly over an
 * order of the step's nodes. Pure C (no Slurm).
 *
 * Why an order: Slurm 26.05 deals `block` (given or default) over the
 * step's nodes in topology order (blocks or leaf switches in topology.conf's
 * order; off with CR_NO_DIST_TOPO_BLOCK), while the node list and node ids
 * stay in name order, and nothing in the step's environment says so. Every
 * layout Slurm makes for block, cyclic and plane is that distribution over
 * the nodes taken in the order of their first task, so the order (a list of
 * node index ranges: "2-3,0-1") and the distribution say where every task
 * is. srun checks that they give back every task of Slurm's layout, or says
 * why not (--distribution=arbitrary).
 *
 * Text: DIST[:ORDER], DIST one of block, cyclic, plane=N; ORDER absent for
 * the nodes in their own order. Or "!" and one sentence: srun could not
 * learn the layout, and why. Bounds: HCGP_ORDER_MAX bytes (over 12,800
 * nodes in any order), whatever the task count.
 */
#ifndef HCGP_ORDER_H
#define HCGP_ORDER_H

#include <stddef.h>
#include <stdint.h>

#include "step.h"

#define HCGP_ORDER_ENV "SLURM_HCG_STEP_PLACEMENT"
#define HCGP_ORDER_MAGIC "hcgo1"
/* The text after the header, at most. */
#define HCGP_ORDER_MAX (96 * 1024)

/* srun: Slurm's layout (counts[i] tasks on node i, their ids tids[i]) into
 * the text (buf, cap bytes). plane: the layout's plane size, 0 when it is
 * not plane (or not known: the plane size is then read from the layout).
 * 0, or -1 with why (one sentence, no prefix). O(tasks log). */
int hcgp_order_encode(int nnodes, int world, const int *counts,
                      const uint32_t *const *tids, int plane, char *buf,
                      size_t cap, char *why, size_t whycap);

/* slurmstepd: the text into a step over counts (by node) of nnodes nodes
 * (hcgp_step_init_order). 0, or -1 with why. A text starting with "!" gives
 * -1 with srun's sentence (printable bytes only). */
int hcgp_order_decode(const char *text, const int *counts, int nnodes,
                      int world, struct hcgp_step *s, char *why, size_t whycap);

/* The value of HCGP_ORDER_ENV for a step: header and text (buf, cap). */
int hcgp_order_value(uint32_t job, uint32_t step, const char *text, char *buf,
                     size_t cap);
/* The text of a value, when it is this step's; NULL otherwise. */
const char *hcgp_order_text(const char *value, uint32_t job, uint32_t step);

#endif /* HCGP_ORDER_H */
