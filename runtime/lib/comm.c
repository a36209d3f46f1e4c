/*
 * comm.c - NCCL communicators for a set of groups: the device, one
 * exchange, every ncclCommInitRankConfig in one non-blocking group, polled
 * with a deadline; and their orderly destruction, each once.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
#define HCGRT_NCCL 1
#include <cuda_runtime_api.h>
/* nccl.h declares some functions without prototypes, e.g. ncclGroupStart(). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#elif defined(HCG_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

#include "rt.h"

struct hcg_comm {
  char key[HCG_KEY_MAX];
  int size;
  int rank;
  char *net_name;  /* kept alive: NCCL keeps pointers to its config's */
  char *comm_name; /* strings (a callback's own commName, netName)    */
  void *nccl;      /* ncclComm_t   */
  void *stream;    /* cudaStream_t */
  int state;       /* ncclResult_t while finalizing */
};

/* ---- the registry of a context ----------------------------------------- */

static struct hcg_comm *lookup(const hcg_ctx *ctx, const char *key) {
  for (int i = 0; i < ctx->comms.n; i++)
    if (strcmp(ctx->comms.v[i]->key, key) == 0)
      return ctx->comms.v[i];
  return NULL;
}

int hcg_ctx_num_comms(const hcg_ctx *ctx) { return ctx ? ctx->comms.n : 0; }

const char *hcg_comm_key(const hcg_comm *c) { return c ? c->key : NULL; }
int hcg_comm_size(const hcg_comm *c) { return c ? c->size : 0; }
int hcg_comm_rank(const hcg_comm *c) { return c ? c->rank : -1; }
void *hcg_comm_nccl(const hcg_comm *c) { return c ? c->nccl : NULL; }
void *hcg_comm_stream(const hcg_comm *c) { return c ? c->stream : NULL; }

