/* test_mimo.c - doc/semantics.md sections 6-8: module spans, roles, the
 * language module, and the colocated and non-colocated bridges. */
#include <stdio.h>
#include <string.h>

#include "core/internal.h"
#include "helpers.h"
#include "suites.h"

START_TEST(offsets_and_modes) {
  hcg_layout *L = must_parse("vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*", 16);
  ck_assert_str_eq(hcg_layout_text(L),
                   "vision@0:tp=4,dp=2;llm@8:tp=2,cp=2,pp=2,dp=1");
  ck_assert_int_eq(hcg_layout_mode(L), HCG_MODE_NONCOLOCATED);
  ck_assert_int_eq(hcg_layout_language(L), 1);
  ck_assert_int_eq(hcg_grid_offset(L, 1), 8);
  hcg_layout_free(L);

  L = must_parse("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8);
  ck_assert_int_eq(hcg_layout_mode(L), HCG_MODE_COLOCATED);
  ck_assert_str_eq(hcg_mode_name(hcg_layout_mode(L)), "colocated");
  hcg_layout_free(L);

  /* '*' in a colocated layout fills up to the world end. */
  L = must_parse("vision@0:tp=2,dp=*; llm@0:tp=4,dp=*", 8);
  ck_assert_str_eq(hcg_layout_text(L), "vision@0:tp=2,dp=4;llm@0:tp=4,dp=2");
  hcg_layout_free(L);

  /* '*' fills up to the next larger explicit offset. */
  L = must_parse("vision:tp=2,dp=*; llm@12:tp=2,dp=*", 16);
  ck_assert_str_eq(hcg_layout_text(L), "vision@0:tp=2,dp=6;llm@12:tp=2,dp=2");
  hcg_layout_free(L);

  /* Grids listed out of rank order. */
  L = must_parse("llm@4:tp=4; vision@0:tp=4", 8);
  ck_assert_int_eq(hcg_layout_mode(L), HCG_MODE_NONCOLOCATED);
  hcg_layout_free(L);
  ck_assert_str_eq(hcg_mode_name(HCG_MODE_SINGLE), "single");
  ck_assert_ptr_null(hcg_mode_name(7));
}
END_TEST

START_TEST(span_errors) {
  expect_error("vision@0:tp=8; llm@4:tp=8", 12, HCG_ELAYOUT, 16,
               "grids 'vision' [0,8) and 'llm' [4,12) overlap without "
               "spanning the same ranks");
  expect_error("a@0:tp=4; b@0:tp=4; llm@4:tp=4", 8, HCG_ELAYOUT, 11,
               "grids 'a' and 'b' share the ranks [0,4) while other grids do "
               "not");
  expect_error("vision:tp=4; llm@8:tp=4", 12, HCG_ELAYOUT, 1,
               "ranks [4,8) are in no grid: the grids must cover all 12 ranks "
               "[0,12) with no gap (vision [0,4), llm [8,12))");
  expect_error("vision@4:tp=4; llm:tp=4", 12, HCG_ELAYOUT, 1,
               "ranks [0,4) are in no grid");
  expect_error("tp=2,dp=2", 8, HCG_ELAYOUT, 1, "ranks [4,8) are in no grid");
  expect_error("vision:tp=4; llm:tp=8", 8, HCG_ELAYOUT, 14,
               "grid 'llm' is over sized: it spans ranks [4,12) (8 ranks from "
               "offset 4), but the world has 8 ranks");
  expect_error("llm@9:tp=*", 8, HCG_ELAYOUT, 10,
               "grid 'llm' starts at rank 9, where the world ends, so '*' has "
               "no ranks to fill");
  expect_error("llm:tp=2,dp=*", 0, HCG_ELAYOUT, 13,
               "infers 'dp' with '*', which needs the world size");
  expect_error("llm:tp=3,dp=*", 8, HCG_ELAYOUT, 13,
               "cannot infer 'dp' of grid 'llm': 8 ranks are not a multiple "
               "of 3, the product of its other dims (tp=3)");
}
END_TEST

START_TEST(language_module) {
  hcg_layout *L = must_parse("enc:tp=4; language:tp=4", 8);
  ck_assert_int_eq(hcg_layout_language(L), 1);
  hcg_layout_free(L);
  L = must_parse_lang("enc:tp=4; dec:tp=4", 8, "dec");
  ck_assert_int_eq(hcg_layout_language(L), 1);
  hcg_layout_free(L);
  L = must_parse("a=8", 8);
  ck_assert_int_eq(hcg_layout_language(L), 0);
  ck_assert_str_eq(hcg_grid_name(L, 0), "world");
  hcg_layout_free(L);
  expect_error("enc:tp=4; dec:tp=4", 8, HCG_ELAYOUT, 1,
               "no language module among the grids (enc, dec)");
  expect_error("llm:tp=4; language:tp=4", 8, HCG_ELAYOUT, 11,
               "grids 'llm' and 'language' both claim");
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = 8;
  cfg.language = "nope";
  hcg_layout *out;
  hcg_error err = HCG_ERROR_INIT;
  const char *t = "enc:tp=4; dec:tp=4";
  ck_assert_int_eq(hcg_layout_parse(t, strlen(t), &cfg, &out, &err),
                   HCG_ELAYOUT);
  ck_assert_ptr_nonnull(strstr(err.message, "the language module 'nope' is "
                                            "not a grid of the layout "
                                            "(grids: enc, dec)"));
}
END_TEST

/* Roles: non-colocated first iff pp coord 0, last iff pp-1; colocated pp is
 * treated as 1; no pp: one stage. */
START_TEST(rank_roles) {
  hcg_layout *L = must_parse("vision:tp=2,pp=2; llm:tp=1,pp=4", 8);
  int f, l;
  ck_assert_int_eq(hcg_rank_stage(L, 0, 1, &f, &l), HCG_OK);
  ck_assert(f && !l);
  ck_assert_int_eq(hcg_rank_stage(L, 0, 3, &f, &l), HCG_OK);
  ck_assert(!f && l);
  ck_assert_int_eq(hcg_rank_stage(L, 1, 5, &f, &l), HCG_OK);
  ck_assert(!f && !l);
  ck_assert_int_eq(hcg_rank_stage(L, 1, 7, &f, &l), HCG_OK);
  ck_assert(!f && l);
  ck_assert_int_eq(hcg_rank_stage(L, 1, 1, &f, &l), HCG_ENOTMEMBER);
  ck_assert_int_eq(hcg_grid_contains(L, 1, 4), 1);
  ck_assert_int_eq(hcg_grid_contains(L, 1, 3), 0);
  hcg_layout_free(L);
  L = must_parse("vision@0:tp=2,pp=2; llm@0:tp=4", 4);
  ck_assert_int_eq(hcg_rank_stage(L, 0, 3, &f, &l), HCG_OK);
  ck_assert(f && l);
  hcg_layout_free(L);
}
END_TEST

/* Bridge helper: "[[a,b],...]" of all gather groups. */
static void expect_gather(const hcg_layout *L, const hcg_bridge *b,
                          const char *expected) {
  char got[512] = "[";
  int m[64], n;
  for (int o = 0; o < hcg_bridge_num_groups(L, b); o++) {
    ck_assert_int_eq(hcg_bridge_group_at(L, b, o, m, 64, &n), HCG_OK);
    strcat(got, o ? ",[" : "[");
    for (int i = 0; i < n; i++) {
      char item[16];
      snprintf(item, sizeof item, i ? ",%d" : "%d", m[i]);
      strcat(got, item);
    }
    strcat(got, "]");
    /* every member's own group is this group */
    for (int i = 0; i < n; i++) {
      int m2[64], n2;
      ck_assert_int_eq(hcg_bridge_group_of_rank(L, b, m[i], m2, 64, &n2),
                       HCG_OK);
      ck_assert_int_eq(n2, n);
      ck_assert(memcmp(m, m2, sizeof(int) * (size_t)n) == 0);
    }
  }
  strcat(got, "]");
  ck_assert_str_eq(got, expected);
}

static hcg_bridge must_bridge(const hcg_layout *L) {
  hcg_bridge b;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_bridge_make(L, 0, 1, &b, &err) == HCG_OK, "%s",
                err.message);
  return b;
}

