/*
 * pmix.c - the few PMIx calls libhcg makes, each bounded in time.
 *
 * Written against hcg's own declaration of PMIx's client ABI (pmix_abi.h)
 * and calling PMIx through the table hcgrt_pmix_bind gives: the same code
 * whether libhcg is linked with libpmix (pmix_link.c), opens it at run time
 * (pmix_dl.c) or has no PMIx (pmix_none.c).
 *
 * The fence is issued non-blocking and awaited with a deadline of our own,
 * the caller's timeout. The PMIx server gets twice as long (PMIX_TIMEOUT,
 * at least GRACE_S more), only so that it drops the fence some time after
 * we gave up and a process arriving after that still times out. Our
 * deadline must come first: when the server's own timeout fires, PMIx
 * 5.0.7 tells the first local process of the fence that it timed out and
 * every other local process that it succeeded (its _mdxcbfunc packs the
 * status for the first reply, then overwrites it with the result of
 * PMIX_GDS_MARK_MODEX_COMPLETE; fixed upstream by openpmix commit
 * 75d11d40e, in no release yet), so a success that comes from the
 * server's timeout would be a lie. (A local process that reaches the fence
 * a whole timeout after the node's first can still be told one; by then
 * the first has failed.) What the callback touches lives in a
 * heap block that the last of the caller and the callback frees: a caller
 * that gives up never leaves PMIx a dangling pointer. Gets carry
 * PMIX_TIMEOUT (see hcgrt_pmix_get_all).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pmix_abi.h"
#include "rt.h"

_Static_assert(HCGPX_MAX_KEYLEN == HCGRT_PMIX_MAX_KEYLEN, "rt.h assumes 511");

/* The least the PMIx server waits for a fence beyond our own deadline. */
enum { GRACE_S = 2 };

struct hcgrt_pmix {
  const struct hcgpx_api *api;
  hcgpx_proc_t me;
};

void (*hcgrt_pmix_gets_seen)(int by, const struct hcgrt_get *gets, int n);

int hcgrt_pmix_present(void) { return getenv("PMIX_NAMESPACE") != NULL; }

int hcgrt_pmix_usable(hcg_error *err) {
  const struct hcgpx_api *api;
  return hcgrt_pmix_bind(&api, err);
}

static int pmix_error(const struct hcgpx_api *api, hcg_error *err,
                      hcgpx_status_t st, const char *what) {
  if (st == HCGPX_ERR_TIMEOUT)
    return hcg__fail(err, HCG_ETIMEOUT, "%s timed out (PMIx: %s)", what,
                     api->error_string(st));
  return hcg__fail(err, HCG_EPMIX, "%s failed: %s (PMIx status %d)", what,
                   api->error_string(st), (int)st);
}

/* PMIX_INFO_CONSTRUCT, then PMIx_Info_load. */
static void load_int_info(const struct hcgpx_api *api, hcgpx_info_t *info,
                          const char *key, int v) {
  memset(info, 0, sizeof *info);
  api->info_load(info, key, &v, HCGPX_INT);
}

static void load_bool_info(const struct hcgpx_api *api, hcgpx_info_t *info,
                           const char *key, int v) {
  bool b = v != 0;
  memset(info, 0, sizeof *info);
  api->info_load(info, key, &b, HCGPX_BOOL);
}

/* PMIX_INFO_DESTRUCT of an info hcg loaded (never a persistent one). */
static void info_destruct(const struct hcgpx_api *api, hcgpx_info_t *info) {
  api->value_destruct(&info->value);
}

/* PMIX_VALUE_RELEASE: the value PMIx_Get allocated, and what it holds. */
static void value_release(const struct hcgpx_api *api, hcgpx_value_t *v) {
  if (!v)
    return;
  api->value_destruct(v);
  free(v);
}

/* PMIX_PROC_LOAD */
static void proc_load(hcgpx_proc_t *p, const char *nspace, hcgpx_rank_t rank) {
  memset(p, 0, sizeof *p);
  snprintf(p->nspace, sizeof p->nspace, "%s", nspace);
  p->rank = rank;
}

/* Reads an unsigned number of any PMIx integer type. */
static int value_number(const hcgpx_value_t *v, long long *out) {
  switch (v->type) {
  case HCGPX_UINT32:
    *out = v->data.uint32;
    return 0;
  case HCGPX_UINT16:
    *out = v->data.uint16;
    return 0;
  case HCGPX_UINT64:
    *out = (long long)v->data.uint64;
    return 0;
  case HCGPX_INT:
    *out = v->data.integer;
    return 0;
  case HCGPX_UINT:
    *out = v->data.uint;
    return 0;
  case HCGPX_PROC_RANK:
    *out = v->data.rank;
    return 0;
  default:
    return -1;
  }
}

