/* test_props.c - properties on thousands of random (seeded) layouts:
 *   - each request's groups partition its grid and equal a brute-force
 *     grouping by coordinates (an independent implementation);
 *   - each rank's directly computed group is its group in the enumeration;
 *   - all-shared view requests enumerate exactly as in the base;
 *   - canonical print -> parse -> print is stable;
 *   - every rank's environment has the right variables.
 * HCG_PROP_ITERS and HCG_PROP_SEED override the count and the seed;
 * HCG_PROP_PRINT=1 prints each layout. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

/* Check's ck_assert_* mark every passing assertion too (a write to the
 * runner per call, when each test runs in a child): millions here, more
 * system time than the checks themselves. must() says only a failure. */
#define must(cond, ...)                                                        \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg(__VA_ARGS__);                                               \
  } while (0)
#define must_eq(a, b)                                                          \
  do {                                                                         \
    long long must_a_ = (a), must_b_ = (b);                                    \
    must(must_a_ == must_b_, "%s: %s == %lld, expected %s == %lld", ctx, #a,   \
         must_a_, #b, must_b_);                                                \
  } while (0)

static unsigned long long rng_state;

static unsigned rnd(unsigned n) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (unsigned)(rng_state % n);
}

struct gen {
  char text[2048];
  int world;
};

static void append(struct gen *g, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void append(struct gen *g, const char *fmt, ...) {
  size_t len = strlen(g->text);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g->text + len, sizeof g->text - len, fmt, ap);
  va_end(ap);
}

/* Splits `total` into n factors (some may be 1) by dealing out its prime
 * factors at random. */
static void split(int total, int n, int *out) {
  for (int i = 0; i < n; i++)
    out[i] = 1;
  for (int p = 2; total > 1; p++)
    while (total % p == 0) {
      out[rnd((unsigned)n)] *= p;
      total /= p;
    }
}

static const char *const pool[] = {"tp",        "cp", "dp", "pp",
                                   "gtp_remat", "x",  "y"};
enum { POOL = 7 };

/* Writes base dims (sizes in sz) with random names; at most one may be
 * written as '*' when `infer` is set. Returns names through names[]. */
static void write_dims(struct gen *g, int nd, const int *sz, int infer,
                       const char **names) {
  int idx[POOL];
  for (int i = 0; i < POOL; i++)
    idx[i] = i;
  for (int i = POOL - 1; i > 0; i--) {
    int j = (int)rnd((unsigned)i + 1), t = idx[i];
    idx[i] = idx[j];
    idx[j] = t;
  }
  int star = infer ? (int)rnd((unsigned)nd) : -1;
  for (int d = 0; d < nd; d++) {
    names[d] = pool[idx[d]];
    if (d == star)
      append(g, "%s%s=*", d ? "," : "", names[d]);
    else
      append(g, "%s%s=%d", d ? "," : "", names[d], sz[d]);
  }
}

/* A view on grid `gname`: consecutive runs of base dims are either kept
 * (written bare, shared) or refactored into new dims of the same product,
 * which keeps every shared dim's stride, so the view is valid. */
static void write_view(struct gen *g, const char *gname, int nd, const int *sz,
                       const char **names) {
  append(g, ";%s/%s:", gname, rnd(2) ? "expert" : "alt");
  int first = 1, fresh = 0, star_used = 0;
  for (int d = 0; d < nd;) {
    if (rnd(2)) {
      append(g, "%s%s", first ? "" : ",", names[d]);
      first = 0;
      d++;
      continue;
    }
    int end = d + 1 + (int)rnd((unsigned)(nd - d));
    int prod = 1;
    for (int k = d; k < end; k++)
      prod *= sz[k];
    int m = 1 + (int)rnd(3), parts[3];
    split(prod, m, parts);
    for (int k = 0; k < m; k++) {
      /* '*' only where it is the sole unknown: the last part of the last
       * run, once. */
      if (!star_used && end == nd && k == m - 1 && rnd(3) == 0) {
        append(g, "%sv%d=*", first ? "" : ",", fresh++);
        star_used = 1;
      } else {
        append(g, "%sv%d=%d", first ? "" : ",", fresh++, parts[k]);
      }
      first = 0;
    }
    d = end;
  }
}

