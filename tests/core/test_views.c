/* test_views.c - doc/semantics.md section 3: named views, their checks in
 * Megatron's order, and all-shared requests resolving to the base. */
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

START_TEST(view_passes) {
  const char *l = "llm:tp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,pp";
  expect_enum(l, 8, "llm:pp", "[[0,4],[1,5],[2,6],[3,7]]");
  expect_enum(l, 8, "llm/expert:pp", "[[0,4],[1,5],[2,6],[3,7]]");
  expect_enum(l, 8, "llm/expert:expt_tp,ep", "[[0,1,2,3],[4,5,6,7]]");
  hcg_layout *L = must_parse(l, 8);
  ck_assert_int_eq(hcg_grid_num_views(L, 0), 2);
  ck_assert_str_eq(hcg_view_name(L, 0, 0), "base");
  ck_assert_str_eq(hcg_view_name(L, 0, 1), "expert");
  ck_assert_int_eq(hcg_grid_find_view(L, 0, "expert"), 1);
  ck_assert_int_eq(hcg_dim_shared(L, 0, 1, 2), 1);
  ck_assert_int_eq(hcg_dim_size(L, 0, 1, 2), 2);
  hcg_layout_free(L);
}
END_TEST

/* The failing example: pp enumerates [[0,4],...] in the base and
 * [[0,1],...] in the view; the message names the dim and both. */
START_TEST(view_shared_mismatch) {
  expect_error("llm:tp=2,dp=2,pp=2; llm/bad:pp,ep=4", 8, HCG_ELAYOUT, 29,
               "shared dim 'pp' must enumerate exactly as in the base, but "
               "base pp [[0,4],[1,5],[2,6],[3,7]] != view pp "
               "[[0,1],[2,3],[4,5],[6,7]]");
}
END_TEST

/* All-shared requests resolve to the base group and key; mixed ones stay in
 * the view, keyed (view, ordered dims). */
START_TEST(all_shared_resolves_to_base) {
  hcg_layout *L = must_parse(
      "llm:tp=2,cp=2,dp=2,pp=2; llm/expert:expt_tp=2,ep=2,expt_dp=2,pp", 16);
  hcg_request base, view;
  ck_assert_int_eq(hcg_request_parse(L, "llm:pp", &base, NULL), HCG_OK);
  ck_assert_int_eq(hcg_request_parse(L, "llm/expert:pp", &view, NULL), HCG_OK);
  ck_assert_int_eq(view.view, 0);
  ck_assert(memcmp(&base, &view, sizeof base) == 0);
  expect_key(L, "llm/expert:pp", "llm:pp");
  expect_key(L, "llm/expert:", "llm:");
  expect_key(L, "llm/expert:ep,expt_tp", "llm/expert:ep-expt_tp");
  expect_key(L, "llm/expert:pp,expt_tp,ep", "llm/expert:pp-ep-expt_tp");
  /* Through hcg_request_make too. */
  const char *dims[] = {"pp"};
  hcg_request made;
  ck_assert_int_eq(hcg_request_make(L, 0, 1, dims, 1, &made, NULL), HCG_OK);
  ck_assert(memcmp(&made, &base, sizeof base) == 0);
  hcg_layout_free(L);
}
END_TEST

/* Several shared dims, in a different position order in the view. */
START_TEST(several_shared_dims) {
  const char *l = "g:tp=2,cp=2,dp=2,pp=2; g/v:ep=8,pp";
  /* dims tp,cp,dp multiply to 8 = ep; pp stride 8 in both. */
  expect_enum(l, 16, "g/v:pp",
              "[[0,8],[1,9],[2,10],[3,11],[4,12],[5,13],"
              "[6,14],[7,15]]");
  expect_enum(l, 16, "g/v:ep", "[[0,1,2,3,4,5,6,7],[8,9,10,11,12,13,14,15]]");
  /* Two shared dims (cp and pp) in a view splitting tp x dp differently. */
  const char *m = "g:tp=2,cp=2,dp=2,pp=2; g/w:a=1,b=2,cp,x=2,pp";
  hcg_layout *L = must_parse(m, 16);
  expect_key(L, "g/w:pp,cp", "g:pp-cp");
  hcg_layout_free(L);
  expect_enum(m, 16, "g/w:cp,pp",
              "[[0,2,8,10],[1,3,9,11],[4,6,12,14],"
              "[5,7,13,15]]");
  expect_enum(m, 16, "g:cp,pp",
              "[[0,2,8,10],[1,3,9,11],[4,6,12,14],"
              "[5,7,13,15]]");
}
END_TEST

/* Registration checks, in order. */
START_TEST(view_errors) {
  expect_error("llm:tp=2,dp=4; llm/base:ep=8", 8, HCG_ELAYOUT, 20,
               "view name 'base' is reserved");
  expect_error("llm:tp=2,dp=4; llm/e:ep=8; llm/e:ep=8", 8, HCG_ELAYOUT, 32,
               "grid 'llm' already has a view named 'e'");
  expect_error("llm:tp=2,dp=4; llm/e:ep=4,ep=2", 8, HCG_ELAYOUT, 27,
               "view 'llm/e' names dim 'ep' twice");
  expect_error("llm:tp=2,dp=4; llm/e:ep=4,pp", 8, HCG_ELAYOUT, 27,
               "view 'llm/e': shared dim 'pp' is not a dim of grid 'llm' "
               "(its dims: tp, dp)");
  expect_error("llm:tp=2,dp=4; llm/e:ep=3", 8, HCG_ELAYOUT, 16,
               "view 'llm/e': its dims (ep=3) multiply to 3, but a view must "
               "factor the same ranks as grid 'llm', which has 8");
  expect_error("llm:tp=2,dp=4; llm/e:ep=3,x=*", 8, HCG_ELAYOUT, 29,
               "cannot infer 'x' of view 'llm/e': 8 ranks are not a multiple "
               "of 3");
  expect_error("llm:tp=2,dp=4; llm/e@0:ep=8", 8, HCG_ESYNTAX, 21,
               "cannot have an offset");
  expect_error("llm/e:ep=8; llm:tp=8", 8, HCG_ELAYOUT, 1,
               "view 'llm/e' is on grid 'llm', which is not defined before it");
  expect_error("llm:tp=2,dp=4; llm/e:ep=*,x=*", 8, HCG_ESYNTAX, 29,
               "may infer one size with '*', but both 'ep' and 'x' use it");
  /* a size-1 shared dim matches whatever its stride */
  hcg_layout *L = must_parse("llm:tp=2,pp=1,dp=4; llm/e:pp,ep=8", 8);
  hcg_layout_free(L);
}
END_TEST

START_TEST(view_limit) {
  char text[1024] = "g:a=2";
  for (int v = 0; v <= HCG_MAX_VIEWS; v++) {
    char item[32];
    snprintf(item, sizeof item, ";g/v%d:b=2", v);
    strcat(text, item);
  }
  expect_error(text, 2, HCG_ELIMIT, 0, "grid 'g' may have at most 8 views");
}
END_TEST

Suite *views_suite(void) {
  Suite *s = suite_create("views");
  TCase *tc = tcase_create("views");
  tcase_add_test(tc, view_passes);
  tcase_add_test(tc, view_shared_mismatch);
  tcase_add_test(tc, all_shared_resolves_to_base);
  tcase_add_test(tc, several_shared_dims);
  tcase_add_test(tc, view_errors);
  tcase_add_test(tc, view_limit);
  suite_add_tcase(s, tc);
  return s;
}
