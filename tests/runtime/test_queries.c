/*
 * test_queries.c - what a context answers about its rank and groups.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

/* ---- queries --------------------------------------------------------------
 */

START_TEST(test_queries) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  hcg_error err = HCG_ERROR_INIT;
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_group g;
  int m[16];
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm:dp", &g, &err), 0);
  ck_assert_int_eq(g.size, 4);
  ck_assert_int_eq(g.index, 2);
  ck_assert_int_eq(hcg_group_members(L, &g, m, 16), 0);
  ck_assert_int_eq(m[0], 1);
  ck_assert_int_eq(m[3], 7);
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm/expert:ep,expt_tp", &g, &err), 0);
  ck_assert_int_eq(g.first, 4);
  ck_assert_int_eq(g.index, 1);
  /* An all-shared view request is the base group. */
  hcg_group b;
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm/expert:pp", &g, &err), 0);
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm:pp", &b, &err), 0);
  ck_assert_int_eq(g.req.view, 0);
  ck_assert_int_eq(memcmp(&g, &b, sizeof g), 0);
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm:nope", &g, &err), HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_ctx_group(ctx, NULL, &g, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_field_group(ctx, 0, HCG_FIELD_TP_EP, &g), 0);
  ck_assert_int_eq(g.size, 4);
  ck_assert_int_eq(hcg_ctx_field_group(ctx, 0, HCG_FIELD_DP_CP_GTP_REMAT, &g),
                   0);
  ck_assert_int_eq(hcg_ctx_field_group(ctx, 0, HCG_FIELD_EXPT_DP_GTP_REMAT, &g),
                   0);
  int e[2], n;
  ck_assert_int_eq(hcg_ctx_embedding_group(ctx, HCG_EMBD, e, &n), 0);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(e[0], 5);
  ck_assert_int_eq(e[1], 13);
  int first, last;
  ck_assert_int_eq(hcg_ctx_stage(ctx, 0, &first, &last), 0);
  ck_assert_int_eq(first, 1);
  ck_assert_int_eq(last, 0);
  hcg_ctx_free(ctx);

  /* MIMO: rank 2 is in vision only. */
  ctx = must_ctx(MIMO, 16, 2);
  ck_assert_int_eq(hcg_ctx_num_grids(ctx), 1);
  ck_assert_int_eq(hcg_ctx_grid(ctx, 0), 0);
  ck_assert_int_eq(hcg_ctx_group(ctx, "llm:tp", &g, &err), HCG_ENOTMEMBER);
  ck_assert_ptr_nonnull(strstr(err.message, "not in grid 'llm'"));
  ck_assert_int_eq(hcg_ctx_field_group(ctx, 1, HCG_FIELD_TP, &g),
                   HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_ctx_field_group(ctx, 0, HCG_FIELD_EP, &g),
                   HCG_ENOTPROVIDED);
  ck_assert_int_eq(hcg_ctx_embedding_group(ctx, HCG_EMBD, e, &n),
                   HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_ctx_stage(ctx, 1, &first, &last), HCG_ENOTMEMBER);
  hcg_ctx_free(ctx);

  /* Colocated: every rank in both grids. */
  ctx = must_ctx(COLOC, 8, 6);
  ck_assert_int_eq(hcg_ctx_num_grids(ctx), 2);
  ck_assert_int_eq(hcg_ctx_grid(ctx, 1), 1);
  ck_assert_int_eq(hcg_ctx_stage(ctx, 0, &first, &last), 0);
  ck_assert_int_eq(first && last, 1);
  hcg_ctx_free(ctx);
}
END_TEST

TCase *query_tests(void) {
  TCase *q = tcase_create("queries");
  tcase_add_test(q, test_queries);
  return q;
}
