/*
 * test_slice.c - the bounded fan-in's slices (hcg_slice_* in
 * hcg_runtime.h, runtime/lib/slice.c), against a reference that builds
 * every level of heads as a list; and libhcg's slice (slice.h) as its
 * first level.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "runtime_test.h"
#include "slice.h"

#define ROUTE_MAX 40 /* more than hcg_slice_levels + 1 can be */

/* The levels of a group of `count` members cut into slices of `slice`,
 * each as the sorted list of its members' indices: level 0 every member,
 * level k + 1 the first of every `slice` of level k, while level k has
 * more than `slice`. */
struct levels {
  int n;         /* levels of slices (lists beyond level 0) */
  int *at[64];   /* the lists */
  int count[64]; /* their lengths */
};

static void levels_build(struct levels *lv, int count, int slice) {
  memset(lv, 0, sizeof *lv);
  lv->at[0] = malloc((size_t)count * sizeof(int));
  ck_assert_ptr_nonnull(lv->at[0]);
  for (int i = 0; i < count; i++)
    lv->at[0][i] = i;
  lv->count[0] = count;
  while (lv->count[lv->n] > slice) {
    int *below = lv->at[lv->n], m = 0;
    int *up = malloc((size_t)(lv->count[lv->n] / slice + 1) * sizeof(int));
    ck_assert_ptr_nonnull(up);
    for (int i = 0; i < lv->count[lv->n]; i += slice)
      up[m++] = below[i];
    lv->n++;
    lv->at[lv->n] = up;
    lv->count[lv->n] = m;
  }
}

static void levels_free(struct levels *lv) {
  for (int k = 0; k <= lv->n; k++)
    free(lv->at[k]);
}

