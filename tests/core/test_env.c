/* test_env.c - the variables a task receives (doc/interfaces.md section 2). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

struct env_list {
  char text[8192];
  int count;
};

static int collect(void *arg, const char *name, const char *value) {
  struct env_list *e = arg;
  size_t len = strlen(e->text);
  snprintf(e->text + len, sizeof e->text - len, "%s=%s\n", name, value);
  e->count++;
  return 0;
}

static void expect_env(const char *layout, int world, int rank,
                       const char *expected) {
  hcg_layout *L = must_parse(layout, world);
  struct env_list e = {"", 0};
  ck_assert_int_eq(hcg_rank_env(L, rank, collect, &e), HCG_OK);
  ck_assert_msg(strcmp(e.text, expected) == 0, "got:\n%s\nexpected:\n%s",
                e.text, expected);
  hcg_layout_free(L);
}

START_TEST(env_single_grid_with_view) {
  expect_env("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp",
             16, 13,
             "HCG_VERSION=1\n"
             "HCG_LAYOUT=llm@0:tp=2,cp=1,dp=4,pp=2;"
             "llm/expert:expt_tp=1,ep=4,expt_dp=2,pp\n"
             "HCG_RANK=13\n"
             "HCG_WORLD_SIZE=16\n"
             "HCG_GRIDS=llm\n"
             "HCG_LANGUAGE=llm\n"
             "HCG_LLM_TP_RANK=1\nHCG_LLM_TP_SIZE=2\n"
             "HCG_LLM_CP_RANK=0\nHCG_LLM_CP_SIZE=1\n"
             "HCG_LLM_DP_RANK=2\nHCG_LLM_DP_SIZE=4\n"
             "HCG_LLM_PP_RANK=1\nHCG_LLM_PP_SIZE=2\n"
             "HCG_LLM_EXPERT_EXPT_TP_RANK=0\nHCG_LLM_EXPERT_EXPT_TP_SIZE=1\n"
             "HCG_LLM_EXPERT_EP_RANK=1\nHCG_LLM_EXPERT_EP_SIZE=4\n"
             "HCG_LLM_EXPERT_EXPT_DP_RANK=1\nHCG_LLM_EXPERT_EXPT_DP_SIZE=2\n"
             "HCG_LLM_EXPERT_PP_RANK=1\nHCG_LLM_EXPERT_PP_SIZE=2\n");
}
END_TEST

START_TEST(env_mimo) {
  /* Non-colocated: rank 9 is in llm only. */
  expect_env("vision:tp=4,dp=2; llm:tp=2,dp=4", 16, 9,
             "HCG_VERSION=1\n"
             "HCG_LAYOUT=vision@0:tp=4,dp=2;llm@8:tp=2,dp=4\n"
             "HCG_RANK=9\nHCG_WORLD_SIZE=16\nHCG_GRIDS=llm\n"
             "HCG_LANGUAGE=llm\n"
             "HCG_LLM_TP_RANK=1\nHCG_LLM_TP_SIZE=2\n"
             "HCG_LLM_DP_RANK=0\nHCG_LLM_DP_SIZE=4\n");
  /* Colocated: both grids, in layout order. */
  expect_env("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8, 6,
             "HCG_VERSION=1\n"
             "HCG_LAYOUT=vision@0:tp=2,dp=4;llm@0:tp=4,dp=2\n"
             "HCG_RANK=6\nHCG_WORLD_SIZE=8\nHCG_GRIDS=vision,llm\n"
             "HCG_LANGUAGE=llm\n"
             "HCG_VISION_TP_RANK=0\nHCG_VISION_TP_SIZE=2\n"
             "HCG_VISION_DP_RANK=3\nHCG_VISION_DP_SIZE=4\n"
             "HCG_LLM_TP_RANK=2\nHCG_LLM_TP_SIZE=4\n"
             "HCG_LLM_DP_RANK=1\nHCG_LLM_DP_SIZE=2\n");
}
END_TEST

static int stop_at_third(void *arg, const char *name, const char *value) {
  (void)name;
  (void)value;
  return ++*(int *)arg == 3 ? 42 : 0;
}

START_TEST(env_walk_stops_and_bounds) {
  hcg_layout *L = must_parse("tp=2,dp=2", 4);
  int n = 0;
  ck_assert_int_eq(hcg_rank_env(L, 1, stop_at_third, &n), 42);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(hcg_rank_env(L, 4, stop_at_third, &n), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_rank_env(L, -1, stop_at_third, &n), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_rank_env(L, 0, NULL, &n), HCG_EINVAL);
  hcg_layout_free(L);
}
END_TEST

/* Names that collide once upper-cased and joined are refused. */
START_TEST(env_name_collisions) {
  expect_error("a_b:c=2; a:b_c=2; llm:x=4", 8, HCG_ELAYOUT, 12,
               "dim 'c' of grid 'a_b' and dim 'b_c' of grid 'a' would both be "
               "exported as HCG_A_B_C_RANK");
  expect_error("llm:e_x=2,y=2; llm/e:x=2,z=2", 4, HCG_ELAYOUT, 22,
               "would both be exported as HCG_LLM_E_X_RANK");
  /* The same dim name in a view and the base differs by the view part. */
  hcg_layout *L = must_parse("llm:tp=2,dp=2; llm/e:tp=4", 4);
  hcg_layout_free(L);
}
END_TEST

/* Every variable of the walk has a scope; only the core says which. */
static int check_scope(void *arg, const char *name, const char *value) {
  (void)value;
  int *counts = arg;
  int scope = hcg_env_scope(name);
  ck_assert_int_ge(scope, HCG_ENV_SHARED);
  ck_assert_int_le(scope, HCG_ENV_PER_DIM);
  counts[scope]++;
  return 0;
}

START_TEST(env_scopes) {
  ck_assert_int_eq(hcg_env_scope("HCG_LAYOUT"), HCG_ENV_SHARED);
  ck_assert_int_eq(hcg_env_scope("HCG_LANGUAGE"), HCG_ENV_SHARED);
  ck_assert_int_eq(hcg_env_scope("HCG_RANK"), HCG_ENV_PER_RANK);
  ck_assert_int_eq(hcg_env_scope("HCG_GRIDS"), HCG_ENV_PER_RANK);
  ck_assert_int_eq(hcg_env_scope("HCG_LLM_TP_SIZE"), HCG_ENV_PER_DIM);
  ck_assert_int_eq(hcg_env_scope("HCG_TIMEOUT"), 0);
  ck_assert_int_eq(hcg_env_scope(NULL), 0);
  hcg_layout *L = must_parse("llm:tp=2,dp=2; llm/e:ep=4", 4);
  int counts[4] = {0};
  ck_assert_int_eq(hcg_rank_env(L, 1, check_scope, counts), HCG_OK);
  ck_assert_int_eq(counts[HCG_ENV_SHARED], 4);
  ck_assert_int_eq(counts[HCG_ENV_PER_RANK], 2);
  ck_assert_int_eq(counts[HCG_ENV_PER_DIM], 6);
  hcg_layout_free(L);
}
END_TEST

Suite *env_suite(void) {
  Suite *s = suite_create("env");
  TCase *tc = tcase_create("env");
  tcase_add_test(tc, env_single_grid_with_view);
  tcase_add_test(tc, env_mimo);
  tcase_add_test(tc, env_walk_stops_and_bounds);
  tcase_add_test(tc, env_name_collisions);
  tcase_add_test(tc, env_scopes);
  suite_add_tcase(s, tc);
  return s;
}
