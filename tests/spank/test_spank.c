/*
 * test_spank.c - unit tests of the plugin's pure parts: plugstack.conf
 * arguments, the srun -> slurmstepd hand-over and the per-task variables.
 * The Slurm side is tested on a real cluster (tests/cluster).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "forward.h"
#include "hetstep.h"
#include "placement.h"
#include "taskenv.h"

/* ---- plugstack.conf arguments ------------------------------------------ */

static char reported[8][512];
static int nreported;

static void collect(void *arg, const char *msg) {
  (void)arg;
  if (nreported < 8)
    snprintf(reported[nreported], sizeof reported[0], "%s", msg);
  nreported++;
}

static int parse(struct hcgp_args *a, int argc, char **argv) {
  nreported = 0;
  hcgp_args_defaults(a);
  return hcgp_args_parse(a, argc, argv, collect, NULL);
}

START_TEST(args_defaults) {
  struct hcgp_args a;
  ck_assert_int_eq(parse(&a, 0, NULL), 0);
  ck_assert_uint_eq(a.max_layout_bytes, HCGP_DEFAULT_MAX_BYTES);
  ck_assert_int_eq(a.export_dims, 1);
  ck_assert_str_eq(a.language, "");
}
END_TEST

START_TEST(args_valid) {
  struct hcgp_args a;
  char *argv[] = {"max_layout_bytes=65536", "export_dims=no", "language=lm"};
  ck_assert_int_eq(parse(&a, 3, argv), 0);
  ck_assert_int_eq(nreported, 0);
  ck_assert_uint_eq(a.max_layout_bytes, 65536);
  ck_assert_int_eq(a.export_dims, 0);
  ck_assert_str_eq(a.language, "lm");
  char *argv2[] = {"max_layout_bytes=1", "export_dims=yes"};
  ck_assert_int_eq(parse(&a, 2, argv2), 0);
  ck_assert_uint_eq(a.max_layout_bytes, 1);
  ck_assert_int_eq(a.export_dims, 1);
}
END_TEST

/* Every rejected word is reported once, named, and leaves the default. */
static void expect_bad(const char *word, const char *needle) {
  struct hcgp_args a;
  char *argv[] = {(char *)word};
  ck_assert_msg(parse(&a, 1, argv) == 1, "'%s' accepted", word);
  ck_assert_int_eq(nreported, 1);
  ck_assert_msg(strstr(reported[0], needle), "'%s' gave '%s', no '%s'", word,
                reported[0], needle);
  ck_assert_uint_eq(a.max_layout_bytes, HCGP_DEFAULT_MAX_BYTES);
  ck_assert_int_eq(a.export_dims, 1);
  ck_assert_str_eq(a.language, "");
}

START_TEST(args_bad) {
  expect_bad("bogus=1", "unknown argument 'bogus=1'");
  expect_bad("max_layout", "unknown argument");
  expect_bad("max_layout_bytesx=5", "unknown argument");
  expect_bad("export_dims", "needs a value");
  expect_bad("max_layout_bytes=0", "from 1 to 65536");
  expect_bad("max_layout_bytes=65537", "from 1 to 65536");
  expect_bad("max_layout_bytes=", "from 1 to 65536");
  expect_bad("max_layout_bytes=12abc", "from 1 to 65536");
  expect_bad("max_layout_bytes=+5", "from 1 to 65536");
  expect_bad("max_layout_bytes=-5", "from 1 to 65536");
  expect_bad("max_layout_bytes=0x100", "from 1 to 65536");
  expect_bad("max_layout_bytes=99999999999999999999999", "from 1 to 65536");
  expect_bad("export_dims=maybe", "yes or no");
  expect_bad("export_dims=YES", "yes or no");
  expect_bad("export_dims=", "yes or no");
  expect_bad("language=Bad", "grid name");
  expect_bad("language=", "grid name");
  expect_bad("language=1x", "grid name");
  expect_bad("language=a-b", "grid name");
  expect_bad("language=abcdefghijklmnopqrstuvwxyz0123456", "grid name");
}
END_TEST

START_TEST(args_placement) {
  struct hcgp_args a;
  ck_assert_int_eq(parse(&a, 0, NULL), 0);
  ck_assert_str_eq(a.intra_node_dims, HCG_PLACEMENT_DEFAULT_DIMS);
  ck_assert_int_eq(a.placement, HCGP_PLACEMENT_WARN);
  char *argv[] = {"intra_node_dims=tp,ep", "placement=refuse"};
  ck_assert_int_eq(parse(&a, 2, argv), 0);
  ck_assert_str_eq(a.intra_node_dims, "tp,ep");
  ck_assert_int_eq(a.placement, HCGP_PLACEMENT_REFUSE);
  char *argv2[] = {"placement=off"};
  ck_assert_int_eq(parse(&a, 1, argv2), 0);
  ck_assert_int_eq(a.placement, HCGP_PLACEMENT_OFF);
  expect_bad("placement=", "off, warn or refuse");
  expect_bad("placement=Warn", "off, warn or refuse");
  expect_bad("intra_node_dims=", "dim names separated by commas");
  expect_bad("intra_node_dims=tp,", "dim names separated by commas");
  expect_bad("intra_node_dims=TP", "dim names separated by commas");
  /* The job option cannot turn the check off. */
  ck_assert_int_eq(hcgp_placement_parse("off", 0), -1);
  ck_assert_int_eq(hcgp_placement_parse("refuse", 0), HCGP_PLACEMENT_REFUSE);
  ck_assert_int_eq(hcgp_placement_parse(NULL, 1), -1);
}
END_TEST

