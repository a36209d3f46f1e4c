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

/* ---- domains above the node --------------------------------------------- */

START_TEST(domain_model_and_lists) {
  hcg_placement p = place(16, 4, 0, NULL); /* 4 ranks per node */
  char got[64] = "";
  for (int r = 0; r < 16; r++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%d",
             hcg_placement_domain(&p, 2, r));
  ck_assert_str_eq(got, "0000000011111111");
  hcg_placement q = place(10, 5, 0, NULL); /* the last domain holds 1 node */
  ck_assert_int_eq(hcg_placement_domain(&q, 2, 9), 2);
  ck_assert_int_eq(hcg_placement_domain(&p, 0, 0), -1);
  ck_assert_int_eq(hcg_placement_domain(&p, 2, 16), -1);
  ck_assert_int_eq(hcg_placement_domain(NULL, 2, 0), -1);

  char out[64];
  ck_assert_int_eq(hcg_placement_node_level_dims(NULL, NULL, out, sizeof out),
                   HCG_OK);
  ck_assert_str_eq(out, "tp,cp");
  ck_assert_int_eq(
      hcg_placement_node_level_dims("tp,cp,ep", "tp", out, sizeof out), HCG_OK);
  ck_assert_str_eq(out, "cp,ep");
  ck_assert_int_eq(hcg_placement_node_level_dims("ep", NULL, out, sizeof out),
                   HCG_OK);
  ck_assert_str_eq(out, "");
  ck_assert_int_eq(hcg_placement_node_level_dims("tp,ep", "", out, sizeof out),
                   HCG_OK);
  ck_assert_str_eq(out, "tp,ep");
  /* e is not ep, expt is not expt_tp: whole names only. */
  ck_assert_int_eq(
      hcg_placement_node_level_dims("e,expt", NULL, out, sizeof out), HCG_OK);
  ck_assert_str_eq(out, "e,expt");
  ck_assert_int_eq(hcg_placement_node_level_dims("tp,cp", "", out, 5),
                   HCG_ELIMIT);
  ck_assert_int_eq(hcg_placement_node_level_dims(NULL, NULL, NULL, 8),
                   HCG_EINVAL);
  ck_assert(hcg_placement_dim_listed(HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS, "ep"));
  ck_assert(hcg_placement_dims_valid(HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS));
}
END_TEST

struct domain_model {
  hcg_placement p;
  int size;
};
static int domain_modelled(void *arg, int rank) {
  const struct domain_model *m = arg;
  return hcg_placement_domain(&m->p, m->size, rank);
}
static int node_of_model(void *arg, int rank) {
  return hcg_placement_node(&((const struct domain_model *)arg)->p, rank);
}

START_TEST(domain_env_and_dim_check) {
  /* 8 ranks, 2 per node, domains of 2 nodes: ranks 0-3 and 4-7. */
  hcg_layout *L = must_parse("tp=2,dp=2,ep=2", 8);
  struct domain_model m = {place(8, 4, 0, NULL), 2};
  char text[512] = "";
  ck_assert_int_eq(
      hcg_rank_domain_env(L, 5, NULL, domain_modelled, &m, collect_env, text),
      HCG_OK);
  ck_assert_str_eq(text, "HCG_WORLD_EP_DOMAIN_LOCAL=0\n");
  text[0] = '\0';
  ck_assert_int_eq(hcg_rank_domain_env(L, 5, "tp,dp", domain_modelled, &m,
                                       collect_env, text),
                   HCG_OK);
  ck_assert_str_eq(text, "HCG_WORLD_TP_DOMAIN_LOCAL=1\n"
                         "HCG_WORLD_DP_DOMAIN_LOCAL=1\n");
  text[0] = '\0';
  ck_assert_int_eq(
      hcg_rank_domain_env(L, 5, "", domain_modelled, &m, collect_env, text),
      HCG_OK);
  ck_assert_str_eq(text, "");
  ck_assert_int_eq(
      hcg_rank_domain_env(L, 0, NULL, domain_modelled, &m, NULL, NULL),
      HCG_EINVAL);
  ck_assert_int_eq(hcg_env_scope("HCG_WORLD_EP_DOMAIN_LOCAL"),
                   HCG_ENV_PLACEMENT);

  int crossing = -1;
  hcg_placement_verdict ex;
  ck_assert_int_eq(
      hcg_dim_placement(L, 0, 0, 2, domain_modelled, &m, &crossing, &ex), 4);
  ck_assert_int_eq(crossing, 4);
  ck_assert_int_eq(ex.local, 0);
  ck_assert_int_eq(ex.group.first, 0);
  ck_assert_int_eq(ex.apart[0], 0);
  ck_assert_int_eq(ex.apart[1], 4);
  ck_assert_int_eq(
      hcg_dim_placement(L, 0, 0, 1, domain_modelled, &m, &crossing, &ex), 4);
  ck_assert_int_eq(crossing, 0);
  ck_assert_int_eq(ex.local, 1);
  ck_assert_int_eq(ex.dim, 1);
  ck_assert_int_eq(
      hcg_dim_placement(L, 0, 0, 3, domain_modelled, &m, NULL, NULL),
      -HCG_EINVAL);
  ck_assert_int_eq(
      hcg_dim_placement(L, 1, 0, 0, domain_modelled, &m, NULL, NULL),
      -HCG_EINVAL);
  ck_assert_int_eq(hcg_dim_placement(L, 0, 0, 0, NULL, &m, NULL, NULL),
                   -HCG_EINVAL);
  hcg_layout_free(L);
}
END_TEST

