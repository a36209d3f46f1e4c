/*
 * test_groupsets.c - group sets and the per-rank plans made from them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"

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
  /* Every process lists the same keys in the same order (the naive
   * exchange of bench/). */
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
  ck_assert_str_eq(err.message, "hcg_exchange_ids: unknown flags 0x100");
  ck_assert_int_eq(hcg_exchange_ids(ctx, set, 0x5, &x, &err), HCG_EINVAL);
  ck_assert_str_eq(err.message, "hcg_exchange_ids: unknown flags 0x5");
  /* Bit 1, once HCG_EXCHANGE_NAIVE (libhcg 1.0 to 1.2), is accepted and
   * ignored: the call fails as the plain one does, for want of PMIx. */
  int plain = hcg_exchange_ids(ctx, set, HCG_EXCHANGE_RANDOM_IDS, &x, NULL);
  ck_assert(plain == HCG_EPMIX || plain == HCG_ENOTSUP);
  ck_assert_int_eq(
      hcg_exchange_ids(ctx, set, 1 | HCG_EXCHANGE_RANDOM_IDS, &x, &err), plain);
  ck_assert_ptr_null(strstr(err.message, "unknown flags"));
  ck_assert_ptr_null(x);
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

TCase *groupset_tests(void) {
  TCase *sets = tcase_create("groupsets");
  tcase_add_test(sets, test_plan_collection);
  tcase_add_test(sets, test_plan_mimo);
  tcase_add_test(sets, test_groupset_errors);
  tcase_add_test(sets, test_config_fn_setter);
  return sets;
}