/* A node of a modelled placement: 0 for its own ranks, -1 for others. */
struct node_view {
  hcg_placement p;
  int node;
};
static int on_node(void *arg, int rank) {
  const struct node_view *v = arg;
  return hcg_placement_node(&v->p, rank) == v->node ? 0 : -1;
}

/* The check of each node of `nodes`: how many speak, and what node 0's
 * line says. */
static int speakers(const char *text, int world, int nodes, const char *dist,
                    char *line, size_t cap) {
  hcg_layout *L = NULL;
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(text, strlen(text), &cfg, &L, &err), 0);
  int speak = 0, local[64];
  for (int k = 0; k < nodes; k++) {
    struct node_view v;
    ck_assert_int_eq(hcg_placement_make(world, nodes, 0, dist, &v.p, &err), 0);
    v.node = k;
    int n = 0;
    for (int r = 0; r < world; r++)
      if (hcg_placement_node(&v.p, r) == k)
        local[n++] = r;
    struct hcgp_node_check c;
    ck_assert_int_eq(hcgp_node_check(L, NULL, local, n, on_node, &v, &c), 0);
    speak += c.speak;
    if (c.speak && line)
      hcgp_placement_line(L, &c, "n0", HCGP_PLACEMENT_WARN, line, cap);
  }
  hcg_layout_free(L);
  return speak;
}

START_TEST(node_check_speaks_once) {
  char line[512] = "";
  ck_assert_int_eq(speakers("tp=4,dp=*", 8, 2, NULL, line, sizeof line), 0);
  ck_assert_int_eq(speakers("tp=8", 8, 2, NULL, line, sizeof line), 1);
  ck_assert_str_eq(line, "warning: placement: grid 'world', dim 'tp': group "
                         "[0,1,2,3,4,5,6,7] spans n0 (rank 0) and another "
                         "node (rank 4): its traffic leaves the node "
                         "(placement=warn; see hcg explain --nodes)");
  ck_assert_int_eq(speakers("dp=2,tp=4", 8, 2, NULL, NULL, 0), 1);
  ck_assert_int_eq(speakers("dp=2,tp=4", 8, 2, "cyclic", NULL, 0), 0);
  ck_assert_int_eq(speakers("tp=2,dp=*", 8, 2, "cyclic", NULL, 0), 1);
  /* Two nodes always give one line; more nodes may give one per set of
   * nodes that share crossing groups (doc/plugin.md). */
  ck_assert_int_eq(speakers("tp=2,dp=*", 12, 4, NULL, NULL, 0), 2);
}
END_TEST

START_TEST(args_long_word_is_cut) {
  char word[4000];
  memset(word, 'x', sizeof word - 1);
  word[sizeof word - 1] = '\0';
  expect_bad(word, "unknown argument");
  ck_assert(strlen(reported[0]) < 300);
}
END_TEST

START_TEST(args_duplicates_and_counts) {
  struct hcgp_args a;
  char *argv[] = {"export_dims=no", "export_dims=no", "bogus", "language=x"};
  ck_assert_int_eq(parse(&a, 4, argv), 2);
  ck_assert(strstr(reported[0], "more than once"));
  ck_assert(strstr(reported[1], "unknown argument 'bogus'"));
  ck_assert_int_eq(a.export_dims, 0); /* the first, valid one stays */
  ck_assert_str_eq(a.language, "x");
}
END_TEST

START_TEST(args_names) {
  ck_assert(hcg_name_valid("a"));
  ck_assert(hcg_name_valid("llm_2"));
  ck_assert(hcg_name_valid("abcdefghijklmnopqrstuvwxyz012345")); /* 32 */
  ck_assert(!hcg_name_valid("abcdefghijklmnopqrstuvwxyz0123456"));
  ck_assert(!hcg_name_valid(""));
  ck_assert(!hcg_name_valid(NULL));
  ck_assert(!hcg_name_valid("_a"));
  ck_assert(!hcg_name_valid("a b"));
}
END_TEST

/* ---- hand-over ---------------------------------------------------------- */

