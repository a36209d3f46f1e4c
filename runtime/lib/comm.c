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

#include "rt.h"

#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
#define HCGRT_NCCL 1
#include "nccl_rt.h"
#include <cuda_runtime_api.h>
#elif defined(HCG_HAVE_CUDA)
#include <cuda_runtime_api.h>
#endif

struct hcg_comm {
  char key[HCG_KEY_MAX];
  int size;
  int rank;
  char *net_name;  /* kept alive: NCCL keeps pointers to its config's */
  char *comm_name; /* strings (a callback's own commName, netName)    */
  void *nccl;      /* ncclComm_t   */
  void *stream;    /* cudaStream_t */
  int state;       /* ncclResult_t while finalizing */
  int timeout_s;   /* the context's, for hcg_comm_wait */
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
hcg_nccl_comm hcg_comm_nccl(const hcg_comm *c) { return c ? c->nccl : NULL; }
hcg_cuda_stream hcg_comm_stream(const hcg_comm *c) {
  return c ? c->stream : NULL;
}

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

int hcg_comm_find_field(const hcg_ctx *ctx, int grid, enum hcg_field field,
                        hcg_comm **out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = NULL;
  hcg_request req;
  int rc = hcg_collection_request(ctx->layout, grid, field, &req);
  return rc ? rc : hcg_comm_find_request(ctx, &req, out);
}

int hcg_comm_find_embedding(const hcg_ctx *ctx, enum hcg_embedding kind,
                            hcg_comm **out) {
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

int hcg_comm_wait(hcg_comm *comm, hcg_error *err) {
  (void)comm;
  return hcg__fail(err, HCG_EINVAL,
                   "invalid argument to hcg_comm_wait (this libhcg was "
                   "built without NCCL: there are no communicators)");
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

/* What hcg_comm_create prepares for one group. */
struct pending {
  struct hcg_comm *comm;
  ncclConfig_t config;
  ncclComm_t nccl;
  ncclResult_t state;
  int high_priority;
};

/* HCG_TEST_COMM_FAIL=RANK:STAGE, a hook for tests only (doc/runtime.md):
 * hcg_comm_create then uses no device and no NCCL, counts every group as
 * initialized without making a communicator, and rank RANK fails on
 * purpose before the exchange (prepare) or at NCCL initialization (init).
 * The exchange and the agreement are real, so that a cluster without GPUs
 * can show that every peer of the failed rank learns of it. */
enum { HOOK_PREPARE, HOOK_INIT };
struct hook {
  int on, rank, stage;
};

static int read_hook(struct hook *h, hcg_error *err) {
  memset(h, 0, sizeof *h);
  const char *s = getenv("HCG_TEST_COMM_FAIL");
  if (!s)
    return HCG_OK;
  const char *colon = strchr(s, ':');
  char num[16];
  long long r;
  size_t len = colon ? (size_t)(colon - s) : 0;
  if (!colon || len == 0 || len >= sizeof num)
    goto bad;
  memcpy(num, s, len);
  num[len] = '\0';
  if (hcgrt_parse_int(num, 0, HCG_MAX_WORLD, &r))
    goto bad;
  if (strcmp(colon + 1, "prepare") == 0)
    h->stage = HOOK_PREPARE;
  else if (strcmp(colon + 1, "init") == 0)
    h->stage = HOOK_INIT;
  else
    goto bad;
  h->on = 1;
  h->rank = (int)r;
  return HCG_OK;
bad:
  return hcg__fail(err, HCG_EINVAL,
                   "HCG_TEST_COMM_FAIL='%.64s': expected RANK:prepare or "
                   "RANK:init (a test hook)",
                   s);
}

/* The NCCL library's version, refused when older than libhcg supports. */
static int nccl_version(int *version, hcg_error *err) {
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
static int prepare(hcg_ctx *ctx, const hcg_groupset *set,
                   const struct hcgrt_item *it, int version, struct pending *p,
                   hcg_error *err) {
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
static int init_scalable(const struct hcgrt_item *it, struct pending *p,
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
static int init_all(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                    struct pending *p, const int *skip, hcg_error *err) {
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

static int make_streams(struct pending *p, int n, const int *skip,
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

/* Aborts pending communicator i, if it was made, and its stream. */
static void abort_one(struct pending *p) {
  if (p->nccl)
    ncclCommAbort(p->nccl);
  p->nccl = NULL;
  if (p->comm && p->comm->stream)
    cudaStreamDestroy(p->comm->stream);
  if (p->comm)
    p->comm->stream = NULL;
}

static void abort_all(struct pending *p, int n) {
  for (int i = 0; p && i < n; i++)
    abort_one(&p[i]);
}

/* The state of one hcg_comm_create. */
struct create {
  struct hcgrt_plan plan;
  struct pending *p;
  int *skip;                /* groups not initialized: a member failed */
  struct hcgrt_verdict *v1; /* READY verdicts                          */
  struct hcgrt_verdict *v2; /* DONE verdicts                           */
  int status;               /* this rank's own failure, or HCG_OK      */
  hcg_error own;            /* its message                             */
};

/* Everything up to the exchange, none of which needs a peer. */
static void stage_local(hcg_ctx *ctx, const hcg_groupset *set,
                        const struct hook *hook, struct create *cr) {
  int n;
  cr->status = hcgrt_plan_build(set, ctx->rank, 0, &cr->plan, &cr->own);
  if (cr->status || (n = cr->plan.n) == 0)
    return;
  cr->p = calloc((size_t)n, sizeof *cr->p);
  cr->skip = calloc((size_t)n, sizeof *cr->skip);
  cr->v1 = calloc((size_t)n, sizeof *cr->v1);
  cr->v2 = calloc((size_t)n, sizeof *cr->v2);
  if (!cr->p || !cr->skip || !cr->v1 || !cr->v2) {
    cr->status =
        hcg__fail(&cr->own, HCG_ENOMEM, "out of memory for communicators");
    return;
  }
  int version = 0;
  if ((cr->status = nccl_version(&version, &cr->own)))
    return;
  cr->plan.scalable = hcgrt_nccl_scalable(version);
  for (int i = 0; i < n; i++)
    if (lookup(ctx, cr->plan.items[i].key)) {
      cr->status = hcg__fail(&cr->own, HCG_EEXIST,
                             "a communicator for group '%s' already exists "
                             "in this context (hcg_comm_destroy it first)",
                             cr->plan.items[i].key);
      return;
    }
  for (int i = 0; i < n; i++)
    if ((cr->status = prepare(ctx, set, &cr->plan.items[i], version, &cr->p[i],
                              &cr->own)))
      return;
  if (hook->on && hook->stage == HOOK_PREPARE && hook->rank == ctx->rank) {
    cr->status = hcg__fail(&cr->own, HCG_ENCCL,
                           "HCG_TEST_COMM_FAIL: rank %d fails before the "
                           "exchange (a test hook)",
                           ctx->rank);
    return;
  }
  if (!hook->on)
    cr->status = hcg_ctx_device(ctx, NULL, &cr->own);
}

/* The communicators whose groups succeeded everywhere go to the context
 * (none under the test hook, which made none). */
static int keep(hcg_ctx *ctx, struct create *cr, int *kept) {
  int n = cr->plan.n, k = 0;
  *kept = 0;
  struct hcg_comm **v = n > 0 ? calloc((size_t)n, sizeof *v) : NULL;
  if (n && !v)
    return HCG_ENOMEM;
  for (int i = 0; i < n; i++)
    if (cr->p[i].nccl) {
      cr->p[i].comm->nccl = cr->p[i].nccl;
      v[k++] = cr->p[i].comm;
    }
  int rc = registry_add(ctx, v, k);
  free(v);
  if (rc)
    return rc;
  for (int i = 0; i < n; i++)
    if (cr->p[i].nccl) { /* the context owns it now: not ours to abort */
      cr->p[i].comm = NULL;
      cr->p[i].nccl = NULL;
    }
  ctx->stats.comms_created += k;
  *kept = k;
  return HCG_OK;
}

/* The error of a rank that did its part when a peer did not: the first
 * failed group of the plan, its failed members, and how many more. */
static int peer_failure(const struct create *cr, int kept, hcg_error *err) {
  int first = -1, more = 0;
  const struct hcgrt_verdict *fv = NULL;
  for (int i = 0; i < cr->plan.n; i++) {
    const struct hcgrt_verdict *vv = cr->skip[i] ? &cr->v1[i] : &cr->v2[i];
    if (!vv->status)
      continue;
    if (first < 0) {
      first = i;
      fv = vv;
    } else {
      more++;
    }
  }
  if (first < 0)
    return HCG_OK;
  char who[256];
  hcgrt_verdict_text(fv, who, sizeof who);
  int code = fv->status == HCG_ETIMEOUT ? HCG_ETIMEOUT : HCG_ENCCL;
  return hcg__fail(
      err, code,
      "the communicator of group '%s' was not formed: %s "
      "failed %s (%s%s), so every member %s; of this rank's "
      "other groups in the call %d failed and %d were formed "
      "and kept",
      cr->plan.items[first].key, who,
      cr->skip[first] ? "before NCCL initialization" : "to initialize it",
      fv->nbad > 1 ? "the first: " : "", hcg_strerror(fv->status),
      cr->skip[first] ? "left it uninitialized" : "aborted it", more, kept);
}

static void create_free(struct create *cr) {
  for (int i = 0; cr->p && i < cr->plan.n; i++) {
    abort_one(&cr->p[i]);
    comm_free(cr->p[i].comm);
  }
  free(cr->p);
  free(cr->skip);
  free(cr->v1);
  free(cr->v2);
  hcgrt_plan_free(&cr->plan);
}

/* Returns the rank's own failure when it has one, else rc with err. */
static int finish(struct create *cr, int rc, hcg_error *err) {
  if (cr->status) {
    rc = cr->status;
    if (err)
      *err = cr->own;
  }
  create_free(cr);
  return rc;
}

/* One phase of the agreement, read by every rank, also one that failed:
 * a failure of its own there becomes the rank's failure (cr->status).
 * Returns 1 when a fence of the phase failed: *rc and err then say so and
 * the call must end, as after any failed fence. */
static int agree_phase(hcg_ctx *ctx, struct create *cr, const int *skip,
                       long long epoch, int phase, struct hcgrt_verdict *v,
                       int *rc, hcg_error *err) {
  hcg_error aerr = HCG_ERROR_INIT;
  *rc = hcgrt_agree_read(ctx, &cr->plan, skip, epoch, phase, cr->status, v,
                         &aerr);
  if (ctx->broken) {
    if (err)
      *err = aerr;
    return 1;
  }
  if (*rc && !cr->status) {
    cr->status = *rc;
    cr->own = aerr;
  }
  return 0;
}

int hcg_comm_create(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err) {
  int rc = hcgrt_check_set(ctx, set, "hcg_comm_create", err);
  struct hook hook;
  if (rc || (rc = read_hook(&hook, err)))
    return rc;

  /* From here on this rank takes part in both fences whatever happens to
   * it, so that its peers learn of its failure instead of waiting for it;
   * cr.status holds its own failure. A context that cannot fence at all
   * still reports a local failure first (it is the more useful message). */
  struct create cr;
  memset(&cr, 0, sizeof cr);
  stage_local(ctx, set, &hook, &cr);
  int n = cr.plan.n;
  if ((rc = hcgrt_exchange_usable(ctx, err)))
    return finish(&cr, rc, err);

  /* Fence 1: the ids and every rank's READY status. */
  long long epoch = hcgrt_exchange_begin(ctx);
  int flags = hook.on ? HCG_EXCHANGE_RANDOM_IDS : 0;
  hcg_error scratch = HCG_ERROR_INIT;
  if (!cr.status)
    cr.status = hcgrt_exchange_publish(ctx, &cr.plan, epoch, flags, &cr.own);
  rc = hcgrt_agree_put(ctx, epoch, HCGRT_AGREE_READY, cr.status,
                       cr.status ? &scratch : &cr.own);
  cr.status = cr.status ? cr.status : rc;
  if ((rc = hcgrt_exchange_fence(ctx, ctx->timeout_s, "the group exchange",
                                 err))) {
    if (rc == HCG_ETIMEOUT)
      hcgrt_exchange_blame(ctx, &cr.plan, epoch, err);
    return finish(&cr, rc, err);
  }

  /* Groups with a member that failed already are left alone by all. */
  if (agree_phase(ctx, &cr, NULL, epoch, HCGRT_AGREE_READY, cr.v1, &rc, err))
    return finish(&cr, rc, err);
  for (int i = 0; !cr.status && i < n; i++)
    cr.skip[i] = cr.v1[i].status != HCG_OK;
  if (!cr.status)
    cr.status = hcgrt_exchange_fetch(ctx, &cr.plan, epoch, cr.skip, &cr.own);
  else if ((rc = hcgrt_exchange_relay_fence(ctx, err)))
    return finish(&cr, rc, err);
  if (ctx->broken) /* the relay fence failed: the fences no longer pair */
    return finish(&cr, cr.status, err);
  if (!cr.status && !hook.on) {
    cr.status = init_all(ctx, &cr.plan, cr.p, cr.skip, &cr.own);
    if (!cr.status)
      cr.status = make_streams(cr.p, n, cr.skip, &cr.own);
  }
  if (!cr.status && hook.on && hook.stage == HOOK_INIT &&
      hook.rank == ctx->rank)
    cr.status = hcg__fail(&cr.own, HCG_ENCCL,
                          "HCG_TEST_COMM_FAIL: rank %d fails its NCCL "
                          "initialization (a test hook)",
                          ctx->rank);
  if (cr.status)
    abort_all(cr.p, n);

  /* Fence 2: every rank's DONE status. Peers may still be in NCCL
   * initialization (up to the timeout) when a rank arrives. */
  rc = hcgrt_agree_put(ctx, epoch, HCGRT_AGREE_DONE, cr.status,
                       cr.status ? &scratch : &cr.own);
  if (rc && !cr.status) {
    cr.status = rc;
    abort_all(cr.p, n);
  }
  if ((rc = hcgrt_exchange_fence(ctx, 2 * ctx->timeout_s + 5,
                                 "the agreement on the communicators", err)))
    return finish(&cr, rc, err); /* unknown outcome: abort everything */
  if (agree_phase(ctx, &cr, cr.skip, epoch, HCGRT_AGREE_DONE, cr.v2, &rc, err))
    return finish(&cr, rc, err); /* unknown outcome: abort everything */
  if (cr.status)
    abort_all(cr.p, n);
  for (int i = 0; !cr.status && i < n; i++)
    if (!cr.skip[i] && cr.v2[i].status)
      abort_one(&cr.p[i]); /* a member failed: all members abort it */
  if (cr.status)
    return finish(&cr, cr.status, err);

  int kept = 0;
  if (keep(ctx, &cr, &kept)) {
    abort_all(cr.p, n);
    return finish(&cr,
                  hcg__fail(err, HCG_ENOMEM, "out of memory for communicators"),
                  err);
  }
  return finish(&cr, peer_failure(&cr, kept, err), err);
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
