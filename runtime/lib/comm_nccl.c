/*
 * comm_nccl.c - NCCL communicators: the device, every
 * ncclCommInitRankConfig of a call in one non-blocking group, polled with
 * a deadline, their streams; and their orderly destruction, each once.
 * hcg_comm_create (create.c) decides which to make and keep.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "comm_nccl.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void nap(void) {
  struct timespec t = {0, 1000000}; /* 1 ms */
  nanosleep(&t, NULL);
}

static int cuda_fail(hcg_error *err, cudaError_t ce, const char *what) {
  return hcg__fail(err, HCG_ECUDA, "%s failed: %s (%s)", what,
                   cudaGetErrorName(ce), cudaGetErrorString(ce));
}

int hcg_ctx_device(hcg_ctx *ctx, int *device, hcg_error *err) {
  if (!ctx)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_ctx_device");
  if (ctx->device < 0) {
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count <= 0) {
      (void)cudaGetLastError(); /* do not leave the error sticky */
      /* Without a GPU driver the runtime says "CUDA driver version is
       * insufficient", which reads like an upgrade hint; say what it means
       * on a machine without GPUs first. */
      if (ce == cudaErrorInsufficientDriver || ce == cudaErrorNoDevice)
        return hcg__fail(err, HCG_ECUDA,
                         "no CUDA device: no GPU / no driver on this node "
                         "(or a driver older than the CUDA runtime): %s",
                         cudaGetErrorString(ce));
      if (ce != cudaSuccess)
        return hcg__fail(err, HCG_ECUDA,
                         "no CUDA device: cudaGetDeviceCount failed: %s",
                         cudaGetErrorString(ce));
      return hcg__fail(err, HCG_ECUDA,
                       "no CUDA device: cudaGetDeviceCount found none");
    }
    int dev;
    if (ctx->device_cfg >= 0) {
      if (ctx->device_cfg >= count)
        return hcg__fail(err, HCG_ECUDA,
                         "hcg_ctx_config.device is %d but only %d CUDA "
                         "devices are visible",
                         ctx->device_cfg, count);
      dev = ctx->device_cfg;
    } else {
      int local = ctx->local_rank;
      if (local < 0)
        local = hcgrt_pmix_local_rank(ctx->pmix);
      dev = (local < 0 ? 0 : local) % count;
    }
    ctx->device = dev;
  }
  cudaError_t ce = cudaSetDevice(ctx->device);
  if (ce != cudaSuccess)
    return cuda_fail(err, ce, "cudaSetDevice");
  if (device)
    *device = ctx->device;
  return HCG_OK;
}

/* The NCCL library's version, refused when older than libhcg supports. */
int hcgrt_comm_nccl_version(int *version, hcg_error *err) {
  int v = 0;
  ncclResult_t r = ncclGetVersion(&v);
  if (r != ncclSuccess)
    return hcgrt_nccl_fail(err, HCG_ENCCL, r, NULL, "ncclGetVersion failed");
  if (v < HCGRT_NCCL_MIN) {
    char have[32];
    return hcg__fail(err, HCG_ENOTSUP,
                     "the NCCL library in use is %s; libhcg needs NCCL "
                     "2.18.0 or newer",
                     hcgrt_nccl_version_text(v, have, sizeof have));
  }
  *version = v;
  return HCG_OK;
}

/* Options, callback and NCCL config of one group. */
int hcgrt_comm_prepare(hcg_ctx *ctx, const hcg_groupset *set,
                       const struct hcgrt_item *it, int version,
                       struct hcgrt_pending *p, hcg_error *err) {
  struct hcg_comm *c = calloc(1, sizeof *c);
  if (!c)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
  p->comm = c;
  snprintf(c->key, sizeof c->key, "%s", it->key);
  c->size = it->group.size;
  c->rank = it->group.index;
  c->timeout_s = ctx->timeout_s;
  hcg_comm_options o = it->entry->opts;
  ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  p->config = init;
  hcgrt_nccl_set_comm_name(&p->config, c->key);
  if (set->config_fn) {
    int rc = set->config_fn(set->config_arg, c->key, &o, &p->config);
    if (rc)
      return hcg__fail(err, rc > 0 && rc < HCG_STATUS_COUNT ? rc : HCG_EINVAL,
                       "the communicator callback refused group '%s' "
                       "(returned %d)",
                       c->key, rc);
    if ((rc = hcgrt_check_options(&o, err))) {
      hcgrt_prefix(err, "group '%s', options from the callback: ", c->key);
      return rc;
    }
    /* Strings the callback put into the NCCL config must outlive the
     * communicator, which keeps the pointers: copy them. */
    const char *name = hcgrt_nccl_comm_name(&p->config);
    if (name && name != c->key && !(c->comm_name = strdup(name)))
      return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
    if (c->comm_name)
      hcgrt_nccl_set_comm_name(&p->config, c->comm_name);
    if (p->config.netName && !o.net_name)
      o.net_name = p->config.netName;
  }
  if (o.net_name && !(c->net_name = strdup(o.net_name)))
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
  int rc = hcgrt_nccl_apply_options(&p->config, &o, c->net_name, version, err);
  if (rc) {
    hcgrt_prefix(err, "group '%s': ", c->key);
    return rc;
  }
  p->config.blocking = 0;                  /* hcg polls with its own deadline */
  p->high_priority = o.high_priority == 1; /* 0 and HCG_UNSET: default */
  return HCG_OK;
}

