/*
 * exchange_naive.h - the naive exchange, a benchmark (exchange_naive.c):
 * the groups of a set formed one PMIx fence per group key, the cost that
 * hcg_exchange_ids' one fence for the whole set is measured against
 * (bench_exchange, hcg-hello-naive; doc/runtime.md, "Benchmark"). Built on
 * libhcg's internal convenience libraries, never part of libhcg.
 */
#ifndef HCG_BENCH_EXCHANGE_NAIVE_H
#define HCG_BENCH_EXCHANGE_NAIVE_H

#include "hcg.h"

/* hcg_exchange_ids with one fence per group key of the set instead of one
 * in all: every process walks every key of the set, member or not, and
 * takes part in its fence, so every process must pass the same set. The
 * same ids and the same hcg_exchange; flags: 0 or HCG_EXCHANGE_RANDOM_IDS.
 * Each key's leader publishes under the key itself, and members fetch from
 * the leader, whatever the job's size (no bundles, no relays). */
int bench_exchange_naive(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                         hcg_exchange **out, hcg_error *err);

#endif /* HCG_BENCH_EXCHANGE_NAIVE_H */
