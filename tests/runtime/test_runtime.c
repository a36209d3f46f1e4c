/*
 * test_runtime.c - unit tests of libhcg's runtime that need no cluster:
 * reading and checking the HCG_* environment, configuration defaults,
 * queries, group sets and their per-rank plans, PMIx key derivation, and
 * what the exchange and communicator calls do without PMIx, NCCL or a GPU.
 *
 * Environments are built with hcg_rank_env (what the plugin exports) and
 * then damaged on purpose.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"
#include "rt.h"

#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

/* ---- environments -------------------------------------------------------- */

#define ENV_MAX 256

struct env {
  char *v[ENV_MAX + 1];
  int n;
};

static int env_add(void *arg, const char *name, const char *value) {
  struct env *e = arg;
  ck_assert_int_lt(e->n, ENV_MAX);
  size_t len = strlen(name) + strlen(value) + 2;
  e->v[e->n] = malloc(len);
  ck_assert_ptr_nonnull(e->v[e->n]);
  snprintf(e->v[e->n], len, "%s=%s", name, value);
  e->n++;
  e->v[e->n] = NULL;
  return 0;
}

static void env_free(struct env *e) {
  for (int i = 0; i < e->n; i++)
    free(e->v[i]);
  e->n = 0;
  e->v[0] = NULL;
}

/* Sets NAME=VALUE (replacing), or removes NAME when `edit` has no '='. */
static void env_edit(struct env *e, const char *edit) {
  const char *eq = strchr(edit, '=');
  size_t n = eq ? (size_t)(eq - edit) : strlen(edit);
  for (int i = 0; i < e->n; i++)
    if (strncmp(e->v[i], edit, n) == 0 && e->v[i][n] == '=') {
      free(e->v[i]);
      e->v[i] = e->v[--e->n];
      e->v[e->n] = NULL;
      break;
    }
  if (eq) {
    char name[128];
    ck_assert_uint_lt(n, sizeof name);
    memcpy(name, edit, n);
    name[n] = '\0';
    env_add(e, name, eq + 1);
  }
}

/* The environment the plugin gives `rank` for `text` on `world` ranks,
 * then each edit of the NULL-terminated list. */
static void make_env(struct env *e, const char *text, int world, int rank,
                     const char *const *edits) {
  e->n = 0;
  e->v[0] = NULL;
  hcg_layout_config lc = HCG_LAYOUT_CONFIG_INIT;
  lc.world_size = world;
  hcg_layout *L = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_layout_parse(text, strlen(text), &lc, &L, &err) == 0, "%s",
                err.message);
  ck_assert_int_eq(hcg_rank_env(L, rank, env_add, e), 0);
  hcg_layout_free(L);
  for (int i = 0; edits && edits[i]; i++)
    env_edit(e, edits[i]);
}

/* hcg_ctx_init on an environment with PMIx off. */
static int ctx_from(struct env *e, hcg_ctx **ctx, hcg_error *err) {
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.envp = (const char *const *)e->v;
  cfg.pmix = HCG_PMIX_OFF;
  return hcg_ctx_init(&cfg, ctx, err);
}

static hcg_ctx *must_ctx(const char *text, int world, int rank) {
  struct env e;
  make_env(&e, text, world, rank, NULL);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = ctx_from(&e, &ctx, &err);
  env_free(&e);
  ck_assert_msg(rc == 0, "hcg_ctx_init: %s", err.message);
  return ctx;
}

#define expect_env_error(text, world, rank, want_, needle, ...)                \
  do {                                                                         \
    const char *const edits_[] = {__VA_ARGS__, NULL};                          \
    struct env e_;                                                             \
    make_env(&e_, text, world, rank, edits_);                                  \
    hcg_ctx *c_ = (hcg_ctx *)0x1;                                              \
    hcg_error err_ = HCG_ERROR_INIT;                                           \
    int rc_ = ctx_from(&e_, &c_, &err_);                                       \
    env_free(&e_);                                                             \
    ck_assert_msg(rc_ == (want_), "got %d (%s), want %d", rc_, err_.message,   \
                  (want_));                                                    \
    ck_assert_int_eq(err_.code, (want_));                                      \
    ck_assert_ptr_null(c_);                                                    \
    ck_assert_msg(strstr(err_.message, needle), "'%s' not in '%s'", needle,    \
                  err_.message);                                               \
  } while (0)

