/* test_collection.c - doc/semantics.md section 5: the process-group collection
 * of a grid and the language module's embedding groups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

/* The enumeration of a field of grid 0, or "None". */
static char *field_enum(const hcg_layout *L, int grid, const char *field) {
  int f = hcg_field_find(field);
  ck_assert_msg(f >= 0, "unknown field %s", field);
  hcg_request req;
  int rc = hcg_collection_request(L, grid, f, &req);
  if (rc == HCG_ENOTPROVIDED)
    return strdup("None");
  ck_assert_int_eq(rc, HCG_OK);
  return enum_string(L, &req);
}

static void expect_field(const hcg_layout *L, const char *field,
                         const char *expected) {
  char *got = field_enum(L, 0, field);
  ck_assert_msg(strcmp(got, expected) == 0, "%s: got %s, expected %s", field,
                got, expected);
  free(got);
}

static void expect_field_key(const hcg_layout *L, const char *field,
                             const char *key) {
  hcg_request req;
  ck_assert_int_eq(hcg_collection_request(L, 0, hcg_field_find(field), &req),
                   HCG_OK);
  char buf[HCG_KEY_MAX];
  hcg_request_key(L, &req, buf, sizeof buf);
  ck_assert_msg(strcmp(buf, key) == 0, "%s: key %s, expected %s", field, buf,
                key);
}

/* The section 4 grid, world 16, through the collection. */
START_TEST(collection_dense_and_expert) {
  hcg_layout *L = must_parse(
      "llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp", 16);
  expect_field(L, "tp",
               "[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],"
               "[14,15]]");
  expect_field(L, "cp",
               "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],"
               "[13,15]]");
  expect_field(L, "dp",
               "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],"
               "[11,15]]");
  expect_field(L, "dp_cp", "[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]");
  expect_field(L, "pp",
               "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],"
               "[7,15]]");
  expect_field(L, "mp", "[[0,1,8,9],[2,3,10,11],[4,5,12,13],[6,7,14,15]]");
  expect_field(L, "tp_cp", "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]");
  expect_field(L, "tp_dp", "[[0,1,4,5],[2,3,6,7],[8,9,12,13],[10,11,14,15]]");
  expect_field(L, "tp_dp_cp", "[[0,1,2,3,4,5,6,7],[8,9,10,11,12,13,14,15]]");
  expect_field(L, "dp_cp_gtp_remat",
               "[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]");
  expect_field(L, "ep",
               "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],"
               "[13,15]]");
  expect_field(L, "expt_tp",
               "[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],"
               "[14,15]]");
  expect_field(L, "expt_dp",
               "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],"
               "[11,15]]");
  expect_field(L, "tp_ep", "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]");
  expect_field(L, "tp_ep_pp", "[[0,1,2,3,8,9,10,11],[4,5,6,7,12,13,14,15]]");
  expect_field(L, "expt_dp_gtp_remat",
               "[[0,4],[1,5],[2,6],[3,7],[8,12],"
               "[9,13],[10,14],[11,15]]");
  expect_field(L, "tp_ep_pp_with_egtp_remat",
               "[[0,1,2,3,8,9,10,11],[4,5,6,7,12,13,14,15]]");
  expect_field(L, "intra_dist_opt",
               "[[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15]]");
  /* Keys: Megatron's, with the gtp_remat dims left out when absent. */
  expect_field_key(L, "mp", "llm:pp-tp");
  expect_field_key(L, "dp_cp", "llm:dp-cp");
  expect_field_key(L, "tp_dp_cp", "llm:dp-cp-tp");
  expect_field_key(L, "tp_ep", "llm/expert:ep-expt_tp");
  expect_field_key(L, "tp_ep_pp", "llm/expert:pp-ep-expt_tp");
  expect_field_key(L, "intra_dist_opt", "llm:pp-dp-cp-tp");
  hcg_layout_free(L);
}
END_TEST

/* Aliases are the same object: same request, same key. */
START_TEST(collection_aliases) {
  hcg_layout *L = must_parse(
      "llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp", 16);
  ck_assert_int_eq(hcg_field_alias(HCG_FIELD_INTRA_DP_CP), HCG_FIELD_DP_CP);
  ck_assert_int_eq(hcg_field_alias(HCG_FIELD_INTRA_EXPT_DP), HCG_FIELD_EXPT_DP);
  ck_assert_int_eq(hcg_field_alias(HCG_FIELD_TP), -1);
  hcg_request a, b;
  hcg_collection_request(L, 0, HCG_FIELD_INTRA_DP_CP, &a);
  hcg_collection_request(L, 0, HCG_FIELD_DP_CP, &b);
  ck_assert(memcmp(&a, &b, sizeof a) == 0);
  hcg_collection_request(L, 0, HCG_FIELD_INTRA_EXPT_DP, &a);
  hcg_collection_request(L, 0, HCG_FIELD_EXPT_DP, &b);
  ck_assert(memcmp(&a, &b, sizeof a) == 0);
  /* tp_ep_pp includes the shared pp but stays an expert-view group. */
  hcg_collection_request(L, 0, HCG_FIELD_TP_EP_PP, &a);
  ck_assert_int_eq(a.view, 1);
  /* The expert pp is the base pp. */
  hcg_collection_request(L, 0, HCG_FIELD_PP, &b);
  ck_assert_int_eq(b.view, 0);
  ck_assert_str_eq(hcg_field_name(HCG_FIELD_TP_EP_PP_WITH_EGTP_REMAT),
                   "tp_ep_pp_with_egtp_remat");
  ck_assert_ptr_null(hcg_field_name(HCG_FIELD_COUNT));
  ck_assert_int_eq(hcg_field_find("nope"), -1);
  hcg_layout_free(L);
}
END_TEST

