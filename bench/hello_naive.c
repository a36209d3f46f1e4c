/*
 * hello_naive.c - hcg-hello-naive: the libhcg example hcg-hello
 * (runtime/examples/hcg-hello.c), the same options and output, but for its
 * exchange, which is the naive one (exchange_naive.h: one PMIx fence per
 * group key) in the place of hcg_exchange_ids. tests/cluster/exchange.bats
 * checks the naive exchange's groups and fences with it as it checks
 * hcg-hello's, and scripts/demo.sh shows its fences beside hcg-hello's.
 * Not installed.
 */
#include "config.h"

#include "exchange_naive.h"

#define hcg_exchange_ids bench_exchange_naive
#include "examples/hcg-hello.c"
