/* test_placement.c - ranks on nodes, and the intra-node check
 * (doc/interfaces.md, placement). */
#include <stdio.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

static hcg_placement place(int world, int nodes, int tpn, const char *dist) {
  hcg_placement p;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_placement_make(world, nodes, tpn, dist, &p, &err) == HCG_OK,
                "%s", err.message);
  return p;
}

static void expect_nodes(hcg_placement p, const char *expected) {
  char got[512] = "";
  for (int r = 0; r < p.world; r++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%d",
             hcg_placement_node(&p, r));
  ck_assert_str_eq(got, expected);
}

START_TEST(placement_distributions) {
  /* Slurm's block spreads 10 tasks on 4 nodes as 3,3,2,2. */
  expect_nodes(place(10, 4, 0, NULL), "0001112233");
  expect_nodes(place(10, 4, 0, "block"), "0001112233");
  expect_nodes(place(10, 0, 4, "block"), "0000111122");
  expect_nodes(place(10, 4, 0, "cyclic"), "0123012301");
  expect_nodes(place(12, 3, 0, "plane=2"), "001122001122");
  expect_nodes(place(8, 0, 4, NULL), "00001111");
  hcg_placement p = place(8, 2, 0, NULL);
  ck_assert_int_eq(hcg_placement_node(&p, 8), -1);
  ck_assert_int_eq(hcg_placement_node(&p, -1), -1);
  ck_assert_int_eq(hcg_placement_node(NULL, 0), -1);
}
END_TEST

START_TEST(placement_bad_arguments) {
  hcg_placement p;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_placement_make(8, 2, 4, NULL, &p, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_placement_make(8, 0, 0, NULL, &p, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_placement_make(8, 9, 0, NULL, &p, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "9 nodes for 8 tasks"));
  const char *bad[] = {"arbitrary", "plane",    "plane=", "plane=0",
                       "plane=-1",  "plane=2x", "Block",  "plane=99999999999"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_int_eq(hcg_placement_make(8, 2, 0, bad[i], &p, &err), HCG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.message, "block, cyclic or plane=P"));
  }
}
END_TEST

