/*
 * comm_nccl.h - the NCCL side of hcg_comm_create (comm_nccl.c), for
 * create.c.
 */
#ifndef HCG_COMM_NCCL_H
#define HCG_COMM_NCCL_H

#include "comm.h"
#include "nccl_rt.h"

/* What hcg_comm_create prepares for one group. */
struct hcgrt_pending {
  struct hcg_comm *comm;
  ncclConfig_t config;
  ncclComm_t nccl;
  ncclResult_t state;
  int high_priority;
};

/* The NCCL library's version, refused when older than libhcg supports. */
int hcgrt_comm_nccl_version(int *version, hcg_error *err);
/* Options, callback and NCCL config of one group into p. */
int hcgrt_comm_prepare(hcg_ctx *ctx, const hcg_groupset *set,
                       const struct hcgrt_item *it, int version,
                       struct hcgrt_pending *p, hcg_error *err);
/* Initializes the pending communicators not skipped in one non-blocking
 * NCCL group and polls until all are ready, one fails, or the deadline
 * passes. */
int hcgrt_comm_init_all(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                        struct hcgrt_pending *p, const int *skip,
                        hcg_error *err);
/* One stream each for the communicators not skipped. */
int hcgrt_comm_streams(struct hcgrt_pending *p, int n, const int *skip,
                       hcg_error *err);
/* Aborts a pending communicator, if it was made, and its stream. */
void hcgrt_comm_abort(struct hcgrt_pending *p);
void hcgrt_comm_abort_all(struct hcgrt_pending *p, int n);

#endif /* HCG_COMM_NCCL_H */