static const char *const MOE =
    "llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp";
static const char *const MIMO =
    "vision:tp=2,dp=2; llm:tp=2,pp=2,dp=*"; /* vision 0-3, llm 4-15 */
static const char *const COLOC = "vision@0:tp=2,dp=4; llm@0:tp=4,dp=2";

/* Whether this build can call PMIx here: linked with it, or able to load
 * libpmix.so.2 (runtime/lib/pmix_abi.h). */
static int pmix_usable(void) {
  hcg_error why = HCG_ERROR_INIT;
  return hcgrt_pmix_usable(&why) == HCG_OK;
}

/* ---- hcg_ctx_broadcast: arguments (the PMIx path runs on the cluster) --- */

START_TEST(test_broadcast_args) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  char buf[8] = "x";
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_ctx_broadcast(NULL, 0, buf, 1, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_broadcast(ctx, 0, NULL, 1, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_broadcast(ctx, 0, buf, 0, &err), HCG_EINVAL);
  ck_assert_int_eq(
      hcg_ctx_broadcast(ctx, 0, buf, (size_t)HCG_BROADCAST_MAX + 1, &err),
      HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_broadcast(ctx, 16, buf, 1, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "root 16 is not a rank"));
  ck_assert_int_eq(hcg_ctx_broadcast(ctx, -1, buf, 1, &err), HCG_EINVAL);
  if (pmix_usable()) {
    /* PMIx off: refused, with the way out named, and no fence counted. */
    ck_assert_int_eq(hcg_ctx_broadcast(ctx, 0, buf, 1, &err), HCG_EPMIX);
    ck_assert_ptr_nonnull(strstr(err.message, "srun --mpi=pmix"));
  } else {
    ck_assert_int_eq(hcg_ctx_broadcast(ctx, 0, buf, 1, &err), HCG_ENOTSUP);
  }
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_ctx_free(ctx);
}
END_TEST

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
  struct env e;
  const char *const drop[] = {"HCG_LLM_TP_RANK",        "HCG_LLM_TP_SIZE",
                              "HCG_LLM_EXPERT_EP_RANK", "HCG_GRIDS",
                              "HCG_LANGUAGE",           NULL};
  make_env(&e, MOE, 16, 5, drop);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(ctx_from(&e, &ctx, &err) == 0, "%s", err.message);
  hcg_ctx_free(ctx);
  env_free(&e);
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

/* ---- group sets and plans ---------------------------------------------------
 */

static int plan_has(const struct hcgrt_plan *p, const char *key) {
  for (int i = 0; i < p->n; i++)
    if (!strcmp(p->items[i].key, key))
      return 1;
  return 0;
}