START_TEST(colocated_bridge_golden) {
  /* TP2/DP4 -> TP4/DP2: fan-in, scale 2. */
  hcg_layout *L = must_parse("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8);
  hcg_bridge b = must_bridge(L);
  ck_assert(b.colocated);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_IN);
  ck_assert_int_eq(b.scale, 2);
  expect_gather(L, &b, "[[0,2],[1,3],[4,6],[5,7]]");
  long long start, len;
  const int first_half[] = {0, 1, 4, 5}, second_half[] = {2, 3, 6, 7};
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(
        hcg_bridge_batch_slice(L, &b, first_half[i], 16, &start, &len, NULL),
        HCG_OK);
    ck_assert(start == 0 && len == 8);
    ck_assert_int_eq(
        hcg_bridge_batch_slice(L, &b, second_half[i], 16, &start, &len, NULL),
        HCG_OK);
    ck_assert(start == 8 && len == 8);
  }
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_bridge_batch_slice(L, &b, 0, 15, &start, &len, &err),
                   HCG_EBRIDGE);
  ck_assert_ptr_nonnull(strstr(err.message, "batch 15 is not divisible"));
  hcg_layout_free(L);

  /* TP4/DP2 -> TP2/DP4: fan-out, same groups and slices. */
  L = must_parse("vision@0:tp=4,dp=2; llm@0:tp=2,dp=4", 8);
  b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_OUT);
  expect_gather(L, &b, "[[0,2],[1,3],[4,6],[5,7]]");
  ck_assert_int_eq(hcg_bridge_batch_slice(L, &b, 6, 16, &start, &len, NULL),
                   HCG_OK);
  ck_assert(start == 8 && len == 8);
  hcg_layout_free(L);

  /* TP1/DP8 -> TP4/DP2: fan-in scale 4. */
  L = must_parse("vision@0:tp=1,dp=8; llm@0:tp=4,dp=2", 8);
  b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_IN);
  ck_assert_int_eq(b.scale, 4);
  expect_gather(L, &b, "[[0,1,2,3],[4,5,6,7]]");
  hcg_layout_free(L);
}
END_TEST

