/*
 * runtime_test.c - the helpers of the runtime's unit tests
 * (runtime_test.h).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

int env_add(void *arg, const char *name, const char *value) {
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

void env_free(struct env *e) {
  for (int i = 0; i < e->n; i++)
    free(e->v[i]);
  e->n = 0;
  e->v[0] = NULL;
}

/* Sets NAME=VALUE (replacing), or removes NAME when `edit` has no '='. */
void env_edit(struct env *e, const char *edit) {
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
void make_env(struct env *e, const char *text, int world, int rank,
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
int ctx_from(struct env *e, hcg_ctx **ctx, hcg_error *err) {
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.envp = (const char *const *)e->v;
  cfg.pmix = HCG_PMIX_OFF;
  return hcg_ctx_init(&cfg, ctx, err);
}

hcg_ctx *must_ctx(const char *text, int world, int rank) {
  return must_ctx_edited(text, world, rank, NULL);
}

hcg_ctx *must_ctx_edited(const char *text, int world, int rank,
                         const char *const *edits) {
  struct env e;
  make_env(&e, text, world, rank, edits);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = ctx_from(&e, &ctx, &err);
  env_free(&e);
  ck_assert_msg(rc == 0, "hcg_ctx_init: %s", err.message);
  return ctx;
}

const char *const MOE =
    "llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp";
const char *const MIMO =
    "vision:tp=2,dp=2; llm:tp=2,pp=2,dp=*"; /* vision 0-3, llm 4-15 */
const char *const COLOC = "vision@0:tp=2,dp=4; llm@0:tp=4,dp=2";

/* Whether this build can call PMIx here: linked with it, or able to load
 * libpmix.so.2 (runtime/lib/pmix_abi.h). */
int pmix_usable(void) {
  hcg_error why = HCG_ERROR_INIT;
  return hcgrt_pmix_usable(&why) == HCG_OK;
}