START_TEST(test_plan_collection) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 13);
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(L, &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 0, NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_num_entries(set), 1);
  struct hcgrt_plan p;
  ck_assert_int_eq(hcgrt_plan_build(set, 13, 0, &p, &err), 0);
  /* tp, cp, pp, dp, dp-cp, cp-tp, pp-tp (mp), dp-tp, dp-cp-tp, ep, expt_tp,
   * expt_dp, ep-expt_tp, pp-ep-expt_tp, intra_dist_opt (all dims), embd,
   * pos_embd ... once each; aliases and equal dim sets add nothing. */
  for (int i = 0; i < p.n; i++)
    for (int j = i + 1; j < p.n; j++)
      ck_assert_str_ne(p.items[i].key, p.items[j].key);
  ck_assert(plan_has(&p, "llm:tp"));
  ck_assert(plan_has(&p, "llm:dp-cp"));
  ck_assert(plan_has(&p, "llm:pp-tp"));
  ck_assert(plan_has(&p, "llm/expert:ep-expt_tp"));
  ck_assert(plan_has(&p, "llm/expert:pp-ep-expt_tp"));
  ck_assert(plan_has(&p, "llm:pp-dp-cp-tp"));
  ck_assert(plan_has(&p, "llm#embd"));
  ck_assert(plan_has(&p, "llm#pos_embd") == 0); /* rank 13: last stage */
  ck_assert(!plan_has(&p, "llm/expert:pp"));    /* resolved to llm:pp */
  ck_assert(plan_has(&p, "llm:pp"));
  int n = p.n;
  for (int i = 0; i < p.n; i++) {
    ck_assert_int_eq(p.items[i].member, 1);
    ck_assert_int_le(p.items[i].leader, 13);
    ck_assert_int_ge(p.items[i].group.index, 0);
  }
  hcgrt_plan_free(&p);

  /* Alias fields, specs naming the same dims in another order or through
   * the view, and the collection twice: still one group per key. */
  ck_assert_int_eq(hcg_groupset_add(set, "llm:cp,dp", NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm/expert:pp", NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 0, NULL, &err), 0);
  hcg_request r = {0, 1, 1u << 3}; /* expert view, dim 3 = pp (shared) */
  ck_assert_int_eq(hcg_groupset_add_request(set, &r, NULL, &err), 0);
  ck_assert_int_eq(hcgrt_plan_build(set, 13, 0, &p, &err), 0);
  ck_assert_int_eq(p.n, n);
  hcgrt_plan_free(&p);

  /* Rank 0 also holds pos_embd. */
  ck_assert_int_eq(hcgrt_plan_build(set, 0, 0, &p, &err), 0);
  ck_assert_int_eq(p.n, n + 1);
  ck_assert(plan_has(&p, "llm#pos_embd"));
  hcgrt_plan_free(&p);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

START_TEST(test_plan_mimo) {
  hcg_ctx *ctx = must_ctx(MIMO, 16, 2);
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(L, &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 0, NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 1, NULL, &err), 0);
  struct hcgrt_plan own, all;
  ck_assert_int_eq(hcgrt_plan_build(set, 2, 0, &own, &err), 0);
  ck_assert_int_eq(hcgrt_plan_build(set, 2, 1, &all, &err), 0);
  ck_assert_int_gt(all.n, own.n);
  for (int i = 0; i < own.n; i++)
    ck_assert_msg(!strncmp(own.items[i].key, "vision", 6), "%s",
                  own.items[i].key);
  ck_assert(plan_has(&all, "llm:tp"));
  ck_assert(plan_has(&all, "llm#embd"));
  /* Every process lists the same keys in the same order (naive mode). */
  struct hcgrt_plan other;
  ck_assert_int_eq(hcgrt_plan_build(set, 9, 1, &other, &err), 0);
  ck_assert_int_eq(other.n, all.n);
  for (int i = 0; i < all.n; i++) {
    ck_assert_str_eq(all.items[i].key, other.items[i].key);
    ck_assert_int_eq(all.items[i].member, !strncmp(all.items[i].key, "vis", 3));
    ck_assert_int_eq(other.items[i].member,
                     !!strncmp(all.items[i].key, "vis", 3));
  }
  hcgrt_plan_free(&own);
  hcgrt_plan_free(&all);
  hcgrt_plan_free(&other);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

START_TEST(test_groupset_errors) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set = (hcg_groupset *)0x1;
  ck_assert_int_eq(hcg_groupset_create(NULL, &set, &err), HCG_EINVAL);
  ck_assert_ptr_null(set);
  ck_assert_int_eq(hcg_groupset_create(L, &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:xx", NULL, &err), HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_groupset_add(set, "vision:tp", NULL, &err),
                   HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_groupset_add(set, NULL, NULL, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 3, NULL, &err),
                   HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_groupset_add_embedding(set, 5, NULL, &err), HCG_EINVAL);
  hcg_request bad = {0, 0, 1u << 9};
  ck_assert_int_eq(hcg_groupset_add_request(set, &bad, NULL, &err), HCG_EINVAL);
  bad.view = 4;
  ck_assert_int_eq(hcg_groupset_add_request(set, &bad, NULL, &err), HCG_EINVAL);
  hcg_comm_options o = HCG_COMM_OPTIONS_INIT;
  o.high_priority = 2;
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &o, &err), HCG_EINVAL);
  o.high_priority = 0;
  o.min_ctas = 0; /* HCG_UNSET is the one "default" */
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &o, &err), HCG_EINVAL);
  o.min_ctas = 8;
  o.max_ctas = 4;
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &o, &err), HCG_EINVAL);
  o.max_ctas = 16;
  o.split_share = 2;
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &o, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_groupset_num_entries(set), 0);

  /* Same key, different options: refused when the set is used. */
  hcg_comm_options hi = HCG_COMM_OPTIONS_INIT;
  hi.high_priority = 1;
  hi.net_name = "Socket";
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &hi, &err), 0);
  hcg_comm_options same = hi;
  char name[] = "Socket"; /* equal by value, not by pointer */
  same.net_name = name;
  ck_assert_int_eq(hcg_groupset_add(set, "llm/expert:expt_tp,ep", NULL, &err),
                   0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &same, &err), 0);
  struct hcgrt_plan p;
  ck_assert_int_eq(hcgrt_plan_build(set, 5, 0, &p, &err), 0);
  ck_assert_int_eq(p.n, 2);
  ck_assert_str_eq(p.items[0].entry->opts.net_name, "Socket");
  ck_assert_int_eq(p.items[0].entry->opts.high_priority, 1);
  hcgrt_plan_free(&p);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 0, NULL, &err), 0);
  ck_assert_int_eq(hcgrt_plan_build(set, 5, 0, &p, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "group 'llm:tp' is named twice"));
  ck_assert_ptr_null(p.items);

  /* A set of another layout is refused by the exchange. */
  hcg_ctx *other = must_ctx(MOE, 16, 5);
  hcg_exchange *x;
  ck_assert_int_eq(hcg_exchange_ids(other, set, 0, &x, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "another layout"));
  ck_assert_int_eq(hcg_exchange_ids(ctx, set, 0x100, &x, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_exchange_ids(ctx, NULL, 0, &x, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_exchange_ids(ctx, set, 0, NULL, &err), HCG_EINVAL);
  hcg_ctx_free(other);
  hcg_groupset_free(set);
  hcg_groupset_free(NULL);
  hcg_exchange_free(NULL);
  hcg_ctx_free(ctx);
}
END_TEST

START_TEST(test_config_fn_setter) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, NULL), 0);
  ck_assert_int_eq(hcg_groupset_set_config_fn(NULL, NULL, NULL), HCG_EINVAL);
  ck_assert_int_eq(hcg_groupset_set_config_fn(set, NULL, NULL), HCG_OK);
  ck_assert_ptr_null(set->config_fn);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