/* Offset 4, TP2/DP2 -> TP1/DP4: fan-out scale 2, groups [[4,5],[6,7]].
 * Colocated modules must cover the world from rank 0 in a layout, so the
 * offset is applied to the parsed layout directly: the bridge arithmetic
 * must honour a grid's offset wherever it comes from. */
START_TEST(colocated_bridge_offset) {
  hcg_layout *L = must_parse("vision@0:tp=2,dp=2; llm@0:tp=1,dp=4", 4);
  L->world = 8;
  L->grids[0].offset = L->grids[1].offset = 4;
  hcg_bridge b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_OUT);
  ck_assert_int_eq(b.scale, 2);
  expect_gather(L, &b, "[[4,5],[6,7]]");
  long long start, len;
  ck_assert_int_eq(hcg_bridge_batch_slice(L, &b, 5, 16, &start, &len, NULL),
                   HCG_OK);
  ck_assert(start == 8 && len == 8);
  int m[2], n;
  ck_assert_int_eq(hcg_bridge_group_of_rank(L, &b, 3, m, 2, &n),
                   HCG_ENOTMEMBER);
  hcg_layout_free(L);
}
END_TEST

START_TEST(colocated_bridge_cp) {
  /* Dest cp=2 (listed before dp): groups split per (src dp, dest tp, cp). */
  hcg_layout *L = must_parse("vision@0:tp=2,dp=4; llm@0:tp=2,cp=2,dp=2", 8);
  hcg_bridge b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_IN);
  ck_assert_int_eq(b.dest_cp, 2);
  expect_gather(L, &b, "[[0,2],[1,3],[4,6],[5,7]]");
  hcg_layout_free(L);
  L = must_parse("vision@0:tp=4,dp=2; llm@0:tp=1,cp=2,dp=4", 8);
  b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_OUT);
  /* dest: rank = cp + 2 dp; groups over dp pairs for each cp. */
  expect_gather(L, &b, "[[0,2],[1,3],[4,6],[5,7]]");
  hcg_layout_free(L);

  hcg_error err = HCG_ERROR_INIT;
  L = must_parse("vision@0:tp=2,dp=4; llm@0:tp=2,dp=2,cp=2", 8);
  ck_assert_int_eq(hcg_bridge_make(L, 0, 1, &b, &err), HCG_EBRIDGE);
  ck_assert_ptr_nonnull(strstr(err.message, "cp=2 listed after dp"));
  hcg_layout_free(L);
}
END_TEST