int hcgrt_pmix_open(struct hcgrt_pmix **out, int *rank, long long *job_size,
                    hcg_error *err) {
  *out = NULL;
  const struct hcgpx_api *api;
  int rc = hcgrt_pmix_bind(&api, err);
  if (rc)
    return rc;
  struct hcgrt_pmix *px = calloc(1, sizeof *px);
  if (!px)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for PMIx state");
  px->api = api;
  hcgpx_status_t st = api->init(&px->me, NULL, 0);
  if (st != HCGPX_SUCCESS) {
    /* A first PMIx_Init without a server still leaves PMIx initialized
     * (as a singleton); undo that, and only that. */
    if (api->initialized())
      api->finalize(NULL, 0);
    free(px);
    return hcg__fail(err, HCG_EPMIX,
                     "PMIx_Init failed: %s (PMIx status %d): the PMIx server "
                     "of this step cannot be reached (was it started with "
                     "srun --mpi=pmix?)",
                     api->error_string(st), (int)st);
  }
  *rank = (int)px->me.rank;
  *job_size = -1;
  hcgpx_proc_t job;
  proc_load(&job, px->me.nspace, HCGPX_RANK_WILDCARD);
  hcgpx_value_t *v = NULL;
  st = api->get(&job, HCGPX_JOB_SIZE, NULL, 0, &v);
  if (st != HCGPX_SUCCESS || !v || value_number(v, job_size)) {
    value_release(api, v);
    api->finalize(NULL, 0);
    free(px);
    if (st == HCGPX_SUCCESS)
      return hcg__fail(err, HCG_EPMIX,
                       "PMIx gave PMIX_JOB_SIZE with an unexpected type");
    return pmix_error(api, err, st, "PMIx_Get(PMIX_JOB_SIZE)");
  }
  value_release(api, v);
  *out = px;
  return HCG_OK;
}

static void free_orphans(void);

void hcgrt_pmix_close(struct hcgrt_pmix *px) {
  if (!px)
    return;
  px->api->finalize(NULL, 0);
  if (!px->api->initialized())
    free_orphans();
  free(px);
}

int hcgrt_pmix_local_rank(struct hcgrt_pmix *px) {
  if (!px)
    return -1;
  hcgpx_value_t *v = NULL;
  long long lr = -1;
  if (px->api->get(&px->me, HCGPX_LOCAL_RANK, NULL, 0, &v) == HCGPX_SUCCESS &&
      v && value_number(v, &lr))
    lr = -1;
  value_release(px->api, v);
  return lr >= 0 && lr <= HCG_MAX_WORLD ? (int)lr : -1;
}

int hcgrt_pmix_have_own(struct hcgrt_pmix *px, const char *key) {
  hcgpx_info_t info;
  load_bool_info(px->api, &info, HCGPX_OPTIONAL, 1);
  hcgpx_value_t *v = NULL;
  hcgpx_status_t st = px->api->get(&px->me, key, &info, 1, &v);
  value_release(px->api, v);
  info_destruct(px->api, &info);
  return st == HCGPX_SUCCESS;
}

int hcgrt_pmix_put(struct hcgrt_pmix *px, const char *key,
                   const unsigned char *data, size_t len, hcg_error *err) {
  hcgpx_value_t v;
  memset(&v, 0, sizeof v);
  v.type = HCGPX_BYTE_OBJECT;
  v.data.bo.bytes = (char *)data; /* PMIx_Put copies it */
  v.data.bo.size = len;
  hcgpx_status_t st = px->api->put(HCGPX_GLOBAL, key, &v);
  if (st != HCGPX_SUCCESS)
    return pmix_error(px->api, err, st, "PMIx_Put of a group id");
  return HCG_OK;
}

int hcgrt_pmix_commit(struct hcgrt_pmix *px, hcg_error *err) {
  hcgpx_status_t st = px->api->commit();
  if (st != HCGPX_SUCCESS)
    return pmix_error(px->api, err, st, "PMIx_Commit");
  return HCG_OK;
}

/* ---- bounded waits ------------------------------------------------------ */

