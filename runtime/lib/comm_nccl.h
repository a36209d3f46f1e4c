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
/* Aborts a pending communicator, if it was made, and its stream. */
void hcgrt_comm_abort(struct hcgrt_pending *p);
void hcgrt_comm_abort_all(struct hcgrt_pending *p, int n);

/* The steps of hcg_comm_create that touch a device, which create.c takes
 * from a table as a round takes its fences: NCCL's (comm_nccl.c) in
 * libhcg; the tests' (runtime/testing/comm_fail.c) makes no communicator,
 * so that a cluster without GPUs runs the real exchange and agreement. */
struct hcgrt_comm_backend {
  unsigned id_flags; /* hcg_exchange flags of the ids it publishes */
  /* Refuses the call before it plans anything, or HCG_OK; may be NULL. */
  int (*check)(hcg_error *err);
  /* This rank's last step before the exchange (NCCL's: the device). */
  int (*ready)(hcg_ctx *ctx, hcg_error *err);
  /* Forms the communicators not skipped, with their streams. */
  int (*init)(hcg_ctx *ctx, const struct hcgrt_plan *plan,
              struct hcgrt_pending *p, const int *skip, hcg_error *err);
};

extern const struct hcgrt_comm_backend hcgrt_comm_nccl;
/* hcg_comm_create's backend: &hcgrt_comm_nccl, unless a test program
 * installed its own before main. */
extern const struct hcgrt_comm_backend *hcgrt_comm_backend;

/* hcg_comm_create through backend b. */
int hcgrt_comm_create(hcg_ctx *ctx, const hcg_groupset *set,
                      const struct hcgrt_comm_backend *b, hcg_error *err);

#endif /* HCG_COMM_NCCL_H */