/* ---- PMIx keys, ids, integers
 * ------------------------------------------------ */

START_TEST(test_pmix_key) {
  char buf[512];
  ck_assert_int_eq(hcg_exchange_pmix_key(NULL, 0, "llm:cp-tp", buf, sizeof buf),
                   0);
  ck_assert_str_eq(buf, "hcg.0.llm:cp-tp");
  ck_assert_int_eq(hcg_exchange_pmix_key("", 12, "llm#embd", buf, sizeof buf),
                   0);
  ck_assert_str_eq(buf, "hcg.12.llm#embd");
  ck_assert_int_eq(
      hcg_exchange_pmix_key("run-7", 3, "llm/expert:ep", buf, sizeof buf), 0);
  ck_assert_str_eq(buf, "hcg.run-7.3.llm/expert:ep");
  ck_assert_int_eq(hcg_exchange_pmix_key("t", 0, "k", buf, 8), HCG_ERANGE);
  ck_assert_int_eq(hcg_exchange_pmix_key("t", -1, "k", buf, 8), HCG_EINVAL);
  ck_assert_int_eq(hcg_exchange_pmix_key("t", 0, NULL, buf, 8), HCG_EINVAL);

  /* The longest keys: 16 dims of 32 characters in a 32-character view of a
   * 32-character grid. They are hashed, deterministically, and differ. */
  char key[HCG_KEY_MAX], key2[HCG_KEY_MAX];
  size_t n = (size_t)snprintf(
      key, sizeof key, "%.32s/%.32s:", "gggggggggggggggggggggggggggggggg",
      "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv");
  for (int d = 0; d < HCG_MAX_DIMS; d++)
    n += (size_t)snprintf(key + n, sizeof key - n, "%sd%030d", d ? "-" : "", d);
  ck_assert_uint_lt(n, HCG_KEY_MAX);
  ck_assert_uint_gt(n, 511);
  memcpy(key2, key, n + 1);
  key2[n - 1] = 'x';
  char tag[HCG_MAX_TAG + 1];
  memset(tag, 't', HCG_MAX_TAG);
  tag[HCG_MAX_TAG] = '\0';
  char a[512], b[512], c[512];
  ck_assert_int_eq(hcg_exchange_pmix_key(tag, 1LL << 40, key, a, sizeof a), 0);
  ck_assert_int_eq(hcg_exchange_pmix_key(tag, 1LL << 40, key, b, sizeof b), 0);
  ck_assert_int_eq(hcg_exchange_pmix_key(tag, 1LL << 40, key2, c, sizeof c), 0);
  ck_assert_str_eq(a, b);
  ck_assert_str_ne(a, c);
  ck_assert_uint_le(strlen(a), 511);
  ck_assert_ptr_nonnull(strstr(a, ".1099511627776.#"));
  ck_assert_uint_eq(strlen(strstr(a, ".#") + 2), 32);
  /* Just at the limit: kept readable. */
  char k511[600];
  size_t pre = strlen("hcg.0.");
  memset(k511, 'k', 511 - pre);
  k511[511 - pre] = '\0';
  ck_assert_int_eq(hcg_exchange_pmix_key(NULL, 0, k511, a, sizeof a), 0);
  ck_assert_uint_eq(strlen(a), 511);
  k511[511 - pre] = 'k';
  k511[512 - pre] = '\0';
  ck_assert_int_eq(hcg_exchange_pmix_key(NULL, 0, k511, a, sizeof a), 0);
  ck_assert_ptr_nonnull(strstr(a, "hcg.0.#"));
}
END_TEST