static void random_layout(struct gen *g) {
  g->text[0] = '\0';
  int mode = (int)rnd(3); /* 0 single, 1 colocated, 2 non-colocated */
  int ngrids = mode == 0 ? 1 : 2 + (int)rnd(2);
  int total = 0, offset = 0;
  for (int gi = 0; gi < ngrids; gi++) {
    char gname[8];
    snprintf(gname, sizeof gname, gi == ngrids - 1 ? "llm" : "m%d", gi);
    int nd = 1 + (int)rnd(4), sz[4];
    if (mode == 1 && gi > 0) {
      split(total, nd, sz);
    } else {
      for (int d = 0; d < nd; d++)
        sz[d] = 1 + (int)rnd(4);
    }
    int size = 1;
    for (int d = 0; d < nd; d++)
      size *= sz[d];
    if (gi == 0)
      total = size;
    /* '*' where the span is known: any colocated grid, the last
     * non-colocated grid, the single grid. */
    int infer = (mode != 2 || gi == ngrids - 1) && rnd(3) == 0;
    if (gi)
      append(g, rnd(2) ? ";" : "\n");
    if (mode == 0 && rnd(2))
      snprintf(gname, sizeof gname, "world"); /* written unnamed */
    if (mode == 0 && !strcmp(gname, "world"))
      ;
    else if (mode == 1)
      append(g, "%s@0:", gname);
    else if (rnd(2))
      append(g, "%s@%d:", gname, offset);
    else
      append(g, "%s:", gname);
    const char *names[4];
    write_dims(g, nd, sz, infer, names);
    if (rnd(2))
      write_view(g, gname, nd, sz, names);
    offset += mode == 1 ? 0 : size;
  }
  g->world = mode == 1 ? total : offset;
}

/* ---- checks ------------------------------------------------------------ */

/* Brute force: group ranks of the grid whose coordinates agree outside the
 * mask, scanning ranks in order; compare with the canonical enumeration. */
