/* test_grid.c - doc/semantics.md sections 1, 2 and 4: coordinates, canonical
 * enumerations and group keys, bit-exact with Megatron-LM. */
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

/* Golden table of section 2. Grids with an offset get a filler grid before
 * them, since the layout language requires the grids to cover the world. */
START_TEST(golden_enumerations) {
  expect_enum("tp=2,dp=4", 8, "tp", "[[0,1],[2,3],[4,5],[6,7]]");
  expect_enum("tp=2,cp=2,dp=2", 8, "tp,cp", "[[0,1,2,3],[4,5,6,7]]");
  expect_enum("pad:x=4; llm:tp=2,dp=2", 8, "llm:tp", "[[4,5],[6,7]]");
  expect_enum("tp=1,cp=2,dp=4", 8, "tp", "[[0],[1],[2],[3],[4],[5],[6],[7]]");
  expect_enum("a=2,b=2,c=2", 8, "c", "[[0,4],[1,5],[2,6],[3,7]]");
  expect_enum("tp=2,cp=3,dp=4", 24, "cp",
              "[[0,2,4],[1,3,5],[6,8,10],[7,9,11],[12,14,16],[13,15,17],"
              "[18,20,22],[19,21,23]]");
  expect_enum("tp=2,cp=3,dp=4", 24, "dp",
              "[[0,6,12,18],[1,7,13,19],[2,8,14,20],[3,9,15,21],[4,10,16,22],"
              "[5,11,17,23]]");
  expect_enum("tp=2,cp=3,dp=4", 24, "dp,tp",
              "[[0,1,6,7,12,13,18,19],[2,3,8,9,14,15,20,21],"
              "[4,5,10,11,16,17,22,23]]");
  expect_enum("pad:x=3; llm:tp=2,cp=2,dp=2", 11, "llm:dp",
              "[[3,7],[4,8],[5,9],[6,10]]");
  expect_enum("pad:x=10; llm:tp=3,dp=2", 16, "llm:dp",
              "[[10,13],[11,14],[12,15]]");
  expect_enum("tp=2,cp=1,pp=2,dp=2", 8, "pp", "[[0,2],[1,3],[4,6],[5,7]]");
  /* Megatron's order tp-cp-ep-dp-pp with tp=2, pp=4, world 16. */
  expect_enum("tp=2,cp=1,ep=1,dp=2,pp=4", 16, "dp",
              "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]");
  expect_enum("tp=2,cp=1,ep=1,dp=2,pp=4", 16, "pp",
              "[[0,4,8,12],[1,5,9,13],[2,6,10,14],[3,7,11,15]]");
  /* D = {} gives singletons; D = all dims gives one group. */
  expect_enum("a=2,b=2", 4, "", "[[0],[1],[2],[3]]");
  expect_enum("a=2,b=2", 4, "world:", "[[0],[1],[2],[3]]");
  expect_enum("a=2,b=2", 4, "b,a", "[[0,1,2,3]]");
}
END_TEST

/* [2,3,4,5] tp,cp,pp,dp (world 120), dp: 24 groups of 5, each a stride-24
 * progression starting at 0..23. */
START_TEST(golden_dp_120) {
  hcg_layout *L = must_parse("tp=2,cp=3,pp=4,dp=5", 120);
  hcg_request req;
  ck_assert_int_eq(hcg_request_parse(L, "dp", &req, NULL), HCG_OK);
  ck_assert_int_eq(hcg_request_num_groups(L, &req), 24);
  ck_assert_int_eq(hcg_request_group_size(L, &req), 5);
  for (int o = 0; o < 24; o++) {
    hcg_group g;
    ck_assert_int_eq(hcg_group_at(L, &req, o, &g), HCG_OK);
    for (int i = 0; i < 5; i++)
      ck_assert_int_eq(hcg_group_member(L, &g, i), o + 24 * i);
  }
  hcg_layout_free(L);
}
END_TEST