START_TEST(bridge_errors) {
  hcg_bridge b;
  hcg_error err = HCG_ERROR_INIT;
  hcg_layout *L = must_parse("vision@0:tp=2,dp=3; llm@0:tp=3,dp=2", 6);
  ck_assert_int_eq(hcg_bridge_make(L, 0, 1, &b, &err), HCG_EBRIDGE);
  ck_assert_ptr_nonnull(strstr(err.message, "one must divide the other"));
  hcg_layout_free(L);
  L = must_parse("vision@0:tp=2,pp=2,dp=2; llm@0:tp=4,dp=2", 8);
  ck_assert_int_eq(hcg_bridge_make(L, 0, 1, &b, &err), HCG_EBRIDGE);
  ck_assert_ptr_nonnull(strstr(err.message, "dim 'pp' of size 2"));
  hcg_layout_free(L);
  L = must_parse("vision@0:x=8; llm@0:tp=4,dp=2", 8);
  ck_assert_int_eq(hcg_bridge_make(L, 0, 1, &b, &err), HCG_EBRIDGE);
  ck_assert_ptr_nonnull(strstr(err.message, "has no 'tp' dim"));
  ck_assert_int_eq(hcg_bridge_make(L, 1, 1, &b, &err), HCG_EBRIDGE);
  hcg_layout_free(L);
  L = must_parse("vision@0:tp=4,dp=2; llm@0:tp=4,dp=2", 8);
  b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_PASSTHROUGH);
  ck_assert_int_eq(hcg_bridge_num_groups(L, &b), 0);
  int m[4], n;
  ck_assert_int_eq(hcg_bridge_group_of_rank(L, &b, 0, m, 4, &n),
                   HCG_ENOTMEMBER);
  ck_assert_str_eq(hcg_bridge_kind_name(b.kind), "passthrough");
  hcg_layout_free(L);
}
END_TEST

/* Section 8: src tp2 pp2 dp2 @0 -> dest tp2 pp1 dp4 @8 (dims tp,cp,pp,dp):
 * src leaders [3,7], dest [8,10,12,14]; 3 -> [8,10], 7 -> [12,14]. */
START_TEST(noncolocated_bridge_golden) {
  hcg_layout *L =
      must_parse("enc:tp=2,cp=1,pp=2,dp=2; llm:tp=2,cp=1,pp=1,dp=4", 16);
  hcg_bridge b = must_bridge(L);
  ck_assert(!b.colocated);
  ck_assert_int_eq(b.src_lanes, 2);
  ck_assert_int_eq(b.dest_lanes, 4);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_OUT);
  ck_assert_int_eq(b.scale, 2);
  ck_assert_int_eq(hcg_bridge_leader(L, &b, 0, 0), 3);
  ck_assert_int_eq(hcg_bridge_leader(L, &b, 0, 1), 7);
  const int dest[] = {8, 10, 12, 14};
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(hcg_bridge_leader(L, &b, 1, i), dest[i]);
  int first, count;
  ck_assert_int_eq(hcg_bridge_targets(L, &b, 0, &first, &count), HCG_OK);
  ck_assert(first == 0 && count == 2);
  ck_assert_int_eq(hcg_bridge_targets(L, &b, 1, &first, &count), HCG_OK);
  ck_assert(first == 2 && count == 2);
  ck_assert_int_eq(hcg_bridge_targets(L, &b, 2, &first, &count), HCG_ERANGE);
  ck_assert_int_eq(hcg_bridge_leader(L, &b, 0, 2), -1);
  hcg_layout_free(L);

  /* Fan-in the other way round. */
  L = must_parse("enc:tp=2,pp=1,dp=4; llm:tp=2,pp=2,dp=2", 16);
  b = must_bridge(L);
  ck_assert_int_eq(b.kind, HCG_BRIDGE_FAN_IN);
  ck_assert_int_eq(hcg_bridge_targets(L, &b, 3, &first, &count), HCG_OK);
  ck_assert(first == 1 && count == 1);
  hcg_layout_free(L);
}
END_TEST

Suite *mimo_suite(void) {
  Suite *s = suite_create("mimo");
  TCase *tc = tcase_create("mimo");
  tcase_add_test(tc, offsets_and_modes);
  tcase_add_test(tc, span_errors);
  tcase_add_test(tc, language_module);
  tcase_add_test(tc, rank_roles);
  tcase_add_test(tc, colocated_bridge_golden);
  tcase_add_test(tc, colocated_bridge_offset);
  tcase_add_test(tc, colocated_bridge_cp);
  tcase_add_test(tc, bridge_errors);
  tcase_add_test(tc, noncolocated_bridge_golden);
  suite_add_tcase(s, tc);
  return s;
}