START_TEST(test_random_ids) {
  unsigned char a[HCG_ID_BYTES], b[HCG_ID_BYTES];
  ck_assert_int_eq(hcgrt_random_id(a, NULL), 0);
  ck_assert_int_eq(hcgrt_random_id(b, NULL), 0);
  ck_assert(memcmp(a, b, HCG_ID_BYTES) != 0);
  ck_assert(hcgrt_hash64("a", 1, 1) != hcgrt_hash64("a", 1, 2));
  ck_assert(hcgrt_hash64("a", 1, 1) == hcgrt_hash64("a", 1, 1));
}
END_TEST

START_TEST(test_parse_int) {
  long long v;
  ck_assert_int_eq(hcgrt_parse_int("0", 0, 10, &v), 0);
  ck_assert_int_eq(v, 0);
  ck_assert_int_eq(hcgrt_parse_int("007", 0, 10, &v), 0);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(hcgrt_parse_int("2147483647", 0, 2147483647, &v), 0);
  ck_assert_int_eq(hcgrt_parse_int("2147483648", 0, 2147483647, &v), -1);
  ck_assert_int_eq(hcgrt_parse_int("99999999999999999999999999", 0,
                                   9223372036854775807LL, &v),
                   -1);
  ck_assert_int_eq(hcgrt_parse_int("", 0, 10, &v), -1);
  ck_assert_int_eq(hcgrt_parse_int(NULL, 0, 10, &v), -1);
  ck_assert_int_eq(hcgrt_parse_int("+1", 0, 10, &v), -1);
  ck_assert_int_eq(hcgrt_parse_int("1 ", 0, 10, &v), -1);
  ck_assert_int_eq(hcgrt_parse_int("0", 1, 10, &v), -1);
}
END_TEST