/* The order in which a request names its dims never changes the result. */
START_TEST(request_order_irrelevant) {
  expect_enum("tp=2,cp=3,dp=4", 24, "tp,dp",
              "[[0,1,6,7,12,13,18,19],[2,3,8,9,14,15,20,21],"
              "[4,5,10,11,16,17,22,23]]");
  hcg_layout *L = must_parse("tp=2,cp=3,dp=4", 24);
  hcg_request a, b;
  ck_assert_int_eq(hcg_request_parse(L, "tp,dp", &a, NULL), HCG_OK);
  ck_assert_int_eq(hcg_request_parse(L, "dp,tp", &b, NULL), HCG_OK);
  ck_assert(a.dims == b.dims && a.grid == b.grid && a.view == b.view);
  hcg_layout_free(L);
}
END_TEST

/* Keys order dims by descending position: dims tp,cp,dp: [tp,cp] -> cp-tp,
 * [dp,tp] -> dp-tp. */
START_TEST(group_keys) {
  hcg_layout *L = must_parse("llm:tp=2,cp=2,dp=2", 8);
  expect_key(L, "llm:tp,cp", "llm:cp-tp");
  expect_key(L, "llm:cp,tp", "llm:cp-tp");
  expect_key(L, "llm:dp,tp", "llm:dp-tp");
  expect_key(L, "llm:tp,dp,cp", "llm:dp-cp-tp");
  expect_key(L, "llm:", "llm:");
  char small[6];
  hcg_request req;
  hcg_request_parse(L, "llm:tp", &req, NULL);
  ck_assert_int_eq(hcg_request_key(L, &req, small, sizeof small), HCG_ERANGE);
  hcg_layout_free(L);
}
END_TEST

START_TEST(coordinates) {
  hcg_layout *L = must_parse("pad:x=3; llm:tp=2,cp=3,dp=4", 27);
  int c[HCG_MAX_DIMS];
  /* rank = 3 + tp + 2 cp + 6 dp */
  ck_assert_int_eq(hcg_rank_coords(L, 1, 0, 3 + 1 + 2 * 2 + 6 * 3, c, 3),
                   HCG_OK);
  ck_assert_int_eq(c[0], 1);
  ck_assert_int_eq(c[1], 2);
  ck_assert_int_eq(c[2], 3);
  ck_assert_int_eq(hcg_rank_coords(L, 1, 0, 2, c, 3), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_rank_coords(L, 1, 0, 27, c, 3), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_rank_coords(L, 1, 0, 5, c, 2), HCG_ERANGE);
  ck_assert_int_eq(hcg_rank_coords(L, 9, 0, 5, c, 3), HCG_EINVAL);
  ck_assert_int_eq(hcg_dim_stride(L, 1, 0, 2), 6);
  hcg_layout_free(L);
}
END_TEST

/* hcg_group_of_rank: members, index and ordinal straight from coordinates. */
START_TEST(group_of_rank) {
  hcg_layout *L = must_parse("tp=2,cp=3,dp=4", 24);
  hcg_request req;
  hcg_request_parse(L, "cp", &req, NULL);
  hcg_group g;
  ck_assert_int_eq(hcg_group_of_rank(L, &req, 9, &g), HCG_OK);
  /* [7,9,11] is group 3 of cp */
  ck_assert_int_eq(g.first, 7);
  ck_assert_int_eq(g.size, 3);
  ck_assert_int_eq(g.index, 1);
  ck_assert_int_eq(g.ordinal, 3);
  int m[3];
  ck_assert_int_eq(hcg_group_members(L, &g, m, 3), HCG_OK);
  ck_assert_int_eq(m[0], 7);
  ck_assert_int_eq(m[1], 9);
  ck_assert_int_eq(m[2], 11);
  ck_assert_int_eq(hcg_group_members(L, &g, m, 2), HCG_ERANGE);
  ck_assert_int_eq(hcg_group_member(L, &g, 3), -1);
  ck_assert_int_eq(hcg_group_member(L, &g, -1), -1);
  ck_assert_int_eq(hcg_group_of_rank(L, &req, 24, &g), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_group_at(L, &req, 8, &g), HCG_ERANGE);
  hcg_layout_free(L);
}
END_TEST

