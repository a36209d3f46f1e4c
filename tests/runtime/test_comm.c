/*
 * test_comm.c - what the communicator calls do without PMIx, NCCL or a
 * GPU: refusals, the options callback, and the test backend's setting.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"
#include "testing.h"

#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

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

/* hcg_comm_create through the test backend (runtime/testing): a malformed
 * HCGTEST_COMM_FAIL is refused before anything else, naming the variable;
 * a valid one still needs PMIx. */
START_TEST(test_comm_test_backend) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 13);
  hcg_error err = HCG_ERROR_INIT;
  hcg_groupset *set;
  ck_assert_int_eq(hcg_groupset_create(hcg_ctx_layout(ctx), &set, &err), 0);
  ck_assert_int_eq(hcg_groupset_add(set, "llm:tp", NULL, &err), 0);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  /* Unset at the start: hcg_comm_create's own backend is NCCL's. */
  ck_assert(hcgrt_comm_backend == &hcgrt_comm_nccl);
#define CREATE(ctx, set, err) hcgrt_comm_create(ctx, set, &hcgrt_comm_fail, err)
#else
#define CREATE(ctx, set, err) hcg_comm_create(ctx, set, err)
#endif
  static const char *const bad[] = {"",        "3",        ":init",
                                    "x:init",  "3:",       "3:later",
                                    "-1:init", "3:init:x", "99999999999:init"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    setenv("HCGTEST_COMM_FAIL", bad[i], 1);
    int rc = CREATE(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
    ck_assert_msg(rc == HCG_EINVAL, "'%s': %d", bad[i], rc);
    ck_assert_msg(strstr(err.message, "HCGTEST_COMM_FAIL") &&
                      strstr(err.message, "RANK:prepare or RANK:init"),
                  "%s", err.message);
#else
    ck_assert_int_eq(rc, HCG_ENOTSUP);
#endif
  }
  setenv("HCGTEST_COMM_FAIL", "13:prepare", 1);
  int rc = CREATE(ctx, set, &err);
#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
  /* This rank's own failure is the more useful message, even without
   * PMIx to tell the others. */
  ck_assert_int_eq(rc, HCG_ENCCL);
  ck_assert_msg(strstr(err.message, "rank 13 fails before the exchange"), "%s",
                err.message);
  /* Another rank's failure needs the exchange: no PMIx server here (or
   * none to call, in a build without it). */
  setenv("HCGTEST_COMM_FAIL", "2:init", 1);
  ck_assert_int_eq(CREATE(ctx, set, &err),
                   pmix_usable() ? HCG_EPMIX : HCG_ENOTSUP);
#else
  ck_assert_int_eq(rc, HCG_ENOTSUP);
#endif
  unsetenv("HCGTEST_COMM_FAIL");
#undef CREATE
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

void comm_tests(TCase *x) {
  tcase_add_test(x, test_comm_no_device);
  tcase_add_test(x, test_comm_callback);
  tcase_add_test(x, test_comm_test_backend);
}
