/*
 * bench_exchange.c - one task of the exchange benchmark (bench_exchange.sh):
 * times the id exchange for the whole collection of the rank's grids, with
 * one fence for the set against one fence per group key.
 *
 *   srun --mpi=pmix --hcg-layout=... bench_exchange [ITERATIONS]
 *
 * Each iteration runs both variants (in alternating order), each after a
 * barrier (an exchange of an empty set: one fence). Prints, per variant and
 * iteration,
 *   time RANK single|naive ITER SECONDS
 * and once "keys RANK K fences F" (K: the groups of this rank).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_groupset *set = NULL, *none = NULL;
  rc = hcg_groupset_create(L, &set, &err);
  if (!rc)
    rc = hcg_groupset_create(L, &none, &err);
  /* Every grid's collection: the same set on every rank, as the naive
   * variant needs; each rank forms only the groups it is in. */
  for (int g = 0; !rc && g < hcg_layout_num_grids(L); g++)
    rc = hcg_groupset_add_collection(set, g, NULL, &err);
  int rank = hcg_ctx_rank(ctx), keys = 0;
  hcg_exchange *x = NULL;
  /* Warm up: the first PMIx traffic of a process costs extra. */
  if (!rc)
    rc = hcg_exchange_ids(ctx, set, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
  if (!rc) {
    keys = hcg_exchange_num_groups(x);
    hcg_exchange_free(x);
    x = NULL;
  }
  for (int it = 0; !rc && it < iters; it++) {
    for (int k = 0; !rc && k < 2; k++) {
      int naive = (it + k) % 2;
      rc = hcg_exchange_ids(ctx, none, HCG_EXCHANGE_RANDOM_IDS, &x, &err);
      hcg_exchange_free(x);
      x = NULL;
      if (rc)
        break;
      double t0 = now();
      rc = hcg_exchange_ids(
          ctx, set, HCG_EXCHANGE_RANDOM_IDS | (naive ? HCG_EXCHANGE_NAIVE : 0),
          &x, &err);
      double t = now() - t0;
      hcg_exchange_free(x);
      x = NULL;
      if (!rc)
        printf("time %d %s %d %.6f\n", rank, naive ? "naive" : "single", it, t);
    }
  }
  if (!rc)
    printf("keys %d %d fences %lld\n", rank, keys, hcg_ctx_num_fences(ctx));
  hcg_groupset_free(set);
  hcg_groupset_free(none);
  hcg_ctx_free(ctx);
  return rc ? fail(rc, &err) : 0;
}