/* State shared by a caller and its outstanding callbacks. */
struct waitblock {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int pending;   /* callbacks not yet run                   */
  int abandoned; /* the caller gave up: the last callback frees */
  hcgpx_status_t status;
  const struct hcgpx_api *api;
  hcgpx_info_t info[2];
  int ninfo;
  struct waitblock *prev, *next; /* on the orphans list when abandoned */
};

/* Blocks whose caller gave up, until their last callback runs. PMIx may
 * never run it: PMIx_Finalize drops a fence still pending at the server
 * without calling back. Listed here, such a block stays reachable, and is
 * freed once PMIx is finalized for good (no callback can run after that).
 * Lock order: orphans_mu before a block's mu. */
static pthread_mutex_t orphans_mu = PTHREAD_MUTEX_INITIALIZER;
static struct waitblock *orphans;

static void waitblock_free(struct waitblock *wb) {
  for (int i = 0; i < wb->ninfo; i++)
    info_destruct(wb->api, &wb->info[i]);
  pthread_cond_destroy(&wb->cv);
  pthread_mutex_destroy(&wb->mu);
  free(wb);
}

static struct waitblock *waitblock_new(const struct hcgpx_api *api) {
  struct waitblock *wb = calloc(1, sizeof *wb);
  if (!wb)
    return NULL;
  wb->api = api;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  int bad = pthread_mutex_init(&wb->mu, NULL);
  if (!bad && pthread_cond_init(&wb->cv, &ca)) {
    pthread_mutex_destroy(&wb->mu);
    bad = 1;
  }
  pthread_condattr_destroy(&ca);
  if (bad) {
    free(wb);
    return NULL;
  }
  return wb;
}

/* One callback done; frees the block when the caller has left. */
static void waitblock_done(struct waitblock *wb, hcgpx_status_t st) {
  pthread_mutex_lock(&wb->mu);
  if (st != HCGPX_SUCCESS && wb->status == HCGPX_SUCCESS)
    wb->status = st;
  int last = --wb->pending == 0;
  int gone = wb->abandoned;
  if (last && !gone)
    pthread_cond_signal(&wb->cv);
  pthread_mutex_unlock(&wb->mu);
  if (!last || !gone)
    return;
  pthread_mutex_lock(&orphans_mu);
  if (wb->prev)
    wb->prev->next = wb->next;
  else
    orphans = wb->next;
  if (wb->next)
    wb->next->prev = wb->prev;
  pthread_mutex_unlock(&orphans_mu);
  waitblock_free(wb);
}

/* After the last PMIx_Finalize: no callback will ever run. */
static void free_orphans(void) {
  pthread_mutex_lock(&orphans_mu);
  struct waitblock *wb = orphans;
  orphans = NULL;
  pthread_mutex_unlock(&orphans_mu);
  while (wb) {
    struct waitblock *next = wb->next;
    waitblock_free(wb);
    wb = next;
  }
}

/* Waits for every callback for timeout_s. Returns 0 when all ran (the
 * caller still owns wb), or -1 when it gave up (wb is now an orphan, freed
 * by its last callback or after PMIx is finalized). */
static int waitblock_wait(struct waitblock *wb, int timeout_s) {
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += timeout_s;
  pthread_mutex_lock(&wb->mu);
  while (wb->pending > 0)
    if (pthread_cond_timedwait(&wb->cv, &wb->mu, &until) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&wb->mu);
  /* Again in lock order: a callback may come in between. */
  pthread_mutex_lock(&orphans_mu);
  pthread_mutex_lock(&wb->mu);
  int gave_up = wb->pending > 0;
  if (gave_up) {
    wb->abandoned = 1;
    wb->prev = NULL;
    wb->next = orphans;
    if (orphans)
      orphans->prev = wb;
    orphans = wb;
  }
  pthread_mutex_unlock(&wb->mu);
  pthread_mutex_unlock(&orphans_mu);
  return gave_up ? -1 : 0;
}

static void fence_cb(hcgpx_status_t st, void *cbdata) {
  waitblock_done(cbdata, st);
}