/* How the agreement names the failed members of a group. */
START_TEST(test_verdict_text) {
  struct hcgrt_verdict v = {HCG_ENCCL, 1, {3}};
  char buf[256];
  hcgrt_verdict_text(&v, buf, sizeof buf);
  ck_assert_str_eq(buf, "rank 3");
  v.nbad = 2;
  v.bad[1] = 5;
  hcgrt_verdict_text(&v, buf, sizeof buf);
  ck_assert_str_eq(buf, "ranks 3, 5");
  v.nbad = HCGRT_VERDICT_NAMED + 9;
  for (int i = 0; i < HCGRT_VERDICT_NAMED; i++)
    v.bad[i] = i;
  hcgrt_verdict_text(&v, buf, sizeof buf);
  ck_assert_str_eq(buf, "ranks 0, 1, 2, 3, 4, 5, 6, 7 and 9 more");
  char tiny[8]; /* truncated, still terminated */
  hcgrt_verdict_text(&v, tiny, sizeof tiny);
  ck_assert_int_eq((int)strlen(tiny), 7);
}
END_TEST

/* ---- without PMIx, NCCL or a GPU
 * ----------------------------------------------- */

START_TEST(test_comm_no_device) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 13);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_collection(set, 0, NULL, &err), 0);
  int dev = -7;
  int rc = hcg_ctx_device(ctx, &dev, &err);
  if (rc == HCG_OK)
    ck_assert_int_ge(dev, 0); /* a GPU is present */
  else
    ck_assert_int_eq(dev, -7); /* untouched on error */
  int crc = hcg_comm_create(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  if (rc == HCG_OK) {
    /* A GPU is present: without PMIx the exchange is what fails. */
    ck_assert_int_eq(crc, HCG_EPMIX);
  } else {
    ck_assert_int_eq(rc, HCG_ECUDA);
    ck_assert_int_eq(crc, HCG_ECUDA);
    ck_assert_msg(strstr(err.message, "no CUDA device"), "%s", err.message);
    /* No driver reads as such, not as a hint to upgrade it. */
    ck_assert_msg(!strstr(err.message, "insufficient") ||
                      strstr(err.message, "no GPU / no driver"),
                  "%s", err.message);
  }
#else
  ck_assert_int_eq(rc, HCG_ENOTSUP);
  ck_assert_int_eq(crc, HCG_ENOTSUP);
  ck_assert_msg(strstr(err.message, "without"), "%s", err.message);
#endif
  ck_assert_int_eq(hcg_ctx_num_comms(ctx), 0);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  /* Lookups say what is missing. */
  hcg_comm *c = (hcg_comm *)0x1;
  ck_assert_int_eq(hcg_comm_find(ctx, "llm:tp", &c, &err), HCG_ENOTFOUND);
  ck_assert_ptr_null(c);
  ck_assert_msg(strstr(err.message, "no communicator for group 'llm:tp'"), "%s",
                err.message);
  ck_assert_int_eq(hcg_comm_find(ctx, "llm:zz", &c, &err), HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_comm_find_field(ctx, 0, HCG_FIELD_TP, &c),
                   HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_comm_find_embedding(ctx, HCG_EMBD, &c), HCG_ENOTFOUND);
  ck_assert_int_eq(hcg_comm_find_embedding(ctx, HCG_POS_EMBD, &c),
                   HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_comm_find_key(ctx, "llm:tp", &c), HCG_ENOTFOUND);
  ck_assert_ptr_null(hcg_comm_nccl(NULL));
  ck_assert_ptr_null(hcg_comm_stream(NULL));
  ck_assert_ptr_null(hcg_comm_key(NULL));
  ck_assert_int_eq(hcg_comm_size(NULL), 0);
  ck_assert_int_eq(hcg_comm_rank(NULL), -1);
  ck_assert_int_eq(hcg_comm_wait(NULL, &err), HCG_EINVAL);
  /* Destroying what was never created is a no-op, with or without a set. */
  ck_assert_int_eq(hcg_comm_destroy(ctx, set, &err), HCG_OK);
  ck_assert_int_eq(hcg_comm_destroy(ctx, NULL, &err), HCG_OK);
  ck_assert_int_eq(hcg_comm_destroy(NULL, NULL, &err), HCG_EINVAL);
  hcg_ctx_stats st;
  ck_assert_int_eq(hcg_ctx_get_stats(ctx, &st), 0);
  ck_assert_int_eq(st.fences + st.exchanges + st.puts + st.gets + st.comms, 0);
  ck_assert_int_eq(hcg_ctx_get_stats(NULL, &st), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_num_fences(NULL), -1);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

/* The test hook HCG_TEST_COMM_FAIL: a malformed value is refused before
 * anything else, naming the variable; a valid one still needs PMIx. */
START_TEST(test_comm_test_hook) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 13);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", NULL, &err), 0);
  static const char *const bad[] = {"",        "3",        ":init",
                                    "x:init",  "3:",       "3:later",
                                    "-1:init", "3:init:x", "99999999999:init"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("HCG_TEST_COMM_FAIL", bad[i], 1);
    int rc = hcg_comm_create(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
    ck_assert_msg(rc == HCG_EINVAL, "'%s': %d", bad[i], rc);
    ck_assert_msg(strstr(err.message, "HCG_TEST_COMM_FAIL") &&
                      strstr(err.message, "RANK:prepare or RANK:init"),
                  "%s", err.message);
#else
    ck_assert_int_eq(rc, HCG_ENOTSUP);
#endif
  }
  setenv("HCG_TEST_COMM_FAIL", "13:prepare", 1);
  int rc = hcg_comm_create(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  /* This rank's own failure is the more useful message, even without
   * PMIx to tell the others. */
  ck_assert_int_eq(rc, HCG_ENCCL);
  ck_assert_msg(strstr(err.message, "rank 13 fails before the exchange"), "%s",
                err.message);
  /* Another rank's failure needs the exchange: no PMIx server here (or
   * none to call, in a build without it). */
  setenv("HCG_TEST_COMM_FAIL", "2:init", 1);
  ck_assert_int_eq(hcg_comm_create(ctx, set, &err),
                   pmix_usable() ? HCG_EPMIX : HCG_ENOTSUP);
#else
  ck_assert_int_eq(rc, HCG_ENOTSUP);
#endif
  unsetenv("HCG_TEST_COMM_FAIL");
  ck_assert_int_eq(hcg_ctx_num_comms(ctx), 0);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

/* A callback that records what it saw and can refuse or misconfigure. */
struct seen {
  int calls;
  char keys[32][HCG_KEY_MAX];
  int high[32];
  int refuse;   /* return this status */
  int bad_opts; /* set min_ctas > max_ctas */
  int name;     /* set its own commName and netName */
};

static int record(void *arg, const char *key, hcg_comm_options *opts,
                  void *nccl_config) {
  struct seen *s = arg;
  ck_assert_ptr_nonnull(nccl_config);
  if (s->calls < 32) {
    snprintf(s->keys[s->calls], HCG_KEY_MAX, "%s", key);
    s->high[s->calls] = opts->high_priority;
  }
  s->calls++;
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  /* The config handed over is NCCL's, named after the group. */
  const ncclConfig_t *cfg = nccl_config;
  ck_assert_str_eq(cfg->commName, key);
  ck_assert_int_eq(cfg->blocking, NCCL_CONFIG_UNDEF_INT);
#endif
  if (s->bad_opts) {
    opts->min_ctas = 8;
    opts->max_ctas = 2;
  }
  return s->refuse;
}

START_TEST(test_comm_callback) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 13);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, &err), 0);
  hcg_comm_options hi = HCG_COMM_OPTIONS_INIT;
  hi.high_priority = 1;
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", &hi, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm/expert:pp", NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:pp", NULL, &err), 0);
  ck_assert_int_eq(hcg_groupset_add_embedding(set, HCG_EMBD, NULL, &err), 0);
  struct seen s;
  memset(&s, 0, sizeof s);
  ck_assert_int_eq(hcg_groupset_set_config_fn(set, record, &s), 0);
  int rc = hcg_comm_create(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  /* Once per communicator of this rank, before the device check. */
  ck_assert_int_eq(s.calls, 3);
  ck_assert_str_eq(s.keys[0], "llm:tp");
  ck_assert_int_eq(s.high[0], 1);
  ck_assert_str_eq(s.keys[1], "llm:pp");
  ck_assert_int_eq(s.high[1], HCG_UNSET);
  ck_assert_str_eq(s.keys[2], "llm#embd");
  ck_assert(rc == HCG_ECUDA || rc == HCG_EPMIX);
  /* A refusal stops it with the callback's status. */
  memset(&s, 0, sizeof s);
  s.refuse = HCG_EBRIDGE;
  ck_assert_int_eq(hcg_comm_create(ctx, set, &err), HCG_EBRIDGE);
  ck_assert_int_eq(s.calls, 1);
  ck_assert_ptr_nonnull(strstr(err.message, "refused group 'llm:tp'"));
  s.calls = 0;
  s.refuse = -5;
  ck_assert_int_eq(hcg_comm_create(ctx, set, &err), HCG_EINVAL);
  /* Options it breaks are refused. */
  memset(&s, 0, sizeof s);
  s.bad_opts = 1;
  ck_assert_int_eq(hcg_comm_create(ctx, set, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "options from the callback"));
#else
  ck_assert_int_eq(rc, HCG_ENOTSUP);
  ck_assert_int_eq(s.calls, 0);
#endif
  ck_assert_int_eq(hcg_ctx_num_comms(ctx), 0);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
}
END_TEST