START_TEST(forward_round_trip) {
  char *v = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(
      hcgp_forward_encode(17, 3, "llm", "vision@0:tp=2;llm@2:tp=2", &v, &err),
      HCG_OK);
  ck_assert_str_eq(v, "hcg1:17.3:llm:vision@0:tp=2;llm@2:tp=2");
  char lang[HCG_MAX_NAME + 1];
  const char *text;
  size_t len;
  ck_assert_int_eq(
      hcgp_forward_decode(v, strlen(v), 17, 3, lang, &text, &len, &err),
      HCG_OK);
  ck_assert_str_eq(lang, "llm");
  ck_assert_uint_eq(len, strlen("vision@0:tp=2;llm@2:tp=2"));
  ck_assert(!strncmp(text, "vision@0:tp=2;llm@2:tp=2", len));
  free(v);
  ck_assert_int_eq(
      hcgp_forward_encode(4294967295u, 4294967291u, "a", "a:x=1", &v, &err),
      HCG_OK);
  ck_assert_int_eq(hcgp_forward_decode(v, strlen(v), 4294967295u, 4294967291u,
                                       lang, &text, &len, &err),
                   HCG_OK);
  free(v);
}
END_TEST

START_TEST(forward_other_step) {
  char lang[HCG_MAX_NAME + 1];
  const char *text;
  size_t len;
  hcg_error err = HCG_ERROR_INIT;
  const char *v = "hcg1:17.3:llm:llm@0:tp=2";
  ck_assert_int_eq(
      hcgp_forward_decode(v, strlen(v), 17, 4, lang, &text, &len, &err),
      HCG_EENV);
  ck_assert(strstr(err.message, "step 17.3, not for this step 17.4"));
  ck_assert_int_eq(
      hcgp_forward_decode(v, strlen(v), 18, 3, lang, &text, &len, &err),
      HCG_EENV);
}
END_TEST

START_TEST(forward_malformed) {
  static const char *const bad[] = {
      "",
      "hcg1",
      "hcg2:1.2:llm:x=1",
      "hcg1:1.2:llm",
      "hcg1:1:llm:x=1",
      "hcg1:a.2:llm:x=1",
      "hcg1:1.2::x=1",
      "hcg1:99999999999.2:llm:x=1",
      "hcg1:1.2:abcdefghijklmnopqrstuvwxyz0123456789:x=1",
      "tp=2,dp=4",
      /* Found by fuzz_forward: the language module is a grid name. */
      "hcg1:1.2:woHCG_LLM_EX0:dp=1",
      "hcg1:1.2:llm x:dp=1",
  };
  char lang[HCG_MAX_NAME + 1];
  const char *text;
  size_t len;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    hcg_error err = HCG_ERROR_INIT;
    int rc = hcgp_forward_decode(bad[i], strlen(bad[i]), 1, 2, lang, &text,
                                 &len, &err);
    ck_assert_msg(rc != HCG_OK, "'%s' accepted", bad[i]);
    ck_assert(err.message[0]);
  }
}
END_TEST

START_TEST(forward_too_long) {
  size_t n = HCGP_FORWARD_MAX + 1;
  char *v = malloc(n + 1);
  memset(v, 'x', n);
  v[n] = '\0';
  char lang[HCG_MAX_NAME + 1];
  const char *text;
  size_t len;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcgp_forward_decode(v, n, 1, 2, lang, &text, &len, &err),
                   HCG_ELIMIT);
  char *out = NULL;
  v[HCG_MAX_LAYOUT_BYTES + 1] = '\0';
  ck_assert_int_eq(hcgp_forward_encode(1, 2, "a", v, &out, &err), HCG_ELIMIT);
  ck_assert_ptr_null(out);
  free(v);
}
END_TEST

/* ---- per-task variables ------------------------------------------------- */

struct envlist {
  char lines[128][256];
  int n;
  int stop_after; /* return -1 after this many calls; 0 = never */
};

static int collect_env(void *arg, const char *name, const char *value) {
  struct envlist *e = arg;
  if (e->n < 128)
    snprintf(e->lines[e->n], sizeof e->lines[0], "%s=%s", name, value);
  e->n++;
  if (e->stop_after && e->n >= e->stop_after)
    return -1;
  return 0;
}

