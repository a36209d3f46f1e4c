/*
 * test_env.c - contexts from the HCG_* environment: what is read, what is
 * refused and how, configuration defaults and sources, PMIx modes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

/* ---- contexts from the environment -------------------------------------- */

START_TEST(test_ctx_ok) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  ck_assert_int_eq(hcg_ctx_rank(ctx), 5);
  ck_assert_int_eq(hcg_ctx_world_size(ctx), 16);
  ck_assert_int_eq(hcg_ctx_has_pmix(ctx), 0);
  ck_assert_int_eq(hcg_ctx_timeout(ctx), HCG_DEFAULT_TIMEOUT_S);
  ck_assert_int_eq(hcg_ctx_num_grids(ctx), 1);
  ck_assert_int_eq(hcg_ctx_grid(ctx, 0), 0);
  ck_assert_int_eq(hcg_ctx_grid(ctx, 1), -1);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  ck_assert_int_eq(hcg_ctx_num_comms(ctx), 0);
  const hcg_layout *L = hcg_ctx_layout(ctx);
  ck_assert_int_eq(hcg_layout_world_size(L), 16);
  int c[4];
  ck_assert_int_eq(hcg_ctx_coords(ctx, 0, 0, c, 4), 0);
  ck_assert_int_eq(c[0], 1); /* tp */
  ck_assert_int_eq(c[1], 0); /* cp */
  ck_assert_int_eq(c[2], 2); /* dp */
  ck_assert_int_eq(c[3], 0); /* pp */
  hcg_ctx_free(ctx);
}
END_TEST

START_TEST(test_ctx_sources) {
  /* The process environment (the default), then a getter. */
  struct env e;
  make_env(&e, MOE, 16, 3, NULL);
  for (int i = 0; i < e.n; i++) {
    char name[128];
    size_t n = strcspn(e.v[i], "=");
    memcpy(name, e.v[i], n);
    name[n] = '\0';
    ck_assert_int_eq(setenv(name, e.v[i] + n + 1, 1), 0);
  }
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.pmix = HCG_PMIX_OFF;
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_ctx_init(&cfg, &ctx, &err) == 0, "%s", err.message);
  ck_assert_int_eq(hcg_ctx_rank(ctx), 3);
  hcg_ctx_free(ctx);
  for (int i = 0; i < e.n; i++) {
    char name[128];
    size_t n = strcspn(e.v[i], "=");
    memcpy(name, e.v[i], n);
    name[n] = '\0';
    unsetenv(name);
  }
  env_free(&e);
}
END_TEST

static const char *getter(void *arg, const char *name) {
  const char *const *kv = arg;
  for (; kv[0]; kv += 2)
    if (!strcmp(kv[0], name))
      return kv[1];
  return NULL;
}

START_TEST(test_ctx_getter) {
  const char *const kv[] = {
      "HCG_VERSION", "1",        "HCG_LAYOUT", "tp=2,dp=*",   "HCG_WORLD_SIZE",
      "8",           "HCG_RANK", "7",          "HCG_TIMEOUT", "17",
      "HCG_FANIN",   "33",       NULL};
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.getenv_fn = getter;
  cfg.getenv_arg = (void *)kv;
  cfg.envp = (const char *const[]){"HCG_RANK=0", NULL}; /* getter wins */
  cfg.pmix = HCG_PMIX_OFF;
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_ctx_init(&cfg, &ctx, &err) == 0, "%s", err.message);
  ck_assert_int_eq(hcg_ctx_rank(ctx), 7);
  ck_assert_int_eq(hcg_ctx_timeout(ctx), 17);
  ck_assert_int_eq(ctx->fanin, 33);
  ck_assert_int_eq(hcg_ctx_num_grids(ctx), 1);
  hcg_ctx_free(ctx);
  /* Only the minimal variables: per-dim ones may be absent. */
  cfg.timeout_s = 9; /* the config beats HCG_TIMEOUT */
  cfg.fanin = 4;     /* and HCG_FANIN */
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), 0);
  ck_assert_int_eq(hcg_ctx_timeout(ctx), 9);
  ck_assert_int_eq(ctx->fanin, 4);
  hcg_ctx_free(ctx);
}
END_TEST