/* HCG_*_LOCAL, the plugin's placement verdicts, read at init. */
START_TEST(test_ctx_node_local) {
  const char *text = "llm:tp=2,dp=*; llm/expert:ep=4,expt_dp=*";
  const char *const edits[] = {"HCG_LLM_TP_LOCAL=1",
                               "HCG_LLM_EXPERT_EP_LOCAL=0", NULL};
  struct env e;
  make_env(&e, text, 8, 5, edits);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(ctx_from(&e, &ctx, &err), 0);
  env_free(&e);
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
  struct env e;
  make_env(&e, text, 8, 5, edits);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(ctx_from(&e, &ctx, &err), 0);
  env_free(&e);
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

/* ---- the suite
 * ------------------------------------------------------------------ */

static Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");
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
  suite_add_tcase(s, env);
  TCase *q = tcase_create("queries");
  tcase_add_test(q, test_queries);
  suite_add_tcase(s, q);
  TCase *sets = tcase_create("groupsets");
  tcase_add_test(sets, test_plan_collection);
  tcase_add_test(sets, test_plan_mimo);
  tcase_add_test(sets, test_groupset_errors);
  tcase_add_test(sets, test_config_fn_setter);
  suite_add_tcase(s, sets);
  TCase *x = tcase_create("exchange");
  tcase_add_test(x, test_pmix_key);
  tcase_add_test(x, test_random_ids);
  tcase_add_test(x, test_parse_int);
  tcase_add_test(x, test_verdict_text);
  tcase_add_test(x, test_comm_no_device);
  tcase_add_test(x, test_comm_callback);
  tcase_add_test(x, test_comm_test_hook);
  tcase_add_test(x, test_broadcast_args);
  tcase_set_timeout(x, 60);
  suite_add_tcase(s, x);
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(runtime_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}