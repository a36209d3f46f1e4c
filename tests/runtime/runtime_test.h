/*
 * runtime_test.h - what the unit tests of libhcg's runtime share
 * (runtime_test.c): environments as the plugin makes them, contexts made
 * from them with PMIx off, and the layouts the tests use. Environments are
 * built with hcg_rank_env (what the plugin exports) and then damaged on
 * purpose.
 */
#ifndef HCG_RUNTIME_TEST_H
#define HCG_RUNTIME_TEST_H

#include <check.h>

#include "hcg.h"
#include "rt.h"

#define ENV_MAX 256

struct env {
  char *v[ENV_MAX + 1];
  int n;
};

int env_add(void *arg, const char *name, const char *value);
void env_free(struct env *e);
/* Sets NAME=VALUE (replacing), or removes NAME when `edit` has no '='. */
void env_edit(struct env *e, const char *edit);
/* The environment the plugin gives `rank` for `text` on `world` ranks,
 * then each edit of the NULL-terminated list. */
void make_env(struct env *e, const char *text, int world, int rank,
              const char *const *edits);
/* hcg_ctx_init on an environment with PMIx off. */
int ctx_from(struct env *e, hcg_ctx **ctx, hcg_error *err);
hcg_ctx *must_ctx(const char *text, int world, int rank);
/* must_ctx on make_env's environment with `edits` (NULL-terminated). */
hcg_ctx *must_ctx_edited(const char *text, int world, int rank,
                         const char *const *edits);
/* Whether this build can call PMIx here: linked with it, or able to load
 * libpmix.so.2 (runtime/lib/pmix_abi.h). */
int pmix_usable(void);

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

extern const char *const MOE;
extern const char *const MIMO; /* vision 0-3, llm 4-15 */
extern const char *const COLOC;

/* The test cases of each topic, in its file. */
TCase *environment_tests(void); /* test_env.c       */
TCase *query_tests(void);       /* test_queries.c   */
TCase *groupset_tests(void);    /* test_groupsets.c */
void exchange_tests(TCase *x);  /* test_exchange.c  */
void comm_tests(TCase *x);      /* test_comm.c      */
TCase *round_tests(void);       /* test_round.c     */
TCase *slice_tests(void);       /* test_slice.c     */

#endif /* HCG_RUNTIME_TEST_H */