START_TEST(test_env_missing) {
  expect_env_error(MOE, 16, 5, HCG_EENV, "no HCG_* environment", "HCG_VERSION",
                   "HCG_LAYOUT");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_VERSION is not set",
                   "HCG_VERSION");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE is not set",
                   "HCG_WORLD_SIZE");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_RANK is not set", "HCG_RANK");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_LAYOUT is not set", "HCG_LAYOUT");
}
END_TEST

START_TEST(test_env_malformed) {
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_VERSION='2'", "HCG_VERSION=2");
  expect_env_error(MOE, 16, 5, HCG_EENV, "reads version 1", "HCG_VERSION=one");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_VERSION=''", "HCG_VERSION=");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE='16x'",
                   "HCG_WORLD_SIZE=16x");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE='-16'",
                   "HCG_WORLD_SIZE=-16");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE='0'",
                   "HCG_WORLD_SIZE=0");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE=' 16'",
                   "HCG_WORLD_SIZE= 16");
  expect_env_error(MOE, 16, 5, HCG_EENV, "not an integer in [1, 2147483647]",
                   "HCG_WORLD_SIZE=99999999999999999999999");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_RANK='five'", "HCG_RANK=five");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_RANK='-1'", "HCG_RANK=-1");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_RANK=16 is outside [0, 16)",
                   "HCG_RANK=16");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_TIMEOUT='0'", "HCG_TIMEOUT=0");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_TIMEOUT='1m'", "HCG_TIMEOUT=1m");
  expect_env_error(MOE, 16, 5, HCG_EENV, "[1, 86400]", "HCG_TIMEOUT=86401");
}
END_TEST

START_TEST(test_env_layout) {
  /* The parser's message, with its caret, behind the variable's name. */
  expect_env_error(MOE, 16, 5, HCG_EENV,
                   "HCG_LAYOUT is not a valid layout for HCG_WORLD_SIZE=16: "
                   "layout: column",
                   "HCG_LAYOUT=llm:tp=2,,pp=2");
  expect_env_error(MOE, 16, 5, HCG_EENV, "HCG_WORLD_SIZE=32",
                   "HCG_WORLD_SIZE=32", "HCG_LAYOUT=tp=2,dp=2");
  /* A language module that does not exist. */
  expect_env_error(MIMO, 16, 5, HCG_EENV, "HCG_LAYOUT", "HCG_LANGUAGE=audio");
}
END_TEST

START_TEST(test_env_mismatch) {
  /* HCG_RANK changed, the per-dim variables not. */
  expect_env_error(MOE, 16, 5, HCG_EMISMATCH,
                   "HCG_LLM_TP_RANK='1' but HCG_RANK=6 and HCG_LAYOUT give '0'",
                   "HCG_RANK=6");
  expect_env_error(MOE, 16, 5, HCG_EMISMATCH, "was HCG_RANK changed",
                   "HCG_RANK=13");
  expect_env_error(MOE, 16, 5, HCG_EMISMATCH, "HCG_LLM_EXPERT_EP_SIZE='2'",
                   "HCG_LLM_EXPERT_EP_SIZE=2");
  expect_env_error(MIMO, 16, 5, HCG_EMISMATCH, "HCG_GRIDS='vision'",
                   "HCG_GRIDS=vision");
  expect_env_error(MIMO, 16, 5, HCG_EMISMATCH, "HCG_LANGUAGE",
                   "HCG_LANGUAGE=", "HCG_GRIDS=llm");
  /* An empty variable is not blamed on a changed HCG_RANK. */
  expect_env_error(MIMO, 16, 5, HCG_EMISMATCH,
                   "HCG_LANGUAGE is set but empty; HCG_LAYOUT gives 'llm'",
                   "HCG_LANGUAGE=");
  /* Per-dim variables may be absent (a plugstack option can turn them
   * off): the rest still identifies the task. */
  const char *const drop[] = {"HCG_LLM_TP_RANK",        "HCG_LLM_TP_SIZE",
                              "HCG_LLM_EXPERT_EP_RANK", "HCG_GRIDS",
                              "HCG_LANGUAGE",           NULL};
  hcg_ctx_free(must_ctx_edited(MOE, 16, 5, drop));
}
END_TEST

