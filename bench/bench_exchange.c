/*
 * bench_exchange.c - one task of the exchange benchmark (bench_exchange.sh):
 * times, in one job and interleaved, four ways of reaching the same point:
 *   fence   one PMIx fence (an exchange of an empty set): the barrier that
 *           precedes every other variant, timed on its own;
 *   bare    PMIx by hand: put 128 bytes, commit, fence, get 128 bytes from
 *           the next rank, the floor any exchange with one fence has;
 *   single  hcg_exchange_ids for the whole collection of the rank's grids
 *           (one fence for the set);
 *   naive   the same with the naive exchange (exchange_naive.h: one fence
 *           per group key).
 *
 *   srun --mpi=pmix --hcg-layout=... bench_exchange [ITERATIONS]
 *
 * Each iteration runs bare, single and naive in an order that rotates with
 * the iteration, each after a barrier. Prints, per variant and iteration,
 *   time RANK fence|bare|single|naive ITER SECONDS
 * and once "keys RANK K fences F gets G" (K: the groups of this rank; G:
 * the PMIx gets of one single exchange, the warm-up: one per distinct
 * leader in a job without relays, doc/runtime.md). For the naive exchange
 * it links libhcg's convenience libraries rather than libhcg.so: the same
 * code, linked statically.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef HCG_HAVE_PMIX
#include <strings.h> /* pmix_common.h uses strncasecmp */

#include <pmix.h>
#endif

#include "exchange_naive.h"
#include "hcg.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(int rc, const hcg_error *err) {
  fprintf(stderr, "bench_exchange: %s: %s\n", hcg_strerror(rc), err->message);
  return 1;
}

#ifdef HCG_HAVE_PMIX
static pmix_proc_t me;

/* One bare round under a key of its own; 0 or a PMIx status. */
static int bare_round(int world, int it) {
  char key[64];
  snprintf(key, sizeof key, "bench.bare.%d", it);
  unsigned char id[128];
  memset(id, me.rank & 0xff, sizeof id);
  pmix_value_t v;
  memset(&v, 0, sizeof v);
  v.type = PMIX_BYTE_OBJECT;
  v.data.bo.bytes = (char *)id;
  v.data.bo.size = sizeof id;
  pmix_status_t st = PMIx_Put(PMIX_GLOBAL, key, &v);
  if (st == PMIX_SUCCESS)
    st = PMIx_Commit();
  if (st != PMIX_SUCCESS)
    return st;
  pmix_info_t info;
  bool no = false;
  PMIX_INFO_CONSTRUCT(&info);
  PMIx_Info_load(&info, PMIX_COLLECT_DATA, &no, PMIX_BOOL);
  st = PMIx_Fence(NULL, 0, &info, 1);
  PMIX_INFO_DESTRUCT(&info);
  if (st != PMIX_SUCCESS || world < 2)
    return st;
  pmix_proc_t peer;
  PMIX_PROC_LOAD(&peer, me.nspace, (me.rank + 1) % (pmix_rank_t)world);
  pmix_value_t *got = NULL;
  st = PMIx_Get(&peer, key, NULL, 0, &got);
  if (st == PMIX_SUCCESS &&
      (!got || got->type != PMIX_BYTE_OBJECT || got->data.bo.size != 128))
    st = PMIX_ERROR;
  if (got)
    PMIX_VALUE_RELEASE(got);
  return st;
}
#endif

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  if (iters < 1)
    iters = 1;
  hcg_error err = HCG_ERROR_INIT;
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.pmix = HCG_PMIX_REQUIRE;
  hcg_ctx *ctx = NULL;
  int rc = hcg_ctx_init(&cfg, &ctx, &err);
  if (rc)
    return fail(rc, &err);
#ifdef HCG_HAVE_PMIX
  /* PMIx counts initializations; this one only learns our name. */
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
    fprintf(stderr, "bench_exchange: PMIx_Init failed\n");
    hcg_ctx_free(ctx);
    return 1;
  }
#endif
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_groupset *set = NULL, *none = NULL;
  rc = hcg_groupset_create(L, &set, &err);
  if (!rc)
    rc = hcg_groupset_create(L, &none, &err);
  /* Every grid's collection: the same set on every rank, as the naive
   * variant needs; each rank forms only the groups it is in. */
  for (int g = 0; !rc && g < hcg_layout_num_grids(L); g++)
    rc = hcg_groupset_add_collection(set, g, NULL, &err);
  int rank = hcg_ctx_rank(ctx), world = hcg_ctx_world_size(ctx), keys = 0;
  hcg_exchange *x = NULL;
  /* Warm up: the first PMIx traffic of a process costs extra. */
  if (!rc)
    rc = hcg_exchange_ids(ctx, set, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
  long long warm_gets = 0;
  hcg_ctx_stats s;
  if (!rc && hcg_ctx_get_stats(ctx, &s) == HCG_OK)
    warm_gets = s.gets;
  if (!rc) {
    keys = hcg_exchange_num_groups(x);
    hcg_exchange_free(x);
    x = NULL;
  }
  static const char *const name[] = {"bare", "single", "naive"};
  for (int it = 0; !rc && it < iters; it++) {
    for (int k = 0; !rc && k < 3; k++) {
      int variant = (it + k) % 3;
      double t0 = now();
      rc = hcg_exchange_ids(ctx, none, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
      double t = now() - t0;
      hcg_exchange_free(x);
      x = NULL;
      if (rc)
        break;
      printf("time %d fence %d %.6f\n", rank, 3 * it + k, t);
      t0 = now();
      if (variant == 0) {
#ifdef HCG_HAVE_PMIX
        int st = bare_round(world, it);
        if (st != PMIX_SUCCESS) {
          snprintf(err.message, sizeof err.message, "bare round: %s",
                   PMIx_Error_string(st));
          rc = HCG_EPMIX;
          break;
        }
#else
        continue;
#endif
      } else if (variant == 1) {
        rc = hcg_exchange_ids(ctx, set, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
      } else {
        rc = bench_exchange_naive(ctx, set, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
      }
      t = now() - t0;
      hcg_exchange_free(x);
      x = NULL;
      if (!rc)
        printf("time %d %s %d %.6f\n", rank, name[variant], it, t);
    }
  }
  if (!rc && hcg_ctx_get_stats(ctx, &s) == HCG_OK)
    printf("keys %d %d fences %lld gets %lld\n", rank, keys, s.fences,
           warm_gets);
  hcg_groupset_free(set);
  hcg_groupset_free(none);
#ifdef HCG_HAVE_PMIX
  PMIx_Finalize(NULL, 0);
#endif
  hcg_ctx_free(ctx);
  return rc ? fail(rc, &err) : 0;
}