int hcg_comm_find_request(const hcg_ctx *ctx, const hcg_request *req,
                          hcg_comm **out) {
  if (!ctx || !req || !out)
    return HCG_EINVAL;
  *out = NULL;
  hcg_group g;
  int rc = hcg_group_of_rank(ctx->layout, req, ctx->rank, &g);
  if (rc)
    return rc;
  char key[HCG_KEY_MAX];
  if ((rc = hcg_request_key(ctx->layout, req, key, sizeof key)))
    return rc;
  *out = lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

int hcg_comm_find(const hcg_ctx *ctx, const char *spec, hcg_comm **out,
                  hcg_error *err) {
  if (!ctx || !spec || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_comm_find");
  *out = NULL;
  hcg_request req;
  int rc = hcg_request_parse(ctx->layout, spec, &req, err);
  if (rc)
    return rc;
  rc = hcg_comm_find_request(ctx, &req, out);
  if (rc == HCG_ENOTMEMBER)
    return hcg__fail(err, rc, "rank %d is not in grid '%s' of spec '%s'",
                     ctx->rank, hcg_grid_name(ctx->layout, req.grid), spec);
  if (rc == HCG_ENOTFOUND) {
    char key[HCG_KEY_MAX];
    hcg_request_key(ctx->layout, &req, key, sizeof key);
    return hcg__fail(err, rc,
                     "no communicator for group '%s' (spec '%s') "
                     "was created in this context",
                     key, spec);
  }
  if (rc)
    return hcg__fail(err, rc, "spec '%s': %s", spec, hcg_strerror(rc));
  return HCG_OK;
}

int hcg_comm_find_key(const hcg_ctx *ctx, const char *key, hcg_comm **out) {
  if (!ctx || !key || !out)
    return HCG_EINVAL;
  *out = lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

int hcg_comm_find_field(const hcg_ctx *ctx, int grid, int field,
                        hcg_comm **out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = NULL;
  hcg_request req;
  int rc = hcg_collection_request(ctx->layout, grid, field, &req);
  return rc ? rc : hcg_comm_find_request(ctx, &req, out);
}

int hcg_comm_find_embedding(const hcg_ctx *ctx, int kind, hcg_comm **out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = NULL;
  int members[2], n;
  int rc =
      hcg_embedding_group_of_rank(ctx->layout, kind, ctx->rank, members, &n);
  if (rc)
    return rc;
  char key[HCG_KEY_MAX];
  if ((rc = hcgrt_embedding_key(ctx->layout, kind, key, sizeof key)))
    return rc;
  *out = lookup(ctx, key);
  return *out ? HCG_OK : HCG_ENOTFOUND;
}

#ifdef HCGRT_NCCL
static int registry_add(hcg_ctx *ctx, struct hcg_comm **v, int n) {
  struct hcgrt_comm_list *l = &ctx->comms;
  if (l->n + n > l->cap) {
    int cap = l->cap ? l->cap : 16;
    while (cap < l->n + n)
      cap *= 2;
    struct hcg_comm **nv = realloc(l->v, (size_t)cap * sizeof *nv);
    if (!nv)
      return HCG_ENOMEM;
    l->v = nv;
    l->cap = cap;
  }
  for (int i = 0; i < n; i++)
    l->v[l->n++] = v[i];
  return HCG_OK;
}

static void registry_remove(hcg_ctx *ctx, const struct hcg_comm *c) {
  struct hcgrt_comm_list *l = &ctx->comms;
  for (int i = 0; i < l->n; i++)
    if (l->v[i] == c) {
      l->v[i] = l->v[--l->n];
      return;
    }
}
#endif

static void comm_free(struct hcg_comm *c) {
  if (!c)
    return;
  free(c->net_name);
  free(c->comm_name);
  free(c);
}

#ifndef HCGRT_NCCL

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

void hcgrt_comms_free_all(hcg_ctx *ctx) {
  for (int i = 0; i < ctx->comms.n; i++)
    comm_free(ctx->comms.v[i]);
  free(ctx->comms.v);
  ctx->comms.v = NULL;
  ctx->comms.n = ctx->comms.cap = 0;
}

#else /* HCGRT_NCCL */

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

/* What hcg_comm_create prepares for one group. */
struct pending {
  struct hcg_comm *comm;
  ncclConfig_t config;
  ncclComm_t nccl;
  ncclResult_t state;
  int high_priority;
};

static void apply_options(ncclConfig_t *cfg, const hcg_comm_options *o,
                          const char *net_name) {
  if (o->min_ctas > 0)
    cfg->minCTAs = o->min_ctas;
  if (o->max_ctas > 0)
    cfg->maxCTAs = o->max_ctas;
  if (o->cga_cluster_size > 0)
    cfg->cgaClusterSize = o->cga_cluster_size;
  if (o->split_share >= 0)
    cfg->splitShare = o->split_share;
  if (o->collnet_enable >= 0)
    cfg->collnetEnable = o->collnet_enable;
  if (o->traffic_class >= 0)
    cfg->trafficClass = o->traffic_class;
  if (net_name)
    cfg->netName = net_name;
}

/* Options, callback and NCCL config of one group. */
static int prepare(const hcg_groupset *set, const struct hcgrt_item *it,
                   struct pending *p, hcg_error *err) {
  struct hcg_comm *c = calloc(1, sizeof *c);
  if (!c)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
  p->comm = c;
  snprintf(c->key, sizeof c->key, "%s", it->key);
  c->size = it->group.size;
  c->rank = it->group.index;
  hcg_comm_options o = it->entry->opts;
  ncclConfig_t init = NCCL_CONFIG_INITIALIZER;
  p->config = init;
  p->config.commName = c->key;
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
    if (p->config.commName && p->config.commName != c->key &&
        !(c->comm_name = strdup(p->config.commName)))
      return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
    if (c->comm_name)
      p->config.commName = c->comm_name;
    if (p->config.netName && !o.net_name)
      o.net_name = p->config.netName;
  }
  if (o.net_name && !(c->net_name = strdup(o.net_name)))
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a communicator");
  apply_options(&p->config, &o, c->net_name);
  p->config.blocking = 0; /* hcg polls with its own deadline */
  p->high_priority = o.high_priority;
  return HCG_OK;
}

static int nccl_fail(hcg_error *err, ncclResult_t r, ncclComm_t comm,
                     const char *what, const char *key) {
  const char *last = ncclGetLastError(comm);
  return hcg__fail(err, HCG_ENCCL, "%s for group '%s' failed: %s%s%s", what,
                   key, ncclGetErrorString(r), last && *last ? ": " : "",
                   last ? last : "");
}

/* Initializes every pending communicator in one non-blocking NCCL group and
 * polls until all are ready, one fails, or the deadline passes; on failure
 * aborts all of them. */
static int init_all(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                    struct pending *p, hcg_error *err) {
  int n = plan->n, rc = HCG_OK;
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess)
    return nccl_fail(err, r, NULL, "ncclGroupStart", plan->items[0].key);
  for (int i = 0; i < n; i++) {
    ncclUniqueId id;
    memcpy(id.internal, plan->items[i].id, HCG_ID_BYTES);
    p[i].state = ncclInProgress;
    r = ncclCommInitRankConfig(&p[i].nccl, p[i].comm->size, id, p[i].comm->rank,
                               &p[i].config);
    if (r != ncclSuccess && r != ncclInProgress) {
      rc = nccl_fail(err, r, p[i].nccl, "ncclCommInitRankConfig",
                     p[i].comm->key);
      break;
    }
  }
  r = ncclGroupEnd();
  if (!rc && r != ncclSuccess && r != ncclInProgress)
    rc = nccl_fail(err, r, NULL, "ncclGroupEnd of the initialization",
                   plan->items[0].key);

  double deadline = now_s() + ctx->timeout_s;
  while (!rc) {
    int busy = -1;
    for (int i = 0; i < n && !rc; i++) {
      if (p[i].state != ncclInProgress)
        continue;
      ncclResult_t st = ncclInProgress;
      r = ncclCommGetAsyncError(p[i].nccl, &st);
      p[i].state = r != ncclSuccess ? r : st;
      if (p[i].state == ncclInProgress)
        busy = i;
      else if (p[i].state != ncclSuccess)
        rc = nccl_fail(err, p[i].state, p[i].nccl,
                       "initializing the NCCL communicator", p[i].comm->key);
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
  if (rc)
    for (int i = 0; i < n; i++)
      if (p[i].nccl) {
        ncclCommAbort(p[i].nccl);
        p[i].nccl = NULL;
      }
  return rc;
}

static int make_streams(struct pending *p, int n, hcg_error *err) {
  int least = 0, greatest = 0;
  cudaError_t ce = cudaDeviceGetStreamPriorityRange(&least, &greatest);
  if (ce != cudaSuccess)
    return cuda_fail(err, ce, "cudaDeviceGetStreamPriorityRange");
  for (int i = 0; i < n; i++) {
    cudaStream_t s;
    ce = cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking,
                                      p[i].high_priority ? greatest : least);
    if (ce != cudaSuccess)
      return cuda_fail(err, ce, "cudaStreamCreateWithPriority");
    p[i].comm->stream = s;
  }
  return HCG_OK;
}

int hcg_comm_create(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  int rc = hcgrt_check_set(ctx, set, "hcg_comm_create", err);
  if (rc)
    return rc;
  struct hcgrt_plan plan;
  if ((rc = hcgrt_plan_build(set, ctx->rank, 0, &plan, err)))
    return rc;
  struct pending *p = NULL;
  for (int i = 0; i < plan.n && !rc; i++)
    if (lookup(ctx, plan.items[i].key))
      rc = hcg__fail(err, HCG_EEXIST,
                     "a communicator for group '%s' already exists in this "
                     "context (hcg_comm_destroy it first)",
                     plan.items[i].key);
  /* Options and callbacks first: they need no device. */
  if (!rc && plan.n > 0 && !(p = calloc((size_t)plan.n, sizeof *p)))
    rc = hcg__fail(err, HCG_ENOMEM, "out of memory for communicators");
  for (int i = 0; i < plan.n && !rc; i++)
    rc = prepare(set, &plan.items[i], &p[i], err);
  /* A rank in none of the groups needs no device, only the fence. */
  if (!rc && plan.n > 0)
    rc = hcg_ctx_device(ctx, NULL, err);
  if (!rc)
    rc = hcgrt_exchange_plan(ctx, &plan, 0, err);
  if (!rc && plan.n > 0)
    rc = init_all(ctx, &plan, p, err);
  if (!rc && plan.n > 0 && (rc = make_streams(p, plan.n, err)))
    for (int i = 0; i < plan.n; i++)
      ncclCommAbort(p[i].nccl);
  if (!rc) {
    struct hcg_comm **v = plan.n > 0 ? calloc((size_t)plan.n, sizeof *v) : NULL;
    for (int i = 0; v && i < plan.n; i++) {
      p[i].comm->nccl = p[i].nccl;
      v[i] = p[i].comm;
    }
    if ((plan.n && !v) || registry_add(ctx, v, plan.n)) {
      for (int i = 0; i < plan.n; i++) {
        ncclCommAbort(p[i].nccl);
        p[i].comm->nccl = NULL;
      }
      rc = hcg__fail(err, HCG_ENOMEM, "out of memory for communicators");
    } else {
      ctx->stats.comms_created += plan.n;
      for (int i = 0; i < plan.n; i++)
        p[i].comm = NULL; /* the context owns them now */
    }
    free(v);
  }
  for (int i = 0; p && i < plan.n; i++) {
    if (p[i].comm && p[i].comm->stream)
      cudaStreamDestroy(p[i].comm->stream);
    comm_free(p[i].comm);
  }
  free(p);
  hcgrt_plan_free(&plan);
  return rc;
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
        rc = nccl_fail(err, v[i]->state, v[i]->nccl,
                       "finalizing the NCCL communicator", v[i]->key);
      ncclCommAbort(v[i]->nccl);
    }
    if (v[i]->stream)
      cudaStreamDestroy(v[i]->stream);
    comm_free(v[i]);
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
    struct hcg_comm *c = lookup(ctx, plan.items[i].key);
    if (c) {
      registry_remove(ctx, c);
      v[n++] = c;
    }
  }
  rc = destroy_list(ctx, v, n, err);
  free(v);
  hcgrt_plan_free(&plan);
  return rc;
}

void hcgrt_comms_free_all(hcg_ctx *ctx) { hcg_comm_destroy(ctx, NULL, NULL); }

#endif /* HCGRT_NCCL */