START_TEST(placement_dim_lists) {
  ck_assert(hcg_placement_dim_listed(NULL, "tp"));
  ck_assert(hcg_placement_dim_listed(NULL, "expt_tp"));
  ck_assert(!hcg_placement_dim_listed(NULL, "pp"));
  ck_assert(!hcg_placement_dim_listed(NULL, "t"));
  ck_assert(!hcg_placement_dim_listed("tp,cp", "c"));
  ck_assert(hcg_placement_dim_listed("pp", "pp"));
  ck_assert(hcg_placement_dims_valid("tp"));
  ck_assert(hcg_placement_dims_valid(HCG_PLACEMENT_DEFAULT_DIMS));
  const char *bad[] = {"", ",", "tp,", ",tp", "tp,,cp", "TP", "tp cp", "1tp"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(!hcg_placement_dims_valid(bad[i]), "'%s'", bad[i]);
  ck_assert(!hcg_placement_dims_valid(NULL));
}
END_TEST

/* slurmstepd's view: a node knows only whether a rank is its own. */
struct local_view {
  const hcg_placement *p;
  int node;
};
static int node_local(void *arg, int rank) {
  const struct local_view *v = arg;
  return hcg_placement_node(v->p, rank) == v->node ? 0 : -1;
}
static int node_model(void *arg, int rank) {
  return hcg_placement_node(arg, rank);
}

struct verdicts {
  char text[1024];
};
static int record(void *arg, const hcg_placement_verdict *v) {
  struct verdicts *o = arg;
  snprintf(o->text + strlen(o->text), sizeof o->text - strlen(o->text),
           "%d.%d.%d=%d ", v->grid, v->view, v->dim, v->local);
  return 0;
}

/* On every rank, the node's local view (the plugin) and the modelled
 * placement (hcg check/explain) give the same verdicts. */
static void expect_agree(const char *layout, int world, hcg_placement p,
                         const char *rank0) {
  hcg_layout *L = must_parse(layout, world);
  for (int r = 0; r < world; r++) {
    struct local_view lv = {&p, hcg_placement_node(&p, r)};
    struct verdicts a = {""}, b = {""};
    ck_assert_int_eq(
        hcg_rank_placement(L, r, NULL, node_local, &lv, record, &a), HCG_OK);
    ck_assert_int_eq(hcg_rank_placement(L, r, NULL, node_model, &p, record, &b),
                     HCG_OK);
    ck_assert_msg(!strcmp(a.text, b.text), "rank %d: %s vs %s", r, a.text,
                  b.text);
    if (r == 0 && rank0)
      ck_assert_str_eq(a.text, rank0);
  }
  hcg_layout_free(L);
}

START_TEST(placement_local_view_agrees) {
  expect_agree("tp=4,dp=*", 8, place(8, 2, 0, NULL), "0.0.0=1 ");
  expect_agree("tp=8,dp=*", 16, place(16, 4, 0, NULL), "0.0.0=0 ");
  /* Cyclic turns the verdict around: tp strided by 2 lands on one node. */
  expect_agree("dp=2,tp=4", 8, place(8, 2, 0, NULL), "0.0.1=0 ");
  expect_agree("dp=2,tp=4", 8, place(8, 2, 0, "cyclic"), "0.0.1=1 ");
  expect_agree("tp=2,dp=*", 8, place(8, 2, 0, "cyclic"), "0.0.0=0 ");
  expect_agree("tp=3,dp=*", 12, place(12, 0, 4, NULL), NULL);
  expect_agree("tp=2,dp=*", 12, place(12, 3, 0, "plane=2"), NULL);
  /* Expert view dims; pp (shared) is never checked. */
  expect_agree("llm:tp=2,cp=2,dp=*,pp=2; llm/expert:expt_tp=2,ep=4,pp", 16,
               place(16, 2, 0, NULL), "0.0.0=1 0.0.1=1 0.1.0=1 0.1.1=1 ");
  expect_agree("vision:tp=4,dp=2; llm:tp=2,cp=2,dp=*", 16,
               place(16, 0, 4, "cyclic"), "0.0.0=0 ");
}
END_TEST

START_TEST(placement_message_and_env) {
  hcg_layout *L = must_parse("llm:tp=8,dp=*; llm/expert:ep=4,expt_dp=*", 16);
  hcg_placement p = place(16, 4, 0, NULL);
  struct verdicts v = {""};
  ck_assert_int_eq(
      hcg_rank_placement(L, 5, "tp,ep", node_model, &p, record, &v), HCG_OK);
  ck_assert_str_eq(v.text, "0.0.0=0 0.1.0=1 ");
  hcg_placement_verdict vd;
  memset(&vd, 0, sizeof vd);
  hcg_request req = {0, 0, 1};
  ck_assert_int_eq(hcg_group_of_rank(L, &req, 5, &vd.group), HCG_OK);
  ck_assert(!hcg_group_on_one_node(L, &vd.group, node_model, &p, vd.apart));
  ck_assert_int_eq(vd.apart[0], 0);
  ck_assert_int_eq(vd.apart[1], 4);
  char msg[256];
  hcg_placement_message(L, &vd, "node 0", "node 1", msg, sizeof msg);
  ck_assert_str_eq(msg, "grid 'llm', dim 'tp': group [0,1,2,3,4,5,6,7] spans "
                        "node 0 (rank 0) and node 1 (rank 4)");
  struct local_view lv = {&p, 1};
  ck_assert(!hcg_group_on_one_node(L, &vd.group, node_local, &lv, vd.apart));
  ck_assert_int_eq(vd.apart[0], 4); /* the member on the checked node */
  ck_assert_int_eq(vd.apart[1], 0);

  ck_assert_int_eq(hcg_env_scope("HCG_LLM_TP_LOCAL"), HCG_ENV_PLACEMENT);
  ck_assert_int_eq(hcg_env_scope("HCG_LLM_EXPERT_EP_LOCAL"), HCG_ENV_PLACEMENT);
  ck_assert_int_eq(hcg_env_scope("LLM_TP_LOCAL"), 0);
  hcg_layout_free(L);
}
END_TEST

static int collect_env(void *arg, const char *name, const char *value) {
  char *t = arg;
  snprintf(t + strlen(t), 512 - strlen(t), "%s=%s\n", name, value);
  return 0;
}

START_TEST(placement_env_names) {
  hcg_layout *L = must_parse(
      "vision:tp=2,dp=2; llm:tp=2,dp=*; llm/expert:expt_tp=1,ep=4,expt_dp=*",
      12);
  hcg_placement p = place(12, 0, 3, NULL); /* 0-2, 3-5, 6-8, 9-11 */
  char text[512] = "";
  ck_assert_int_eq(
      hcg_rank_placement_env(L, 7, NULL, node_model, &p, collect_env, text),
      HCG_OK);
  ck_assert_str_eq(text, "HCG_LLM_TP_LOCAL=1\n"
                         "HCG_LLM_EXPERT_EXPT_TP_LOCAL=1\n"
                         "HCG_LLM_EXPERT_EP_LOCAL=0\n");
  text[0] = '\0';
  ck_assert_int_eq(
      hcg_rank_placement_env(L, 1, "dp", node_model, &p, collect_env, text),
      HCG_OK);
  ck_assert_str_eq(text, "HCG_VISION_DP_LOCAL=0\n");
  ck_assert_int_eq(
      hcg_rank_placement_env(L, 12, NULL, node_model, &p, collect_env, text),
      HCG_ENOTMEMBER);
  hcg_layout_free(L);
}
END_TEST

Suite *placement_suite(void) {
  Suite *s = suite_create("placement");
  TCase *tc = tcase_create("placement");
  tcase_add_test(tc, placement_distributions);
  tcase_add_test(tc, placement_bad_arguments);
  tcase_add_test(tc, placement_dim_lists);
  tcase_add_test(tc, placement_local_view_agrees);
  tcase_add_test(tc, placement_message_and_env);
  tcase_add_test(tc, placement_env_names);
  suite_add_tcase(s, tc);
  return s;
}