START_TEST(test_config_errors) {
  struct env e;
  make_env(&e, MOE, 16, 5, NULL);
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.envp = (const char *const *)e.v;
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_ctx_init(&cfg, NULL, &err), HCG_EINVAL);
  cfg.pmix = 7;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_ctx_config.pmix"));
  cfg.pmix = HCG_PMIX_OFF;
  cfg.timeout_s = 0; /* HCG_UNSET is the one "default" */
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  cfg.timeout_s = -2;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  cfg.timeout_s = HCG_MAX_TIMEOUT_S + 1;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  cfg.timeout_s = HCG_UNSET;
  cfg.device = -2;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  cfg.device = HCG_UNSET;
  cfg.fanin = 1;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_ctx_config.fanin"));
  cfg.fanin = HCG_UNSET;
  /* A struct not started from its macro. */
  hcg_ctx_config junk = cfg;
  junk.size = 3;
  ck_assert_int_eq(hcg_ctx_init(&junk, &ctx, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_ctx_config.size is 3"));
  junk.size = sizeof junk;
  junk.version = 0;
  ck_assert_int_eq(hcg_ctx_init(&junk, &ctx, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_ctx_config.version"));
  cfg.tag = "bad tag";
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "letters, digits"));
  char longtag[HCG_MAX_TAG + 2];
  memset(longtag, 'a', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = '\0';
  cfg.tag = longtag;
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_EINVAL);
  longtag[HCG_MAX_TAG] = '\0';
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_OK);
  ck_assert_str_eq(ctx->tag, longtag);
  hcg_ctx_free(ctx);
  ck_assert_ptr_null(NULL);
  hcg_ctx_free(NULL);
  /* NULL error pointers are fine everywhere. */
  cfg.tag = "x y";
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, NULL), HCG_EINVAL);
  env_free(&e);
}
END_TEST

START_TEST(test_pmix_modes) {
  unsetenv("PMIX_NAMESPACE");
  struct env e;
  make_env(&e, MOE, 16, 5, NULL);
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.envp = (const char *const *)e.v;
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  /* AUTO without a server: queries work, exchanges say why not. */
  ck_assert_int_eq(hcg_ctx_init(&cfg, &ctx, &err), HCG_OK);
  ck_assert_int_eq(hcg_ctx_has_pmix(ctx), 0);
  hcg_groupset *set = NULL;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", NULL, &err), 0);
  hcg_exchange *x = (hcg_exchange *)0x1;
  int rc = hcg_exchange_ids(ctx, set, 0, &x, &err);
  ck_assert_ptr_null(x);
  if (pmix_usable()) {
    ck_assert_int_eq(rc, HCG_EPMIX);
    ck_assert_ptr_nonnull(strstr(err.message, "srun --mpi=pmix"));
  } else {
    ck_assert_int_eq(rc, HCG_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.message, "PMIx"));
  }
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
  /* REQUIRE without a server fails in init, clearly. */
  cfg.pmix = HCG_PMIX_REQUIRE;
  ctx = (hcg_ctx *)0x1;
  rc = hcg_ctx_init(&cfg, &ctx, &err);
  ck_assert_ptr_null(ctx);
  if (pmix_usable()) {
    ck_assert_int_eq(rc, HCG_EPMIX);
    ck_assert_ptr_nonnull(strstr(err.message, "srun --mpi=pmix"));
    ck_assert_ptr_nonnull(strstr(err.message, "PMIX_NAMESPACE is not set"));
  } else {
    ck_assert_int_eq(rc, HCG_ENOTSUP);
    ck_assert_ptr_nonnull(strstr(err.message, "PMIx is required but "));
  }
  env_free(&e);
}
END_TEST