/* A sliced group's communicator from its nids ids, one per slice: NCCL
 * then spreads its bootstrap over that many roots instead of one. The
 * exchange makes nids > 1 only where hcgrt_nccl_scalable said so. */
static int init_scalable(const struct hcgrt_item *it, struct hcgrt_pending *p,
                         const char *mark, hcg_error *err) {
#if NCCL_VERSION_CODE >= HCGRT_NCCL_SCALABLE
  ncclUniqueId *ids = malloc((size_t)it->nids * sizeof *ids);
  if (!ids)
    return hcg__fail(err, HCG_ENOMEM,
                     "out of memory for %d NCCL ids of group "
                     "'%s'",
                     it->nids, p->comm->key);
  memcpy(ids[0].internal, it->id, HCG_ID_BYTES);
  for (int k = 1; k < it->nids; k++)
    memcpy(ids[k].internal, it->more + (size_t)(k - 1) * HCG_ID_BYTES,
           HCG_ID_BYTES);
  ncclResult_t r = ncclCommInitRankScalable(
      &p->nccl, p->comm->size, p->comm->rank, it->nids, ids, &p->config);
  free(ids);
  if (r != ncclSuccess && r != ncclInProgress)
    return hcgrt_nccl_fail(err, HCG_ENCCL, r, mark,
                           "ncclCommInitRankScalable (%d ids) for group '%s' "
                           "failed",
                           it->nids, p->comm->key);
  return HCG_OK;
#else
  (void)mark;
  return hcg__fail(err, HCG_ENOTSUP,
                   "group '%s' has %d NCCL ids, but this libhcg was "
                   "compiled against an NCCL without "
                   "ncclCommInitRankScalable",
                   p->comm->key, it->nids);
#endif
}

/* Initializes the pending communicators not skipped in one non-blocking
 * NCCL group and polls until all are ready, one fails, or the deadline
 * passes; on failure aborts all of them. */
/* Initializes the pending communicators not skipped in one non-blocking
 * NCCL group and polls until all are ready, one fails, or the deadline
 * passes. */