/* The plugin's variables for a task are exactly the core's walk. */
static void check_task(const char *layout_text, int world, int rank,
                       const char *language) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  cfg.language = language;
  hcg_layout *L = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_layout_parse(layout_text, strlen(layout_text), &cfg, &L,
                                 &err) == HCG_OK,
                "%s", err.message);
  static struct envlist want, got, common;
  memset(&want, 0, sizeof want);
  memset(&got, 0, sizeof got);
  memset(&common, 0, sizeof common);
  ck_assert_int_eq(hcg_rank_env(L, rank, collect_env, &want), 0);

  char *v = NULL;
  ck_assert_int_eq(hcgp_forward_encode(5, 0,
                                       hcg_grid_name(L, hcg_layout_language(L)),
                                       hcg_layout_text(L), &v, &err),
                   HCG_OK);
  struct hcgp_task t = {5, 0, (uint32_t)world, (uint32_t)rank, 1, 0, NULL};
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_OK);
  ck_assert_int_eq(got.n, want.n);
  for (int i = 0; i < want.n; i++)
    ck_assert_str_eq(got.lines[i], want.lines[i]);

  /* The kept layout is the one the variables came from; nothing is kept
   * when the value does not decode. */
  hcg_layout *kept = NULL;
  static struct envlist again;
  memset(&again, 0, sizeof again);
  ck_assert_int_eq(
      hcgp_task_env_keep(v, strlen(v), &t, collect_env, &again, &kept, &err),
      HCG_OK);
  ck_assert_ptr_nonnull(kept);
  ck_assert_str_eq(hcg_layout_text(kept), hcg_layout_text(L));
  ck_assert_int_eq(hcg_layout_world_size(kept), world);
  hcg_layout_free(kept);
  kept = L; /* must be cleared */
  ck_assert_int_ne(
      hcgp_task_env_keep("hcg1:x", 6, &t, collect_env, &again, &kept, &err),
      HCG_OK);
  ck_assert_ptr_null(kept);

  t.export_dims = 0;
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &common, &err),
                   HCG_OK);
  ck_assert_int_eq(common.n, 6);
  for (int i = 0; i < common.n; i++) {
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)strcspn(common.lines[i], "="),
             common.lines[i]);
    ck_assert_int_ne(hcg_env_scope(name), HCG_ENV_PER_DIM);
  }
  free(v);
  hcg_layout_free(L);
}

START_TEST(task_env_matches_core) {
  check_task("tp=2,cp=2,pp=2,dp=*", 24, 13, NULL);
  check_task("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp",
             16, 9, NULL);
  check_task("vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*", 16, 3, NULL);
  check_task("vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*", 16, 12, NULL);
  check_task("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8, 5, NULL);
  check_task("enc:tp=2; dec:tp=2", 4, 1, "enc");
  check_task("dp=*", 1, 0, NULL);
}
END_TEST

START_TEST(task_env_plan) {
  /* Each local task's two records, found again by step, local id and rank;
   * the plan grows (and may move) as tasks are put in it. */
  static char big[40000], layout[32000];
  char small[32];
  memset(layout, 'v', sizeof layout - 1);
  struct hcgp_env_record req = {big, sizeof big, 0},
                         opt = {small, sizeof small, 0};
  struct hcgp_plan_entry e = {{NULL, 0, 0}, req, opt}, got;
  ck_assert_ptr_null(hcgp_plan_new(7, 3, 0));
  ck_assert_ptr_null(hcgp_plan_new(7, 3, (1 << 16) + 1));
  struct hcgp_plan *p = hcgp_plan_new(7, 3, 4);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(hcgp_plan_get(p, 7, 3, 0, 10, &got), 0);
  for (int lid = 0; lid < 4; lid++) {
    if (lid == 2)
      continue; /* a task left to compute its own */
    char rank[16];
    snprintf(rank, sizeof rank, "%d", 10 + lid);
    req.used = opt.used = 0;
    ck_assert_int_eq(hcgp_env_record_add(&req, "HCG_RANK", rank), HCG_OK);
    ck_assert_int_eq(hcgp_env_record_add(&req, "HCG_LAYOUT", layout), HCG_OK);
    ck_assert_int_eq(hcgp_env_record_add(&opt, "HCG_W_TP_LOCAL", "1"), HCG_OK);
    e.required = req;
    e.optional = opt;
    ck_assert_int_eq(hcgp_plan_put(&p, lid, 10 + (uint32_t)lid, &e), HCG_OK);
  }
  ck_assert_int_eq(hcgp_plan_put(&p, 1, 11, &e), HCG_EINVAL);
  ck_assert_int_eq(hcgp_plan_put(&p, 4, 14, &e), HCG_EINVAL);
  ck_assert_int_eq(hcgp_plan_put(&p, -1, 14, &e), HCG_EINVAL);
  for (int lid = 0; lid < 4; lid++) {
    int in = hcgp_plan_get(p, 7, 3, lid, 10 + (uint32_t)lid, &got);
    struct hcgp_env_record r = got.required, o = got.optional;
    ck_assert_int_eq(in, lid != 2);
    if (!in)
      continue;
    size_t at = 0;
    const char *value;
    ck_assert_str_eq(hcgp_env_record_next(&r, &at, &value), "HCG_RANK");
    ck_assert_int_eq(atoi(value), 10 + lid);
    ck_assert_str_eq(hcgp_env_record_next(&r, &at, &value), "HCG_LAYOUT");
    ck_assert_uint_eq(strlen(value), sizeof layout - 1);
    ck_assert_ptr_null(hcgp_env_record_next(&r, &at, &value));
    at = 0;
    ck_assert_str_eq(hcgp_env_record_next(&o, &at, &value), "HCG_W_TP_LOCAL");
    ck_assert_str_eq(value, "1");
  }
  /* Another step, local id or rank: not this task. */
  ck_assert_int_eq(hcgp_plan_get(p, 7, 4, 0, 10, &got), 0);
  ck_assert_int_eq(hcgp_plan_get(p, 8, 3, 0, 10, &got), 0);
  ck_assert_int_eq(hcgp_plan_get(p, 7, 3, 0, 11, &got), 0);
  ck_assert_int_eq(hcgp_plan_get(p, 7, 3, 4, 14, &got), 0);
  ck_assert_int_eq(hcgp_plan_get(NULL, 7, 3, 0, 10, &got), 0);
  hcgp_plan_free(p);
  hcgp_plan_free(NULL);
}
END_TEST

static uint32_t common_rank(const char *text, int world) {
  hcg_layout *L = NULL;
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(text, strlen(text), &cfg, &L, &err), 0);
  uint32_t r = hcgp_layout_common_rank(L);
  hcg_layout_free(L);
  return r;
}