static int cmp_ints(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static int position(const int *list, int n, int v) {
  const int *at = bsearch(&v, list, (size_t)n, sizeof v, cmp_ints);
  return at ? (int)(at - list) : -1;
}

/* The route of index, level by level: at each, the head of the slice of
 * that level's list holding the stop below; the leader last. */
static int ref_route(const struct levels *lv, int slice, int index, int *out) {
  int n = 0, cur = index;
  for (int k = 0; k < lv->n; k++) {
    int p = position(lv->at[k], lv->count[k], cur);
    if (p < 0)
      return -1;
    cur = lv->at[k][p - p % slice];
    if (n == 0 || out[n - 1] != cur)
      out[n++] = cur;
  }
  if (n == 0 || out[n - 1] != 0)
    out[n++] = 0;
  return n;
}

/* Fails the test where hcg_slice_route differs from the reference for
 * index, with every place or the first only. (No ck_assert per value:
 * each costs Check a message to the runner.) */
static void check_route(const struct levels *lv, int count, int slice,
                        int index) {
  int want[ROUTE_MAX], got[ROUTE_MAX], first = -7;
  int n = ref_route(lv, slice, index, want);
  int bad = n < 1 || hcg_slice_route(count, slice, index, got, ROUTE_MAX) != n;
  for (int k = 0; k < n && !bad; k++)
    bad = got[k] != want[k];
  bad = bad || hcg_slice_route(count, slice, index, &first, 1) != n ||
        first != want[0] || hcg_slice_route(count, slice, index, NULL, 0) != n;
  if (bad)
    ck_abort_msg("count %d slice %d index %d: not the reference's route", count,
                 slice, index);
}

/* Every member of every group of up to 150 members, slices of 2 to 9:
 * routes, levels, and reach counted from the routes. */
START_TEST(test_slice_small_groups) {
  for (int slice = 2; slice <= 9; slice++)
    for (int count = 1; count <= 150; count++) {
      struct levels lv;
      levels_build(&lv, count, slice);
      ck_assert_int_eq(hcg_slice_levels(count, slice), lv.n);
      int *through = calloc((size_t)count, sizeof(int));
      ck_assert_ptr_nonnull(through);
      for (int i = 0; i < count; i++) {
        int route[ROUTE_MAX];
        check_route(&lv, count, slice, i);
        int n = hcg_slice_route(count, slice, i, route, ROUTE_MAX);
        if (n > lv.n + 1)
          ck_abort_msg("count %d slice %d index %d: %d stops", count, slice, i,
                       n);
        through[i] += route[0] != i; /* itself, where not a stop */
        for (int k = 0; k < n; k++)
          through[route[k]]++;
      }
      for (int i = 0; i < count; i++)
        if (hcg_slice_reach(count, slice, i) != through[i])
          ck_abort_msg("count %d slice %d index %d: reach %d, routes %d", count,
                       slice, i, hcg_slice_reach(count, slice, i), through[i]);
      free(through);
      levels_free(&lv);
    }
}
END_TEST

/* Large groups, a sample of their members: the sizes of 1k to 100k-rank
 * jobs, with libhcg's fan-in and hcg.torch's slices. */
START_TEST(test_slice_large_groups) {
  static const int counts[] = {1000, 1024, 4096, 16384, 100000, 102400};
  static const int slices[] = {2, 3, 16, 32, 128, 512};
  for (size_t c = 0; c < sizeof counts / sizeof *counts; c++)
    for (size_t s = 0; s < sizeof slices / sizeof *slices; s++) {
      struct levels lv;
      levels_build(&lv, counts[c], slices[s]);
      ck_assert_int_eq(hcg_slice_levels(counts[c], slices[s]), lv.n);
      for (int i = 0; i < counts[c]; i += 1 + i % 97)
        check_route(&lv, counts[c], slices[s], i);
      check_route(&lv, counts[c], slices[s], counts[c] - 1);
      levels_free(&lv);
    }
  /* The largest world: every level still fits an int. */
  ck_assert_int_eq(hcg_slice_levels(HCG_MAX_WORLD, 2), 30);
  int route[ROUTE_MAX];
  ck_assert_int_eq(
      hcg_slice_route(HCG_MAX_WORLD, 2, HCG_MAX_WORLD - 1, route, ROUTE_MAX),
      31);
  ck_assert_int_eq(route[0], HCG_MAX_WORLD - 1);
  ck_assert_int_eq(route[29], 1 << 30);
  ck_assert_int_eq(route[30], 0);
  ck_assert_int_eq(hcg_slice_reach(HCG_MAX_WORLD, 2, 1 << 30),
                   HCG_MAX_WORLD - (1 << 30));
}
END_TEST

START_TEST(test_slice_bad_arguments) {
  int out[4];
  ck_assert_int_eq(hcg_slice_levels(0, 4), -1);
  ck_assert_int_eq(hcg_slice_levels(8, 1), -1);
  ck_assert_int_eq(hcg_slice_route(8, 4, 8, out, 4), -1);
  ck_assert_int_eq(hcg_slice_route(8, 4, -1, out, 4), -1);
  ck_assert_int_eq(hcg_slice_route(8, 4, 1, out, -1), -1);
  ck_assert_int_eq(hcg_slice_route(8, 4, 1, NULL, 1), -1);
  ck_assert_int_eq(hcg_slice_reach(8, 1, 0), -1);
  ck_assert_int_eq(hcg_slice_reach(8, 4, 9), -1);
}
END_TEST

/* libhcg's slice of a member (slice.h) is the first level of the slices
 * with the fan-in: the same head, its slice's end, the heads' count. */
START_TEST(test_slice_of_is_level_one) {
  hcg_ctx *ctx = must_ctx_edited("tp=1,dp=*", 40, 0,
                                 (const char *const[]){"HCG_FANIN=4", NULL});
  struct hcgrt_item it;
  memset(&it, 0, sizeof it);
  it.member = 1;
  it.embedding = -1;
  for (int size = 1; size <= 40; size++)
    for (int pos = 0; pos < size; pos++) {
      it.group.size = size;
      it.group.index = pos;
      struct hcgrt_slice s = hcgrt_slice_of(ctx, &it);
      int head = -1;
      hcg_slice_route(size, 4, pos, &head, 1);
      ck_assert_int_eq(s.pos, pos);
      ck_assert_int_eq(s.first, head);
      ck_assert_int_eq(s.first, pos - pos % 4);
      ck_assert_int_eq(s.end, s.first + 4 < size ? s.first + 4 : size);
      ck_assert_int_eq(s.heads, (size + 3) / 4);
    }
  hcg_ctx_free(ctx);
}
END_TEST

TCase *slice_tests(void) {
  TCase *t = tcase_create("slices");
  tcase_add_test(t, test_slice_small_groups);
  tcase_add_test(t, test_slice_large_groups);
  tcase_add_test(t, test_slice_bad_arguments);
  tcase_add_test(t, test_slice_of_is_level_one);
  return t;
}