static int init_all(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                    struct hcgrt_pending *p, const int *skip, hcg_error *err) {
  int n = plan->n, rc = HCG_OK, count = 0, first = -1;
  for (int i = 0; i < n; i++)
    if (!skip[i]) {
      count++;
      first = first < 0 ? i : first;
      p[i].state = ncclInProgress;
    }
  if (!count)
    return HCG_OK;
  char mark[HCGRT_NCCL_MARK];
  hcgrt_nccl_mark(mark, sizeof mark);
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess)
    return hcgrt_nccl_fail(err, HCG_ENCCL, r, mark,
                           "ncclGroupStart before initializing %d "
                           "communicators failed",
                           count);
  for (int i = 0; i < n; i++) {
    if (skip[i])
      continue;
    const struct hcgrt_item *it = &plan->items[i];
    if (it->nids > 1) {
      if ((rc = init_scalable(it, &p[i], mark, err)))
        break;
      continue;
    }
    ncclUniqueId id;
    memcpy(id.internal, it->id, HCG_ID_BYTES);
    r = ncclCommInitRankConfig(&p[i].nccl, p[i].comm->size, id, p[i].comm->rank,
                               &p[i].config);
    if (r != ncclSuccess && r != ncclInProgress) {
      rc = hcgrt_nccl_fail(err, HCG_ENCCL, r, mark,
                           "ncclCommInitRankConfig for group '%s' failed",
                           p[i].comm->key);
      break;
    }
  }
  r = ncclGroupEnd();
  if (!rc && r != ncclSuccess && r != ncclInProgress) {
    /* Name the group that failed, when NCCL says which. */
    int bad = -1;
    ncclResult_t why = r;
    for (int i = 0; i < n && bad < 0; i++) {
      ncclResult_t st = ncclSuccess;
      if (!skip[i] && p[i].nccl &&
          ncclCommGetAsyncError(p[i].nccl, &st) == ncclSuccess &&
          st != ncclSuccess && st != ncclInProgress) {
        bad = i;
        why = st;
      }
    }
    if (bad >= 0)
      rc = hcgrt_nccl_fail(err, HCG_ENCCL, why, mark,
                           "initializing the NCCL communicator for group "
                           "'%s' failed (in ncclGroupEnd)",
                           p[bad].comm->key);
    else
      rc = hcgrt_nccl_fail(err, HCG_ENCCL, r, mark,
                           "ncclGroupEnd of the initialization of %d "
                           "communicators failed (the first is group '%s'; "
                           "NCCL did not say which failed)",
                           count, p[first].comm->key);
  }

  double deadline = now_s() + ctx->timeout_s;
  while (!rc) {
    int busy = -1;
    for (int i = 0; i < n && !rc; i++) {
      if (skip[i] || p[i].state != ncclInProgress)
        continue;
      ncclResult_t st = ncclInProgress;
      r = ncclCommGetAsyncError(p[i].nccl, &st);
      p[i].state = r != ncclSuccess ? r : st;
      if (p[i].state == ncclInProgress)
        busy = i;
      else if (p[i].state != ncclSuccess)
        rc = hcgrt_nccl_fail(err, HCG_ENCCL, p[i].state, mark,
                             "initializing the NCCL communicator for group "
                             "'%s' failed",
                             p[i].comm->key);
    }
    if (rc || busy < 0)
      break;
    if (now_s() > deadline) {
      rc = hcg__fail(err, HCG_ETIMEOUT,
                     "NCCL initialization did not complete in %d s (group "
                     "'%s' still in progress): a member did not join",
                     ctx->timeout_s, p[busy].comm->key);
      break;
    }
    nap();
  }
  return rc;
}

/* One stream each for the communicators not skipped. */
static int streams(struct hcgrt_pending *p, int n, const int *skip,
                   hcg_error *err) {
  int least = 0, greatest = 0;
  cudaError_t ce = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  if (ce != cudaSuccess)
    return cuda_fail(err, ce, "cudaDeviceGetStreamPriorityRange");
  for (int i = 0; i < n; i++) {
    if (skip[i])
      continue;
    cudaStream_t s;
    ce = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                      p[i].high_priority ? greatest : least);
    if (ce != cudaSuccess)
      return cuda_fail(err, ce, "cudaStreamCreateWithPriority");
    p[i].comm->stream = s;
  }
  return HCG_OK;
}

static int nccl_ready(hcg_ctx *ctx, hcg_error *err) {
  return hcg_ctx_device(ctx, NULL, err);
}

static int nccl_init(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                     struct hcgrt_pending *p, const int *skip, hcg_error *err) {
  int rc = init_all(ctx, plan, p, skip, err);
  return rc ? rc : streams(p, plan->n, skip, err);
}

const struct hcgrt_comm_backend hcgrt_comm_nccl = {
    .id_flags = 0, /* NCCL's own ids */
    .check = NULL,
    .ready = nccl_ready,
    .init = nccl_init,
};

/* Aborts pending communicator i, if it was made, and its stream. */
void hcgrt_comm_abort(struct hcgrt_pending *p) {
  if (p->nccl)
    ncclCommAbort(p->nccl);
  p->nccl = NULL;
  if (p->comm && p->comm->stream)
    cudaStreamDestroy(p->comm->stream);
  if (p->comm)
    p->comm->stream = NULL;
}

void hcgrt_comm_abort_all(struct hcgrt_pending *p, int n) {
  for (int i = 0; p && i < n; i++)
    hcgrt_comm_abort(&p[i]);
}