START_TEST(grid_shared_variables) {
  /* What srun passes for the tasks of the largest grid to share: never a
   * coordinate, a placement fact or a user's setting. */
  static const char *yes[] = {
      "HCG_VERSION", "HCG_LAYOUT",      "HCG_WORLD_SIZE",        "HCG_LANGUAGE",
      "HCG_GRIDS",   "HCG_LLM_TP_SIZE", "HCG_LLM_EXPERT_EP_SIZE"};
  static const char *no[] = {"HCG_RANK",
                             "HCG_LLM_TP_RANK",
                             "HCG_LLM_TP_LOCAL",
                             "HCG_TIMEOUT",

                             "PATH",
                             ""};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    ck_assert_msg(hcgp_env_grid_shared(yes[i]), "%s", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    ck_assert_msg(!hcgp_env_grid_shared(no[i]), "%s", no[i]);
  ck_assert(!hcgp_env_grid_shared(NULL));
  ck_assert_uint_eq(common_rank("tp=2,dp=*", 8), 0);
  ck_assert_uint_eq(
      common_rank("vision:tp=4,dp=2; llm:tp=2,cp=2,dp=*,pp=2", 64), 8);
  ck_assert_uint_eq(common_rank("enc@0:tp=2,dp=2; llm@4:tp=2,pp=4", 12), 4);
  /* A tie: the first grid. */
  ck_assert_uint_eq(common_rank("vision@4:tp=4; llm@0:tp=4", 8), 4);
  ck_assert_uint_eq(hcgp_layout_common_rank(NULL), 0);
}
END_TEST

/* Task lid's entry as one string: "-NAME" per unset, "NAME=VALUE" per set
 * (required then optional), space-separated. */
static void entry_text(const struct hcgp_plan *p, int lid, uint32_t rank,
                       char *out, size_t cap) {
  struct hcgp_plan_entry e;
  out[0] = '\0';
  ck_assert_int_eq(hcgp_plan_get(p, 7, 3, lid, rank, &e), 1);
  const struct hcgp_env_record *r[] = {&e.unset, &e.required, &e.optional};
  size_t n = 0;
  for (int k = 0; k < 3; k++) {
    size_t at = 0;
    const char *name, *value;
    while ((name = hcgp_env_record_next(r[k], &at, &value)))
      n += (size_t)snprintf(out + n, cap - n, k ? "%s%s=%s" : "%s-%s",
                            n ? " " : "", name, value);
  }
  ck_assert_int_lt(n, cap);
}

START_TEST(task_env_plan_share) {
  /* Three tasks: two of grid a (ranks 0, 1), one of grid b (rank 2). The
   * step's environment holds what grid a's tasks share, one variable with
   * a value no task has, and one no task has at all. */
  static const char *vars[3][4][2] = {{{"HCG_WORLD_SIZE", "3"},
                                       {"HCG_GRIDS", "a"},
                                       {"HCG_A_TP_SIZE", "2"},
                                       {"HCG_A_TP_RANK", "0"}},
                                      {{"HCG_WORLD_SIZE", "3"},
                                       {"HCG_GRIDS", "a"},
                                       {"HCG_A_TP_SIZE", "2"},
                                       {"HCG_A_TP_RANK", "1"}},
                                      {{"HCG_WORLD_SIZE", "3"},
                                       {"HCG_GRIDS", "b"},
                                       {"HCG_B_TP_SIZE", "1"},
                                       {"HCG_B_TP_RANK", "0"}}};
  struct hcgp_plan *p = hcgp_plan_new(7, 3, 3);
  ck_assert_ptr_nonnull(p);
  for (int lid = 0; lid < 3; lid++) {
    char rb[256], ob[32];
    struct hcgp_plan_entry e = {
        {NULL, 0, 0}, {rb, sizeof rb, 0}, {ob, sizeof ob, 0}};
    for (int v = 0; v < 4; v++)
      ck_assert_int_eq(
          hcgp_env_record_add(&e.required, vars[lid][v][0], vars[lid][v][1]),
          HCG_OK);
    ck_assert_int_eq(hcgp_env_record_add(&e.optional, "HCG_A_TP_LOCAL", "1"),
                     HCG_OK);
    ck_assert_int_eq(hcgp_plan_put(&p, lid, (uint32_t)lid, &e), HCG_OK);
  }
  const char *held[] = {"HCG_WORLD_SIZE=3", "HCG_GRIDS=a", "HCG_A_TP_SIZE=2",
                        "HCG_A_TP_RANK=7", "HCG_OLD_PP_RANK=1"};
  unsigned char keep[5];
  ck_assert_int_eq(hcgp_plan_share(&p, held, 5, keep), HCG_OK);
  ck_assert_mem_eq(keep, "\1\1\1\0\0", 5);
  char text[512];
  entry_text(p, 0, 0, text, sizeof text);
  ck_assert_str_eq(text, "HCG_A_TP_RANK=0 HCG_A_TP_LOCAL=1");
  entry_text(p, 1, 1, text, sizeof text);
  ck_assert_str_eq(text, "HCG_A_TP_RANK=1 HCG_A_TP_LOCAL=1");
  entry_text(p, 2, 2, text, sizeof text);
  ck_assert_str_eq(text, "-HCG_A_TP_SIZE HCG_GRIDS=b HCG_B_TP_SIZE=1 "
                         "HCG_B_TP_RANK=0 HCG_A_TP_LOCAL=1");

  /* Nothing held as a task has it: the plan as it was, nothing kept. */
  const char *stale[] = {"HCG_RANK=9", "HCG_X"};
  ck_assert_int_eq(hcgp_plan_share(&p, stale, 2, keep), HCG_OK);
  ck_assert_mem_eq(keep, "\0\0", 2);
  entry_text(p, 0, 0, text, sizeof text);
  ck_assert_str_eq(text, "HCG_A_TP_RANK=0 HCG_A_TP_LOCAL=1");
  ck_assert_int_eq(hcgp_plan_share(&p, NULL, 0, NULL), HCG_OK);
  static const char *many[HCGP_PLAN_HELD_MAX + 1];
  static unsigned char many_keep[HCGP_PLAN_HELD_MAX + 1];
  for (size_t i = 0; i <= HCGP_PLAN_HELD_MAX; i++)
    many[i] = "HCG_A_TP_SIZE=2";
  ck_assert_int_eq(hcgp_plan_share(&p, many, HCGP_PLAN_HELD_MAX + 1, many_keep),
                   HCG_ELIMIT);
  ck_assert_int_eq(many_keep[0], 0);
  ck_assert_int_eq(hcgp_plan_share(NULL, stale, 2, keep), HCG_EINVAL);
  ck_assert_int_eq(hcgp_plan_share(&p, NULL, 2, keep), HCG_EINVAL);
  hcgp_plan_free(p);
}
END_TEST

START_TEST(task_env_record) {
  /* What a task records is what it then sets, in order; a full buffer
   * takes nothing (the caller sets the rest at once). */
  char buf[64];
  struct hcgp_env_record r = {buf, sizeof buf, 0};
  ck_assert_int_eq(hcgp_env_record_add(&r, "HCG_RANK", "3"), HCG_OK);
  ck_assert_int_eq(hcgp_env_record_add(&r, "HCG_EMPTY", ""), HCG_OK);
  ck_assert_int_eq(hcgp_env_record_add(&r, "HCG_LAYOUT", "tp=2,dp=*"), HCG_OK);
  size_t used = r.used;
  ck_assert_uint_eq(used, 11 + 11 + 21);
  /* 64 - 43 = 21 bytes left: "HCG_X" "0123456789abcd" needs 21, one more
   * does not fit. */
  ck_assert_int_eq(hcgp_env_record_add(&r, "HCG_X", "0123456789abcde"),
                   HCG_ELIMIT);
  ck_assert_uint_eq(r.used, used);
  ck_assert_int_eq(hcgp_env_record_add(&r, "HCG_X", "0123456789abcd"), HCG_OK);
  ck_assert_uint_eq(r.used, r.cap);
  ck_assert_int_eq(hcgp_env_record_add(&r, "A", ""), HCG_ELIMIT);
  ck_assert_int_eq(hcgp_env_record_add(&r, NULL, ""), HCG_EINVAL);
  ck_assert_int_eq(hcgp_env_record_add(NULL, "A", ""), HCG_EINVAL);

  const char *want[][2] = {{"HCG_RANK", "3"},
                           {"HCG_EMPTY", ""},
                           {"HCG_LAYOUT", "tp=2,dp=*"},
                           {"HCG_X", "0123456789abcd"}};
  size_t at = 0;
  const char *name, *value;
  int i = 0;
  while ((name = hcgp_env_record_next(&r, &at, &value))) {
    ck_assert_int_lt(i, 4);
    ck_assert_str_eq(name, want[i][0]);
    ck_assert_str_eq(value, want[i][1]);
    i++;
  }
  ck_assert_int_eq(i, 4);
  r.used = 0;
  at = 0;
  ck_assert_ptr_null(hcgp_env_record_next(&r, &at, &value));
}
END_TEST

START_TEST(task_env_language_is_forwarded) {
  /* The node uses srun's choice of language module, not its own rule. */
  const char *v = "hcg1:5.0:enc:enc@0:tp=2;dec@2:tp=2";
  struct envlist got;
  memset(&got, 0, sizeof got);
  struct hcgp_task t = {5, 0, 4, 3, 1, 0, NULL};
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_OK);
  int found = 0;
  for (int i = 0; i < got.n; i++)
    found |= !strcmp(got.lines[i], "HCG_LANGUAGE=enc");
  ck_assert(found);
}
END_TEST

