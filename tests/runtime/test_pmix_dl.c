/*
 * test_pmix_dl.c - a libhcg that opens PMIx at run time (configure
 * --with-pmix=dlopen, runtime/lib/pmix_dl.c): what it says when the
 * library is missing or is not PMIx's, that a context without it still
 * answers queries, and that a failure is not remembered (the real
 * libpmix.so.2 of this system loads afterwards). Built only in that mode.
 *
 * One test, in order: the library, once bound, stays bound for the life
 * of the process, so the failures must come first.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

/* What the plugin gives rank 1 of 'tp=2' on 2 ranks, with a PMIx
 * namespace as srun --mpi=pmix sets it. */
static const char *const UNDER_PMIX[] = {"PMIX_NAMESPACE=slurm.pmix.1.0", NULL};

static void has(const char *message, const char *needle) {
  ck_assert_msg(strstr(message, needle), "'%s' not in '%s'", needle, message);
}

/* A context of `e` with PMIx `mode`, an exchange of its tp group. */
static int ctx_exchange(struct env *e, int mode, hcg_error *err) {
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.envp = (const char *const *)e->v;
  cfg.pmix = mode;
  hcg_ctx *ctx = NULL;
  int rc = hcg_ctx_init(&cfg, &ctx, err);
  if (rc)
    return rc;
  ck_assert_int_eq(hcg_ctx_has_pmix(ctx), 0);
  ck_assert_int_eq(hcg_ctx_rank(ctx), 1);
  hcg_groupset *set = NULL;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "world:tp", NULL, err), 0);
  hcg_exchange *x = (hcg_exchange *)0x1;
  rc = hcg_exchange_ids(ctx, set, 0, &x, err);
  ck_assert_ptr_null(x);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
  return rc;
}

START_TEST(test_load_order) {
  hcg_error err = HCG_ERROR_INIT;
  struct env e;

  /* A path that does not exist: the variable and the loader's words. */
  setenv("HCG_PMIX_LIBRARY", "/nonexistent/libpmix.so.2", 1);
  ck_assert_int_eq(hcgrt_pmix_usable(&err), HCG_ENOTSUP);
  has(err.message, "HCG_PMIX_LIBRARY=/nonexistent/libpmix.so.2");
  has(err.message, "No such file");

  /* Started by a PMIx server, PMIx AUTO: the context is made without
   * PMIx and the exchange says why. */
  make_env(&e, "tp=2", 2, 1, UNDER_PMIX);
  ck_assert_int_eq(ctx_exchange(&e, HCG_PMIX_AUTO, &err), HCG_ENOTSUP);
  has(err.message, "HCG_PMIX_LIBRARY=/nonexistent/libpmix.so.2");
  /* PMIx REQUIRE: init fails, saying that PMIx is required and why. */
  ck_assert_int_eq(ctx_exchange(&e, HCG_PMIX_REQUIRE, &err), HCG_ENOTSUP);
  has(err.message, "PMIx is required but cannot load");
  env_free(&e);

  /* A library that is not PMIx's: refused, naming the missing function. */
  setenv("HCG_PMIX_LIBRARY", "libc.so.6", 1);
  ck_assert_int_eq(hcgrt_pmix_usable(&err), HCG_ENOTSUP);
  has(err.message, "libc.so.6 has no PMIx_Init");
  has(err.message, "PMIx 4 or newer");

  /* The failures were not remembered: the system's libpmix.so.2 (every
   * supported platform installs it) loads now, and a context without a
   * server fails as a linked libhcg does. */
  unsetenv("HCG_PMIX_LIBRARY");
  ck_assert_msg(hcgrt_pmix_usable(&err) == HCG_OK, "%s", err.message);
  make_env(&e, "tp=2", 2, 1, NULL);
  ck_assert_int_eq(ctx_exchange(&e, HCG_PMIX_AUTO, &err), HCG_EPMIX);
  has(err.message, "srun --mpi=pmix");
  ck_assert_int_eq(ctx_exchange(&e, HCG_PMIX_REQUIRE, &err), HCG_EPMIX);
  has(err.message, "PMIX_NAMESPACE is not set");
  env_free(&e);

  /* Bound: a bad HCG_PMIX_LIBRARY set later changes nothing. */
  setenv("HCG_PMIX_LIBRARY", "/nonexistent/libpmix.so.2", 1);
  ck_assert_int_eq(hcgrt_pmix_usable(&err), HCG_OK);
  unsetenv("HCG_PMIX_LIBRARY");
}
END_TEST

int main(void) {
  Suite *s = suite_create("pmix_dl");
  TCase *t = tcase_create("load");
  tcase_add_test(t, test_load_order);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