int hcgrt_pmix_fence(struct hcgrt_pmix *px, int timeout_s, const char *what,
                     hcg_error *err) {
  const struct hcgpx_api *api = px->api;
  struct waitblock *wb = waitblock_new(api);
  if (!wb)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a PMIx fence");
  load_bool_info(api, &wb->info[0], HCGPX_COLLECT_DATA, 0);
  load_int_info(api, &wb->info[1], HCGPX_TIMEOUT,
                timeout_s + (timeout_s > GRACE_S ? timeout_s : GRACE_S));
  wb->ninfo = 2;
  wb->pending = 1;
  /* NULL procs: every process of our namespace, i.e. the whole job. */
  hcgpx_status_t st = api->fence_nb(NULL, 0, wb->info, 2, fence_cb, wb);
  if (st == HCGPX_OPERATION_SUCCEEDED) { /* done at once, no callback */
    waitblock_free(wb);
    return HCG_OK;
  }
  if (st != HCGPX_SUCCESS) {
    waitblock_free(wb);
    return pmix_error(api, err, st, "PMIx_Fence");
  }
  if (waitblock_wait(wb, timeout_s))
    st = HCGPX_ERR_TIMEOUT;
  else {
    st = wb->status;
    waitblock_free(wb);
  }
  if (st == HCGPX_ERR_TIMEOUT)
    return hcg__fail(err, HCG_ETIMEOUT,
                     "the PMIx fence of %s timed out after %d s: a process "
                     "of the job did not reach it (exited, crashed, or is "
                     "stuck)",
                     what, timeout_s);
  if (st == HCGPX_ERR_PARTIAL_SUCCESS)
    return hcg__fail(err, HCG_EPMIX,
                     "the PMIx fence of %s failed: a process of the job "
                     "left before reaching it (it finalized PMIx or ended) "
                     "(PMIx: %s)",
                     what, api->error_string(st));
  if (st != HCGPX_SUCCESS) {
    char label[128];
    snprintf(label, sizeof label, "the PMIx fence of %s", what);
    return pmix_error(api, err, st, label);
  }
  return HCG_OK;
}

/* A get's outcome: PMIx's status, or SIZE_BAD for a value of another
 * size or type. */
#define SIZE_BAD HCGPX_ERR_TYPE_MISMATCH

/* The outcome of a fetch of what a process published (hcg_ctx_fetch). */
static int publication_error(const struct hcgpx_api *api, hcg_error *err,
                             const struct hcgrt_get *g, hcgpx_status_t st,
                             size_t len, int timeout_s) {
  if (st == HCGPX_ERR_NOMEM)
    return hcg__fail(err, HCG_ENOMEM,
                     "out of memory for what rank %d published", g->rank);
  if (st == SIZE_BAD)
    return hcg__fail(err, HCG_EPMIX,
                     "rank %d published another length than the %zu bytes "
                     "asked for: every process publishes the same length",
                     g->rank, len);
  if (st == HCGPX_ERR_TIMEOUT)
    return hcg__fail(err, HCG_ETIMEOUT,
                     "what rank %d published did not arrive in %d s (a "
                     "process that ended before the publication's fence "
                     "never publishes: is rank %d still running?)",
                     g->rank, timeout_s, g->rank);
  if (st == HCGPX_ERR_NOT_FOUND)
    return hcg__fail(err, HCG_EPMIX,
                     "rank %d published nothing under key '%s': it left "
                     "before the publication's fence, or published fewer "
                     "times than this process",
                     g->rank, g->key);
  char what[64];
  snprintf(what, sizeof what, "PMIx_Get of what rank %d published", g->rank);
  return pmix_error(api, err, st, what);
}

static int get_error(const struct hcgpx_api *api, hcg_error *err,
                     const struct hcgrt_get *g, hcgpx_status_t st, size_t len,
                     int timeout_s) {
  if (g->publication)
    return publication_error(api, err, g, st, len, timeout_s);
  if (st == SIZE_BAD && g->dyn)
    return hcg__fail(err, HCG_EPMIX,
                     "the ids rank %d published (for group '%s') are not "
                     "1 to %d bytes",
                     g->rank, g->group, HCGRT_GET_DYN_MAX);
  if (st == HCGPX_ERR_NOMEM)
    return hcg__fail(err, HCG_ENOMEM,
                     "out of memory for the ids of rank %d (group '%s')",
                     g->rank, g->group);
  if (st == SIZE_BAD)
    return hcg__fail(err, HCG_EPMIX,
                     "the id of group '%s' from rank %d is not %zu bytes",
                     g->group, g->rank, len);
  if (st == HCGPX_ERR_TIMEOUT)
    return hcg__fail(err, HCG_ETIMEOUT,
                     "the id of group '%s' from its leader, rank %d, did "
                     "not arrive in %d s",
                     g->group, g->rank, timeout_s);
  if (st == HCGPX_ERR_NOT_FOUND)
    return hcg__fail(err, HCG_EPMIX,
                     "rank %d, leader of group '%s', published no id for "
                     "it (key '%s'): did every process pass the same "
                     "groups and layout?",
                     g->rank, g->group, g->key);
  char what[HCG_KEY_MAX + 64];
  snprintf(what, sizeof what, "PMIx_Get of the id of group '%s' from rank %d",
           g->group, g->rank);
  return pmix_error(api, err, st, what);
}