/* HCG_*_LOCAL, the plugin's placement verdicts, read at init. */
START_TEST(test_ctx_node_local) {
  const char *text = "llm:tp=2,dp=*; llm/expert:ep=4,expt_dp=*";
  const char *const edits[] = {"HCG_LLM_TP_LOCAL=1",
                               "HCG_LLM_EXPERT_EP_LOCAL=0", NULL};
  hcg_ctx *ctx = must_ctx_edited(text, 8, 5, edits);
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 0, 0), 1);  /* tp */
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 0, 1), -1); /* dp: unset */
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 1, 0), 0);  /* expert ep */
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 99, 0), -1);
  ck_assert_int_eq(hcg_ctx_node_local(NULL, 0, 0, 0), -1);
  hcg_ctx_free(ctx);
  /* Without the plugin's check: not known. */
  ctx = must_ctx(text, 8, 5);
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 0, 0), -1);
  hcg_ctx_free(ctx);
  expect_env_error(text, 8, 5, HCG_EENV,
                   "HCG_LLM_TP_LOCAL is 'yes', not 0 or 1",
                   "HCG_LLM_TP_LOCAL=yes");
}
END_TEST

/* HCG_*_DOMAIN_LOCAL, the verdicts on NVLink domains, beside the node's. */
START_TEST(test_ctx_domain_local) {
  const char *text = "llm:tp=2,dp=*; llm/expert:ep=4,expt_dp=*";
  const char *const edits[] = {"HCG_LLM_EXPERT_EP_LOCAL=0",
                               "HCG_LLM_EXPERT_EP_DOMAIN_LOCAL=1", NULL};
  hcg_ctx *ctx = must_ctx_edited(text, 8, 5, edits);
  ck_assert_int_eq(hcg_ctx_domain_local(ctx, 0, 1, 0), 1); /* expert ep */
  ck_assert_int_eq(hcg_ctx_node_local(ctx, 0, 1, 0), 0);
  ck_assert_int_eq(hcg_ctx_domain_local(ctx, 0, 0, 0), -1); /* tp: unset */
  ck_assert_int_eq(hcg_ctx_domain_local(ctx, 0, 99, 0), -1);
  ck_assert_int_eq(hcg_ctx_domain_local(ctx, -1, 0, 0), -1);
  ck_assert_int_eq(hcg_ctx_domain_local(NULL, 0, 1, 0), -1);
  hcg_ctx_free(ctx);
  ctx = must_ctx(text, 8, 5);
  ck_assert_int_eq(hcg_ctx_domain_local(ctx, 0, 1, 0), -1);
  hcg_ctx_free(ctx);
  expect_env_error(text, 8, 5, HCG_EENV,
                   "HCG_LLM_EXPERT_EP_DOMAIN_LOCAL is '2', not 0 or 1",
                   "HCG_LLM_EXPERT_EP_DOMAIN_LOCAL=2");
}
END_TEST

TCase *environment_tests(void) {
  TCase *env = tcase_create("environment");
  tcase_add_test(env, test_ctx_ok);
  tcase_add_test(env, test_ctx_sources);
  tcase_add_test(env, test_ctx_getter);
  tcase_add_test(env, test_ctx_node_local);
  tcase_add_test(env, test_ctx_domain_local);
  tcase_add_test(env, test_env_missing);
  tcase_add_test(env, test_env_malformed);
  tcase_add_test(env, test_env_layout);
  tcase_add_test(env, test_env_mismatch);
  tcase_add_test(env, test_config_errors);
  tcase_add_test(env, test_pmix_modes);
  return env;
}
