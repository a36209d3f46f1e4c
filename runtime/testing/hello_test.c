/*
 * hello_test.c - hcg-hello-test: the libhcg example hcg-hello
 * (runtime/examples/hcg-hello.c), the same options and output, linked with
 * libhcgtesting (testing.h) and never installed. One thing more, for
 * tests/cluster/failures.bats: with HCGTEST_EXIT_RANK=R, rank R leaves
 * right after hcg_ctx_init (connected to PMIx, before the exchange),
 * without cleaning up, as a task that dies there would.
 */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include "hcg.h"

static int init_then_maybe_exit(const hcg_ctx_config *cfg, hcg_ctx **ctx,
                                hcg_error *err) {
  int rc = hcg_ctx_init(cfg, ctx, err);
  const char *r = getenv("HCGTEST_EXIT_RANK");
  if (rc == HCG_OK && r && *r && atoi(r) == hcg_ctx_rank(*ctx))
    _exit(0);
  return rc;
}

#define hcg_ctx_init init_then_maybe_exit
#include "examples/hcg-hello.c"