/* A batch of gets: one outcome into st[i] each, all within one deadline
 * (each get is given what remains of it), issued one after another with
 * the blocking PMIx_Get, whose value the caller owns and releases.
 *
 * Measured on the 2-CPU cluster node (bench_exchange, 32 and 64 tasks,
 * doc/scaling.md): 8 threads per task issuing blocking gets made the
 * exchange about 1.3x slower than this; PMIx_Get_nb with every get in
 * flight was about 1.2x faster, but PMIx 4.2.2 leaks each value its
 * non-blocking get finds in the local data store (valgrind: 160 bytes per
 * get), so it is not used. After the fence every publisher has committed,
 * so each get is a local lookup or one direct-modex request per remote
 * publisher. Fails only for lack of memory (never, here). */
static int get_batch(struct hcgrt_pmix *px, struct hcgrt_get *gets, int n,
                     size_t len, int timeout_s, hcgpx_status_t *st,
                     hcg_error *err) {
  (void)err;
  const struct hcgpx_api *api = px->api;
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (hcgrt_pmix_gets_seen)
    hcgrt_pmix_gets_seen((int)px->me.rank, gets, n);
  for (int i = 0; i < n; i++) {
    const struct hcgrt_get *g = &gets[i];
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int left = timeout_s - (int)(t.tv_sec - t0.tv_sec);
    if (left < 1)
      left = 1;
    hcgpx_info_t info;
    load_int_info(api, &info, HCGPX_TIMEOUT, left);
    hcgpx_proc_t from;
    proc_load(&from, px->me.nspace, (hcgpx_rank_t)g->rank);
    hcgpx_value_t *v = NULL;
    st[i] = api->get(&from, g->key, &info, 1, &v);
    info_destruct(api, &info);
    size_t want = g->len ? g->len : len;
    if (g->dyn) {
      *g->dyn = NULL;
      *g->dyn_len = 0;
      if (st[i] == HCGPX_SUCCESS && v && v->type == HCGPX_BYTE_OBJECT &&
          v->data.bo.size > 0 && v->data.bo.size <= HCGRT_GET_DYN_MAX)
        want = v->data.bo.size;
    }
    if (st[i] == HCGPX_SUCCESS &&
        (!v || v->type != HCGPX_BYTE_OBJECT || v->data.bo.size != want))
      st[i] = SIZE_BAD;
    if (st[i] == HCGPX_SUCCESS && g->dyn) {
      if ((*g->dyn = malloc(want)))
        *g->dyn_len = want;
      else
        st[i] = HCGPX_ERR_NOMEM;
    }
    if (st[i] == HCGPX_SUCCESS)
      memcpy(g->dyn ? *g->dyn : g->out, v->data.bo.bytes, want);
    value_release(api, v);
  }
  return HCG_OK;
}

int hcgrt_pmix_get_all(struct hcgrt_pmix *px, struct hcgrt_get *gets, int n,
                       size_t len, int timeout_s, hcg_error *err) {
  if (n <= 0)
    return HCG_OK;
  hcgpx_status_t *st = malloc((size_t)n * sizeof *st);
  if (!st)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for %d PMIx gets", n);
  int rc = get_batch(px, gets, n, len, timeout_s, st, err);
  /* The first failure in the caller's order names the error. */
  for (int i = 0; i < n && !rc; i++)
    if (st[i] != HCGPX_SUCCESS)
      rc = get_error(px->api, err, &gets[i], st[i],
                     gets[i].len ? gets[i].len : len, timeout_s);
  free(st);
  return rc;
}

int hcgrt_pmix_get_each(struct hcgrt_pmix *px, struct hcgrt_get *gets, int n,
                        size_t len, int timeout_s, int *rcs, hcg_error *err) {
  if (n <= 0)
    return HCG_OK;
  hcgpx_status_t *st = malloc((size_t)n * sizeof *st);
  if (!st)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for %d PMIx gets", n);
  int rc = get_batch(px, gets, n, len, timeout_s, st, err);
  for (int i = 0; i < n && !rc; i++)
    rcs[i] = st[i] == HCGPX_SUCCESS       ? HCG_OK
             : st[i] == HCGPX_ERR_TIMEOUT ? HCG_ETIMEOUT
                                          : HCG_EPMIX;
  free(st);
  return rc;
}