/* hcg_placement_suggest over a modelled placement and its alternatives. */
static int suggest_for(const char *layout, int world, int nodes,
                       const char *dist, int domain_size, const char *alt,
                       char *out, size_t cap) {
  hcg_layout *L = must_parse(layout, world);
  struct domain_model now = {place(world, nodes, 0, dist), domain_size};
  struct domain_model other = {place(world, nodes, 0, alt ? alt : "block"),
                               domain_size};
  hcg_placement_where where = {node_of_model, &now, domain_modelled, &now};
  hcg_placement_alt alts[1] = {
      {"--distribution=X", {node_of_model, &other, domain_modelled, &other}}};
  int rc =
      hcg_placement_suggest(L, NULL, NULL, &where, alts, alt ? 1 : 0, out, cap);
  hcg_layout_free(L);
  return rc;
}

START_TEST(domain_suggestions) {
  char s[512];
  /* ep strided by dp=2 crosses the two domains; ep first keeps it in. */
  ck_assert_int_eq(suggest_for("dp=2,ep=4", 8, 4, NULL, 2, NULL, s, sizeof s),
                   1);
  ck_assert_str_eq(s, "put ep before dp, as in 'ep=4,dp=2'");
  /* ep strided by dp=4: cyclic over 4 nodes puts ranks r and r+4 on one
   * node, so it helps too; but not where it does not (dp=2,ep=4 above). */
  ck_assert_int_eq(
      suggest_for("dp=4,ep=2", 8, 4, NULL, 2, "cyclic", s, sizeof s), 1);
  ck_assert_str_eq(s, "put ep before dp, as in 'ep=2,dp=4', or use "
                      "--distribution=X");
  ck_assert_int_eq(
      suggest_for("dp=2,ep=4", 8, 4, NULL, 2, "cyclic", s, sizeof s), 1);
  ck_assert_str_eq(s, "put ep before dp, as in 'ep=4,dp=2'");
  /* The expert view: ep before expt_dp, the view item shown. */
  ck_assert_int_eq(
      suggest_for("llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,expt_dp=*,ep=8,pp",
                  32, 8, NULL, 2, NULL, s, sizeof s),
      1);
  ck_assert_str_eq(s, "put ep before expt_dp, as in "
                      "'llm/expert:expt_tp=1,ep=8,expt_dp=2,pp'");
  /* Nothing crosses. */
  ck_assert_int_eq(suggest_for("ep=4,dp=2", 8, 4, NULL, 2, NULL, s, sizeof s),
                   0);
  ck_assert_str_eq(s, "every group is inside already");
  /* ep=8 is wider than a domain of 4 ranks: nothing helps, and it says so. */
  ck_assert_int_eq(
      suggest_for("ep=8,dp=1", 8, 4, NULL, 2, "cyclic", s, sizeof s), 0);
  ck_assert_str_eq(s, "no dim moved earlier in its order and no other "
                      "placement tried (--distribution=X) keeps every group "
                      "inside");
  /* A node-level dim is not traded for the domain one: tp=2 must stay on
   * its node, which ep first would break. */
  ck_assert_int_eq(
      suggest_for("tp=2,dp=2,ep=2", 8, 4, NULL, 2, NULL, s, sizeof s), 1);
  ck_assert_str_eq(s, "put ep before dp, as in 'tp=2,ep=2,dp=2'");
  /* Too large a search is not made. */
  ck_assert_int_eq(suggest_for("tp=2,dp=*,ep=2", 1 << 24, 1 << 20, NULL, 2,
                               NULL, s, sizeof s),
                   HCG_ELIMIT);
  ck_assert_ptr_nonnull(strstr(s, "no suggestion computed"));
  /* Bad arguments. */
  hcg_layout *L = must_parse("tp=2", 2);
  hcg_placement_where none = {NULL, NULL, NULL, NULL};
  ck_assert_int_eq(
      hcg_placement_suggest(L, NULL, NULL, &none, NULL, 0, s, sizeof s),
      HCG_EINVAL);
  ck_assert_int_eq(
      hcg_placement_suggest(L, NULL, NULL, NULL, NULL, 0, s, sizeof s),
      HCG_EINVAL);
  hcg_layout_free(L);
}
END_TEST

START_TEST(domain_variable_names_collide) {
  expect_error("a:b=2,b_domain=2", 4, HCG_ELAYOUT, 7,
               "would both be exported as HCG_A_B_DOMAIN_LOCAL");
  expect_error("a:b=2,c=2; a/b:domain=4", 4, HCG_ELAYOUT, 16,
               "the node verdict of dim 'domain' of view 'a/b'");
  hcg_layout *L = must_parse("a:b=2,domain=2", 4); /* no b_domain */
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
  tcase_add_test(tc, domain_model_and_lists);
  tcase_add_test(tc, domain_env_and_dim_check);
  tcase_add_test(tc, domain_suggestions);
  tcase_add_test(tc, domain_variable_names_collide);
  suite_add_tcase(s, tc);
  return s;
}