int hcg_comm_wait(hcg_comm *comm, hcg_error *err) {
  if (!comm || !comm->nccl)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_comm_wait");
  char mark[HCGRT_NCCL_MARK];
  hcgrt_nccl_mark(mark, sizeof mark);
  double deadline = now_s() + comm->timeout_s;
  for (;;) {
    ncclResult_t st = ncclInProgress;
    ncclResult_t r = ncclCommGetAsyncError(comm->nccl, &st);
    if (r != ncclSuccess)
      st = r;
    if (st == ncclSuccess)
      return HCG_OK;
    if (st != ncclInProgress)
      return hcgrt_nccl_fail(err, HCG_ENCCL, st, mark,
                             "the communicator of group '%s' failed "
                             "(hcg_comm_destroy aborts it)",
                             comm->key);
    if (now_s() > deadline)
      return hcg__fail(err, HCG_ETIMEOUT,
                       "the communicator of group '%s' was still in "
                       "progress after %d s",
                       comm->key, comm->timeout_s);
    nap();
  }
}

/* Finalizes v[0..n-1] together, polls, then destroys (or aborts) each and
 * frees it. The caller has taken them out of the registry. */
static int destroy_list(hcg_ctx *ctx, struct hcg_comm **v, int n,
                        hcg_error *err) {
  if (n == 0)
    return HCG_OK;
  if (ctx->device >= 0)
    cudaSetDevice(ctx->device);
  int rc = HCG_OK;
  char mark[HCGRT_NCCL_MARK];
  hcgrt_nccl_mark(mark, sizeof mark);
  for (int i = 0; i < n; i++) {
    ncclResult_t r = ncclCommFinalize(v[i]->nccl);
    v[i]->state = r == ncclSuccess ? ncclInProgress : r;
  }
  double deadline = now_s() + ctx->timeout_s;
  for (;;) {
    int busy = -1;
    for (int i = 0; i < n; i++) {
      if (v[i]->state != ncclInProgress)
        continue;
      ncclResult_t st = ncclInProgress;
      ncclResult_t r = ncclCommGetAsyncError(v[i]->nccl, &st);
      v[i]->state = r != ncclSuccess ? r : st;
      if (v[i]->state == ncclInProgress)
        busy = i;
    }
    if (busy < 0)
      break;
    if (now_s() > deadline) {
      rc = hcg__fail(err, HCG_ETIMEOUT,
                     "finalizing NCCL communicator '%s' did not complete in "
                     "%d s (a member did not destroy it); aborted",
                     v[busy]->key, ctx->timeout_s);
      break;
    }
    nap();
  }
  for (int i = 0; i < n; i++) {
    if (v[i]->state == ncclSuccess) {
      ncclCommDestroy(v[i]->nccl);
    } else {
      if (!rc && v[i]->state != ncclInProgress)
        rc = hcgrt_nccl_fail(err, HCG_ENCCL, v[i]->state, mark,
                             "finalizing the NCCL communicator for group "
                             "'%s' failed",
                             v[i]->key);
      ncclCommAbort(v[i]->nccl);
    }
    if (v[i]->stream)
      cudaStreamDestroy(v[i]->stream);
    hcgrt_comm_free(v[i]);
  }
  ctx->stats.comms_destroyed += n;
  return rc;
}

int hcg_comm_destroy(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  if (!ctx)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_comm_destroy");
  if (!set) {
    struct hcgrt_comm_list all = ctx->comms;
    memset(&ctx->comms, 0, sizeof ctx->comms);
    int rc = destroy_list(ctx, all.v, all.n, err);
    free(all.v);
    return rc;
  }
  int rc = hcgrt_check_set(ctx, set, "hcg_comm_destroy", err);
  if (rc)
    return rc;
  struct hcgrt_plan plan;
  if ((rc = hcgrt_plan_build(set, ctx->rank, 0, &plan, err)))
    return rc;
  struct hcg_comm **v = plan.n > 0 ? calloc((size_t)plan.n, sizeof *v) : NULL;
  if (plan.n && !v) {
    hcgrt_plan_free(&plan);
    return hcg__fail(err, HCG_ENOMEM, "out of memory for hcg_comm_destroy");
  }
  int n = 0;
  for (int i = 0; i < plan.n; i++) {
    struct hcg_comm *c = hcgrt_comm_lookup(ctx, plan.items[i].key);
    if (c) {
      hcgrt_comm_unregister(ctx, c);
      v[n++] = c;
    }
  }
  rc = destroy_list(ctx, v, n, err);
  free(v);
  hcgrt_plan_free(&plan);
  return rc;
}

void hcgrt_comms_free_all(hcg_ctx *ctx) { hcg_comm_destroy(ctx, NULL, NULL); }
