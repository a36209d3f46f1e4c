/*
 * order_slurm.h - srun's side of order.h (order_slurm.c).
 */
#ifndef HCGP_ORDER_SLURM_H
#define HCGP_ORDER_SLURM_H

#include <slurm/spank.h>
#include <stdint.h>

/* srun: HCGP_ORDER_ENV for the step, from Slurm's layout. */
void hcgp_order_set(spank_t sp, uint32_t job, uint32_t step);
/* srun: no value, so that an outer step's never reaches this one. */
void hcgp_order_unset(void);

#endif /* HCGP_ORDER_SLURM_H */