START_TEST(task_env_site_policy) {
  /* A forged hand-over (srun run without the plugin) meets the site's
   * max_layout_bytes and language= again on the node. */
  const char *v = "hcg1:5.0:enc:enc@0:tp=2;dec@2:tp=2";
  size_t tlen = strlen("enc@0:tp=2;dec@2:tp=2");
  struct envlist got;
  memset(&got, 0, sizeof got);
  hcg_error err = HCG_ERROR_INIT;
  struct hcgp_task t = {5, 0, 4, 3, 1, tlen - 1, NULL};
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_ELIMIT);
  ck_assert_ptr_nonnull(strstr(err.message, "max_layout_bytes"));
  t.max_bytes = tlen;
  t.language = "dec";
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_EENV);
  ck_assert_ptr_nonnull(strstr(err.message, "language=dec"));
  ck_assert_int_eq(got.n, 0);
  t.language = "enc";
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_OK);
  /* The site's language= chooses among several grids: a one-grid layout's
   * only grid is its language module, whatever the site names. */
  const char *one = "hcg1:5.0:world:world@0:tp=2,dp=2";
  memset(&got, 0, sizeof got);
  t.language = "llm";
  t.max_bytes = 0;
  ck_assert_msg(hcgp_task_env(one, strlen(one), &t, collect_env, &got, &err) ==
                    HCG_OK,
                "%s", err.message);
  int found = 0;
  for (int i = 0; i < got.n; i++)
    found |= !strcmp(got.lines[i], "HCG_LANGUAGE=world");
  ck_assert(found);
}
END_TEST

