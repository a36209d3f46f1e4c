/*
 * test_exchange.c - PMIx key derivation, ids, integers, the agreement's
 * verdict text, and hcg_ctx_broadcast's arguments (the PMIx paths run on
 * the cluster: tests/cluster/exchange.bats).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

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

/* ---- hcg_ctx_publish, hcg_ctx_fetch: arguments (PMIx: on the cluster) -- */

START_TEST(test_publish_args) {
  hcg_ctx *ctx = must_ctx(MOE, 16, 5);
  char buf[8] = "x";
  long long epoch = -1;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_ctx_publish(NULL, buf, 1, &epoch, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_publish(ctx, NULL, 1, &epoch, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_publish(ctx, buf, 1, NULL, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_publish(ctx, buf, 0, &epoch, &err), HCG_EINVAL);
  ck_assert_int_eq(
      hcg_ctx_publish(ctx, buf, (size_t)HCG_PUBLISH_MAX + 1, &epoch, &err),
      HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "1 to 4096 allowed"));
  ck_assert_int_eq(hcg_ctx_fetch(NULL, 0, 0, buf, 1, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_fetch(ctx, 0, 0, NULL, 1, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_ctx_fetch(ctx, 0, 16, buf, 1, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "rank 16 is not a rank"));
  ck_assert_int_eq(hcg_ctx_fetch(ctx, 0, -1, buf, 1, &err), HCG_EINVAL);
  /* No publication yet: epoch 0 names none. */
  ck_assert_int_eq(hcg_ctx_fetch(ctx, 0, 0, buf, 1, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "epoch 0 is no publication"));
  if (pmix_usable()) {
    ck_assert_int_eq(hcg_ctx_publish(ctx, buf, 1, &epoch, &err), HCG_EPMIX);
    ck_assert_ptr_nonnull(strstr(err.message, "srun --mpi=pmix"));
  } else {
    ck_assert_int_eq(hcg_ctx_publish(ctx, buf, 1, &epoch, &err), HCG_ENOTSUP);
  }
  ck_assert_int_eq(epoch, -1);
  ck_assert_int_eq(hcg_ctx_num_fences(ctx), 0);
  hcg_ctx_free(ctx);
}
END_TEST

void exchange_tests(TCase *x) {
  tcase_add_test(x, test_pmix_key);
  tcase_add_test(x, test_random_ids);
  tcase_add_test(x, test_parse_int);
  tcase_add_test(x, test_verdict_text);
  tcase_add_test(x, test_broadcast_args);
  tcase_add_test(x, test_publish_args);
}