/* Fields whose dims are all absent are not provided; absent dims among
 * present ones count as size 1. */
START_TEST(collection_not_provided) {
  hcg_layout *L = must_parse("tp=2,dp=4", 8);
  expect_field(L, "cp", "None");
  expect_field(L, "pp", "None");
  expect_field(L, "ep", "None");
  expect_field(L, "tp_ep", "None");
  expect_field(L, "intra_expt_dp", "None");
  expect_field(L, "dp_cp", "[[0,2,4,6],[1,3,5,7]]");
  expect_field_key(L, "dp_cp", "world:dp");
  expect_field_key(L, "intra_dp_cp", "world:dp");
  expect_field(L, "mp", "[[0,1],[2,3],[4,5],[6,7]]");
  hcg_layout_free(L);

  /* gtp_remat and expt_gtp_remat included when present. */
  L = must_parse("g:tp=2,gtp_remat=2,cp=1,dp=2,pp=1;"
                 "g/expert:expt_tp=1,ep=2,expt_gtp_remat=2,expt_dp=2,pp",
                 8);
  expect_field_key(L, "mp", "g:pp-gtp_remat-tp");
  expect_field_key(L, "dp_cp_gtp_remat", "g:dp-cp-gtp_remat");
  expect_field(L, "mp", "[[0,1,2,3],[4,5,6,7]]");
  expect_field_key(L, "expt_dp_gtp_remat", "g/expert:expt_dp-expt_gtp_remat");
  expect_field_key(L, "tp_ep_pp_with_egtp_remat",
                   "g/expert:pp-expt_gtp_remat-ep-expt_tp");
  hcg_layout_free(L);
}
END_TEST

static void expect_embedding(const hcg_layout *L, int kind,
                             const char *expected) {
  char got[512] = "[";
  for (int o = 0; o < hcg_embedding_num_groups(L); o++) {
    int m[2], n;
    ck_assert_int_eq(hcg_embedding_group_at(L, kind, o, m, &n), HCG_OK);
    char item[32];
    if (n == 2)
      snprintf(item, sizeof item, "%s[%d,%d]", o ? "," : "", m[0], m[1]);
    else
      snprintf(item, sizeof item, "%s[%d]", o ? "," : "", m[0]);
    strcat(got, item);
  }
  strcat(got, "]");
  ck_assert_str_eq(got, expected);
}

/* tp2 pp2 on 8 ranks -> embd [[0,4],[1,5],[2,6],[3,7]], pos_embd
 * [[0],[1],[2],[3]]. */
START_TEST(embedding_golden) {
  hcg_layout *L = must_parse("tp=2,dp=2,pp=2", 8);
  expect_embedding(L, HCG_EMBD, "[[0,4],[1,5],[2,6],[3,7]]");
  expect_embedding(L, HCG_POS_EMBD, "[[0],[1],[2],[3]]");
  int m[2], n;
  ck_assert_int_eq(hcg_embedding_group_of_rank(L, HCG_EMBD, 5, m, &n), HCG_OK);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(m[0], 1);
  ck_assert_int_eq(m[1], 5);
  ck_assert_int_eq(hcg_embedding_group_of_rank(L, HCG_POS_EMBD, 5, m, &n),
                   HCG_ENOTMEMBER);
  hcg_layout_free(L);

  /* pp 4: the middle stages hold no embedding group. */
  L = must_parse("tp=1,pp=4", 4);
  expect_embedding(L, HCG_EMBD, "[[0,3]]");
  ck_assert_int_eq(hcg_embedding_group_of_rank(L, HCG_EMBD, 1, m, &n),
                   HCG_ENOTMEMBER);
  hcg_layout_free(L);

  /* pp 1 (or absent): [P[0]]. */
  L = must_parse("tp=2,dp=2", 4);
  expect_embedding(L, HCG_EMBD, "[[0],[1],[2],[3]]");
  expect_embedding(L, HCG_POS_EMBD, "[[0],[1],[2],[3]]");
  hcg_layout_free(L);

  /* Only the language module: vision ranks hold none. */
  L = must_parse("vision:tp=2,pp=2; llm:tp=2,pp=2", 8);
  expect_embedding(L, HCG_EMBD, "[[4,6],[5,7]]");
  ck_assert_int_eq(hcg_embedding_group_of_rank(L, HCG_EMBD, 0, m, &n),
                   HCG_ENOTMEMBER);
  hcg_layout_free(L);
}
END_TEST

Suite *collection_suite(void) {
  Suite *s = suite_create("collection");
  TCase *tc = tcase_create("collection");
  tcase_add_test(tc, collection_dense_and_expert);
  tcase_add_test(tc, collection_aliases);
  tcase_add_test(tc, collection_not_provided);
  tcase_add_test(tc, embedding_golden);
  suite_add_tcase(s, tc);
  return s;
}