START_TEST(env_ownership) {
  ck_assert(hcgp_env_plugin_owned("HCG_RANK=0"));
  ck_assert(hcgp_env_plugin_owned("HCG_WORLD_SIZE=2"));
  ck_assert(hcgp_env_plugin_owned("HCG_LLM_TP_RANK=1"));
  ck_assert(hcgp_env_plugin_owned("HCG_TIMEOUTS=1"));
  ck_assert(hcgp_env_plugin_owned("HCG_"));
  ck_assert(!hcgp_env_plugin_owned("HCG_TIMEOUT=5"));
  ck_assert(!hcgp_env_plugin_owned("HCG_LIBRARY=/x"));
  ck_assert(!hcgp_env_plugin_owned("HCG_PMIX_LIBRARY=/x/libpmix.so.2"));
  ck_assert(!hcgp_env_plugin_owned("HCG_TRACE"));
  ck_assert(!hcgp_env_plugin_owned("SLURM_HCG_STEP_LAYOUT=x"));
  ck_assert(!hcgp_env_plugin_owned("hcg_rank=1"));
  ck_assert(!hcgp_env_plugin_owned(NULL));
}
END_TEST

START_TEST(task_env_errors) {
  hcg_error err = HCG_ERROR_INIT;
  struct envlist got;
  memset(&got, 0, sizeof got);
  const char *v = "hcg1:5.0:world:world@0:tp=2,dp=4";
  struct hcgp_task t = {5, 0, 8, 8, 1, 0, NULL}; /* rank == world */
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_ERANGE);
  t.rank = 0;
  t.world = 0;
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_ERANGE);
  t.world = 6; /* the forwarded layout does not fit another world */
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_ELAYOUT);
  ck_assert_int_eq(got.n, 0);
  t.world = 8;
  t.step = 1;
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   HCG_EENV);
  t.step = 0;
  got.stop_after = 3; /* the callback's failure is returned as is */
  ck_assert_int_eq(hcgp_task_env(v, strlen(v), &t, collect_env, &got, &err),
                   -1);
  ck_assert_int_eq(got.n, 3);
  ck_assert_int_eq(hcgp_task_env(NULL, 0, &t, collect_env, &got, &err),
                   HCG_EINVAL);
}
END_TEST

/* SLURM_NTASKS against this component's task count: only a well-formed
 * count that differs says "heterogeneous". */
START_TEST(heterogeneous_steps) {
  ck_assert_int_eq(hcgp_step_heterogeneous("12", 12), 0);
  ck_assert_int_eq(hcgp_step_heterogeneous("20", 12), 1);
  ck_assert_int_eq(hcgp_step_heterogeneous(NULL, 12), 0);
  ck_assert_int_eq(hcgp_step_heterogeneous("", 12), 0);
  ck_assert_int_eq(hcgp_step_heterogeneous("-8", 12), 0);
  ck_assert_int_eq(hcgp_step_heterogeneous("12x", 12), 0);
  ck_assert_int_eq(hcgp_step_heterogeneous("99999999999999999999999", 12), 0);
}
END_TEST