/* World sizes up to 2^31-1: a rank near the top still computes directly. */
START_TEST(huge_world) {
  hcg_layout *L = must_parse("tp=8,cp=2,dp=*,pp=4", 1 << 30);
  hcg_request req;
  hcg_request_parse(L, "dp", &req, NULL);
  hcg_group g;
  int rank = (1 << 30) - 1;
  ck_assert_int_eq(hcg_group_of_rank(L, &req, rank, &g), HCG_OK);
  ck_assert_int_eq(g.size, (1 << 30) / 64);
  ck_assert_int_eq(hcg_group_member(L, &g, g.index), rank);
  ck_assert_int_eq(hcg_group_member(L, &g, g.size - 1), rank);
  hcg_layout_free(L);
  L = must_parse("a=2147483647", 2147483647);
  hcg_request_parse(L, "a", &req, NULL);
  ck_assert_int_eq(hcg_group_of_rank(L, &req, 2147483646, &g), HCG_OK);
  ck_assert_int_eq(g.index, 2147483646);
  hcg_layout_free(L);
}
END_TEST

/* doc/semantics.md section 4: dense tp,cp,dp,pp and expert
 * expt_tp,ep,expt_dp,pp over 16 ranks, pp shared. */
START_TEST(golden_expert_factorization) {
  const char *l =
      "llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp";
  expect_enum(l, 16, "llm:cp",
              "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]");
  expect_enum(l, 16, "llm:dp",
              "[[0,4],[1,5],[2,6],[3,7],[8,12],[9,13],[10,14],[11,15]]");
  expect_enum(l, 16, "llm:dp,cp",
              "[[0,2,4,6],[1,3,5,7],[8,10,12,14],[9,11,13,15]]");
  expect_enum(l, 16, "llm:pp",
              "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],[6,14],[7,15]]");
  expect_enum(l, 16, "llm:tp,pp",
              "[[0,1,8,9],[2,3,10,11],[4,5,12,13],[6,7,14,15]]");
  expect_enum(l, 16, "llm/expert:ep",
              "[[0,2],[1,3],[4,6],[5,7],[8,10],[9,11],[12,14],[13,15]]");
  expect_enum(l, 16, "llm/expert:expt_tp,ep",
              "[[0,1,2,3],[4,5,6,7],[8,9,10,11],[12,13,14,15]]");
  expect_enum(l, 16, "llm/expert:expt_tp,ep,pp",
              "[[0,1,2,3,8,9,10,11],[4,5,6,7,12,13,14,15]]");
  /* Inferred: dp and expt_dp from the world. */
  hcg_layout *L = must_parse(
      "llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp", 16);
  ck_assert_str_eq(hcg_layout_text(L),
                   "llm@0:tp=2,cp=1,dp=4,pp=2;"
                   "llm/expert:expt_tp=1,ep=4,expt_dp=2,pp");
  hcg_layout_free(L);
}
END_TEST

Suite *grid_suite(void) {
  Suite *s = suite_create("grid");
  TCase *tc = tcase_create("enumeration");
  tcase_add_test(tc, golden_enumerations);
  tcase_add_test(tc, golden_dp_120);
  tcase_add_test(tc, request_order_irrelevant);
  tcase_add_test(tc, group_keys);
  tcase_add_test(tc, coordinates);
  tcase_add_test(tc, group_of_rank);
  tcase_add_test(tc, huge_world);
  tcase_add_test(tc, golden_expert_factorization);
  suite_add_tcase(s, tc);
  return s;
}
