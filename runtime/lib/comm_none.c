/*
 * comm_none.c - the communicator calls of a libhcg built without NCCL
 * (runtime/Makefile.am picks it instead of comm_nccl.c and create.c):
 * each says why there are no communicators.
 */
#include "config.h"

#include <stdlib.h>

#include "comm.h"

int hcg_ctx_device(hcg_ctx *ctx, int *device, hcg_error *err) {
  (void)ctx;
  (void)device;
#ifdef HCG_HAVE_CUDA
  return hcg__fail(err, HCG_ENOTSUP,
                   "this libhcg was built without NCCL (configure "
                   "--with-nccl): no communicators");
#else
  return hcg__fail(err, HCG_ENOTSUP,
                   "this libhcg was built without CUDA (configure "
                   "--with-cuda): no devices");
#endif
}

int hcg_comm_create(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  (void)ctx;
  (void)set;
  return hcg__fail(err, HCG_ENOTSUP,
                   "this libhcg was built without NCCL (configure "
                   "--with-nccl and --with-cuda): communicators cannot be "
                   "created; hcg_exchange_ids still exchanges ids");
}

int hcg_comm_destroy(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  (void)set;
  if (!ctx)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_comm_destroy");
  return HCG_OK; /* nothing can exist */
}

int hcg_comm_wait(hcg_comm *comm, hcg_error *err) {
  (void)comm;
  return hcg__fail(err, HCG_EINVAL,
                   "invalid argument to hcg_comm_wait (this libhcg was "
                   "built without NCCL: there are no communicators)");
}

void hcgrt_comms_free_all(hcg_ctx *ctx) {
  for (int i = 0; i < ctx->comms.n; i++)
    hcgrt_comm_free(ctx->comms.v[i]);
  free(ctx->comms.v);
  ctx->comms.v = NULL;
  ctx->comms.n = ctx->comms.cap = 0;
}