static void check_request(const hcg_layout *L, const hcg_request *req,
                          const char *ctx) {
  int g = req->grid, v = req->view, nd = hcg_view_num_dims(L, g, v);
  int off = hcg_grid_offset(L, g), size = hcg_grid_size(L, g);
  int *group_of = malloc(sizeof(int) * (size_t)size);
  int *firsts = malloc(sizeof(int) * (size_t)size);
  int ngroups = 0;
  /* Independent coordinates: from the sizes alone. */
  int sizes[HCG_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    sizes[d] = hcg_dim_size(L, g, v, d);
  int(*coords)[HCG_MAX_DIMS] = malloc(sizeof *coords * (size_t)size);
  for (int r = 0; r < size; r++) {
    int rest = r;
    for (int d = 0; d < nd; d++) {
      coords[r][d] = rest % sizes[d];
      rest /= sizes[d];
    }
    int found = -1;
    for (int k = 0; k < ngroups && found < 0; k++) {
      int same = 1;
      for (int d = 0; d < nd; d++)
        if (!(req->dims & (1u << d)) && coords[firsts[k]][d] != coords[r][d])
          same = 0;
      if (same)
        found = k;
    }
    if (found < 0) {
      found = ngroups++;
      firsts[found] = r;
    }
    group_of[r] = found;
  }
  must(ngroups == hcg_request_num_groups(L, req),
       "%s: %d groups, brute force %d", ctx, hcg_request_num_groups(L, req),
       ngroups);
  int *members = malloc(sizeof(int) * (size_t)size);
  int *seen = calloc((size_t)size, sizeof(int));
  for (int k = 0; k < ngroups; k++) {
    hcg_group grp;
    must_eq(hcg_group_at(L, req, k, &grp), HCG_OK);
    must_eq(hcg_group_members(L, &grp, members, size), HCG_OK);
    int expect_i = 0;
    for (int r = 0; r < size; r++) {
      if (group_of[r] != k)
        continue;
      must(expect_i < grp.size && members[expect_i] == off + r,
           "%s: group %d member %d is %d, brute force %d", ctx, k, expect_i,
           expect_i < grp.size ? members[expect_i] : -1, off + r);
      must_eq(hcg_group_member(L, &grp, expect_i), off + r);
      seen[r]++;
      /* the rank's own group, computed directly */
      hcg_group mine;
      must_eq(hcg_group_of_rank(L, req, off + r, &mine), HCG_OK);
      must_eq(mine.ordinal, k);
      must_eq(mine.first, grp.first);
      must_eq(mine.size, grp.size);
      must_eq(mine.index, expect_i);
      expect_i++;
    }
    must_eq(expect_i, grp.size);
  }
  for (int r = 0; r < size; r++)
    must(seen[r] == 1, "%s: rank %d in %d groups", ctx, off + r, seen[r]);
  free(seen);
  free(members);
  free(coords);
  free(firsts);
  free(group_of);
}

static int count_vars(void *arg, const char *name, const char *value) {
  must(value != NULL, "variable %s has no value", name);
  ++*(int *)arg;
  return 0;
}

static void check_layout(const char *text, int world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_parse(text, strlen(text), &cfg, &L, &err);
  ck_assert_msg(rc == HCG_OK, "random layout refused:\n%s\n-n %d\n%s", text,
                world, err.message);

  /* canonical print -> parse -> print */
  hcg_layout *again;
  const char *canon = hcg_layout_text(L);
  ck_assert_int_eq(hcg_layout_parse(canon, strlen(canon), &cfg, &again, &err),
                   HCG_OK);
  ck_assert_str_eq(hcg_layout_text(again), canon);
  hcg_layout_free(again);

  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
      int nd = hcg_view_num_dims(L, g, v);
      /* every dim subset of small views, a sample otherwise */
      int subsets = 1 << nd;
      for (int s = 0; s<subsets; s += nd> 4 ? 1 + (int)rnd(5) : 1) {
        char ctx[4200];
        snprintf(ctx, sizeof ctx, "'%s' -n %d, grid %d view %d mask %#x", text,
                 world, g, v, s);
        hcg_request raw = {g, v, (uint32_t)s};
        check_request(L, &raw, ctx);
        /* all-shared requests: the view's enumeration is the base's */
        int all_shared = 1;
        for (int d = 0; d < nd; d++)
          if ((s & (1 << d)) && !hcg_dim_shared(L, g, v, d))
            all_shared = 0;
        if (v && all_shared) {
          const char *dims[HCG_MAX_DIMS];
          int n = 0;
          for (int d = 0; d < nd; d++)
            if (s & (1 << d))
              dims[n++] = hcg_dim_name(L, g, v, d);
          hcg_request resolved;
          must_eq(hcg_request_make(L, g, v, dims, n, &resolved, NULL), HCG_OK);
          must_eq(resolved.view, 0);
          char *a = enum_string(L, &raw), *b = enum_string(L, &resolved);
          must(strcmp(a, b) == 0, "%s: view %s != base %s", ctx, a, b);
          free(a);
          free(b);
        }
      }
    }
  }

  /* Environment: 6 fixed variables plus two per dim of each grid holding
   * the rank. */
  for (int r = 0; r < world; r++) {
    int expect = 6, got = 0;
    for (int g = 0; g < hcg_layout_num_grids(L); g++)
      if (hcg_grid_contains(L, g, r))
        for (int v = 0; v < hcg_grid_num_views(L, g); v++)
          expect += 2 * hcg_view_num_dims(L, g, v);
    int rc_env = hcg_rank_env(L, r, count_vars, &got);
    must(rc_env == HCG_OK && got == expect,
         "'%s' -n %d: rank %d's environment: status %d, %d variables, "
         "expected %d",
         text, world, r, rc_env, got, expect);
  }
  hcg_layout_free(L);
}

static int env_int(const char *name, int fallback) {
  const char *s = getenv(name);
  return s && *s ? atoi(s) : fallback;
}

START_TEST(random_layouts) {
  int iters = env_int("HCG_PROP_ITERS", 3000);
  unsigned long long seed =
      (unsigned long long)env_int("HCG_PROP_SEED", 20261121);
  rng_state = seed * 2654435761ULL + 1;
  for (int i = 0; i < iters; i++) {
    struct gen g;
    random_layout(&g);
    if (getenv("HCG_PROP_PRINT"))
      printf("-n %d '%s'\n", g.world, g.text);
    check_layout(g.text, g.world);
  }
}
END_TEST

Suite *props_suite(void) {
  Suite *s = suite_create("properties");
  TCase *tc = tcase_create("random layouts");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, random_layouts);
  suite_add_tcase(s, tc);
  return s;
}