/* srun's command line names a job when a word may be --jobid or an
 * abbreviation of it; an unreadable one counts as naming one. */
#define CMDLINE(lit) lit, sizeof lit - 1
START_TEST(srun_command_line_naming_a_job) {
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(CMDLINE("srun\0-n\0"
                                                      "4\0"
                                                      "./train\0")),
                   0);
  ck_assert_int_eq(
      hcgp_srun_cmdline_attaches(CMDLINE("srun\0--jobid=12\0true\0")), 1);
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(CMDLINE("srun\0--jobid\0"
                                                      "12\0true\0")),
                   1);
  ck_assert_int_eq(
      hcgp_srun_cmdline_attaches(CMDLINE("srun\0--jobi=12\0true\0")), 1);
  /* --job-name is another option; a word merely containing it is not. */
  ck_assert_int_eq(
      hcgp_srun_cmdline_attaches(CMDLINE("srun\0--job-name=x\0true\0")), 0);
  ck_assert_int_eq(
      hcgp_srun_cmdline_attaches(CMDLINE("srun\0x--jobid\0true\0")), 0);
  /* A last word without its NUL (cut short) still counts. */
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(CMDLINE("srun\0--jobid")), 1);
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(CMDLINE("srun\0--jo")), 0);
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(CMDLINE("")), 0);
  ck_assert_int_eq(hcgp_srun_cmdline_attaches(NULL, 0), 1);
}
END_TEST

/* Grids against two components [0, first) and [first, world). */
static int het_check(const char *text, uint32_t first, uint32_t world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = (int)world;
  hcg_layout *layout = NULL;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(text, strlen(text), &cfg, &layout, &err),
                   0);
  int rc = hcgp_het_check(layout, first, world, &err);
  hcg_layout_free(layout);
  return rc;
}

START_TEST(het_components) {
  /* Inside one component each, or the whole step. */
  ck_assert_int_eq(het_check("vision:tp=2,dp=2; llm:tp=2,dp=*", 4, 8), 0);
  ck_assert_int_eq(het_check("tp=2,dp=*", 4, 8), 0);
  ck_assert_int_eq(het_check("a:tp=2; b:tp=2; llm:tp=2,dp=*", 4, 10), 0);
  /* Across the boundary. */
  ck_assert_int_eq(het_check("vision:tp=2,dp=3; llm:tp=2", 4, 8), HCG_ELAYOUT);
  ck_assert_int_eq(het_check("vision:tp=2; llm:tp=2,dp=*", 4, 8), HCG_ELAYOUT);
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcgp_het_check(NULL, 4, 8, &err), HCG_EINVAL);

  char *v = NULL;
  ck_assert_int_eq(hcgp_het_encode("tp=2", 4, &v, &err), 0);
  ck_assert_str_eq(v, "hcg1:het:tp=2");
  free(v);
  ck_assert_int_eq(hcgp_het_encode("tp\0=2", 5, &v, &err), HCG_ELIMIT);
  ck_assert_ptr_null(v);
}
END_TEST

TCase *domains_tcase(void); /* test_domains.c */

static Suite *suite(void) {
  Suite *s = suite_create("spank");
  TCase *a = tcase_create("args");
  tcase_add_test(a, args_defaults);
  tcase_add_test(a, args_valid);
  tcase_add_test(a, args_bad);
  tcase_add_test(a, args_placement);
  tcase_add_test(a, node_check_speaks_once);
  tcase_add_test(a, args_long_word_is_cut);
  tcase_add_test(a, args_duplicates_and_counts);
  tcase_add_test(a, args_names);
  suite_add_tcase(s, a);
  TCase *f = tcase_create("forward");
  tcase_add_test(f, forward_round_trip);
  tcase_add_test(f, forward_other_step);
  tcase_add_test(f, forward_malformed);
  tcase_add_test(f, forward_too_long);
  tcase_add_test(f, heterogeneous_steps);
  tcase_add_test(f, srun_command_line_naming_a_job);
  tcase_add_test(f, het_components);
  suite_add_tcase(s, f);
  TCase *t = tcase_create("task");
  tcase_add_test(t, task_env_matches_core);
  tcase_add_test(t, task_env_language_is_forwarded);
  tcase_add_test(t, task_env_record);
  tcase_add_test(t, task_env_plan);
  tcase_add_test(t, task_env_plan_share);
  tcase_add_test(t, grid_shared_variables);
  tcase_add_test(t, task_env_errors);
  tcase_add_test(t, task_env_site_policy);
  tcase_add_test(t, env_ownership);
  suite_add_tcase(s, t);
  suite_add_tcase(s, domains_tcase());
  return s;
}

int main(void) {
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
