/* test_megatron.c - the library's model of Megatron's arguments
 * (hcg_megatron.h): its table, and what hcg_megatron_layout gives and
 * refuses beside the command's own tests (tests/cli/megatron.bats). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "suites.h"

struct heard {
  char text[2048];
  int count;
};

static void hear(void *arg, const char *message) {
  struct heard *h = arg;
  size_t len = strlen(h->text);
  snprintf(h->text + len, sizeof h->text - len, "%s\n", message);
  h->count++;
}

/* hcg_megatron_layout for world ranks: its status, *err, and the layout's
 * canonical text into text (when it succeeds). */
static int layout_of(const char *args, int world, struct heard *h, char *text,
                     size_t cap, hcg_error *err) {
  hcg_megatron_config cfg = HCG_MEGATRON_CONFIG_INIT;
  cfg.world_size = world;
  if (h) {
    cfg.warn = hear;
    cfg.warn_arg = h;
  }
  static int sentinel;
  hcg_layout *L = (hcg_layout *)(void *)&sentinel; /* reset on failure */
  int rc = hcg_megatron_layout(args, &cfg, &L, err);
  if (rc) {
    ck_assert_ptr_null(L);
    return rc;
  }
  snprintf(text, cap, "%s", hcg_layout_text(L));
  hcg_layout_free(L);
  return rc;
}

START_TEST(megatron_table) {
  int n = hcg_megatron_arg_count();
  ck_assert_int_gt(n, 20);
  ck_assert_ptr_null(hcg_megatron_arg_at(-1));
  ck_assert_ptr_null(hcg_megatron_arg_at(n));
  int options = 0, mimo = 0, derived = 0;
  for (int i = 0; i < n; i++) {
    const hcg_megatron_arg *a = hcg_megatron_arg_at(i);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(a->dest);
    ck_assert_ptr_nonnull(a->dim);
    /* An option is its dest with dashes, and only derived values lack one. */
    ck_assert_int_eq(a->option == NULL, a->kind == HCG_MEGATRON_DERIVED);
    if (a->option) {
      char want[96];
      snprintf(want, sizeof want, "--%s", a->dest);
      for (char *c = want; *c; c++)
        *c = *c == '_' ? '-' : *c;
      ck_assert_str_eq(a->option, want);
      options++;
    }
    mimo += a->scope == HCG_MEGATRON_MIMO;
    derived += a->kind == HCG_MEGATRON_DERIVED;
    for (int j = 0; j < i; j++)
      ck_assert_str_ne(hcg_megatron_arg_at(j)->dest, a->dest);
  }
  ck_assert_int_eq(mimo, 10); /* examples/mimo's arguments */
  ck_assert_int_eq(derived, 4);
  ck_assert_int_eq(options + derived, n);
  ck_assert_str_eq(hcg_megatron_arg_at(0)->dest, "tensor_model_parallel_size");
  ck_assert_str_eq(hcg_megatron_arg_at(0)->dim, "tp");
}
END_TEST

START_TEST(megatron_layouts) {
  char text[1024];
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(layout_of("--num-layers 4 --tensor-model-parallel-size 2 "
                             "--pipeline-model-parallel-size=2",
                             8, NULL, text, sizeof text, &err),
                   HCG_OK);
  ck_assert_str_eq(text, "world@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=2;"
                         "world/expert:expt_tp=2,ep=1,expt_gtp_remat=1,"
                         "expt_dp=2,pp");
  /* The encoder's name is the config's. */
  hcg_megatron_config cfg = HCG_MEGATRON_CONFIG_INIT;
  cfg.world_size = 8;
  cfg.encoder_name = "vision";
  hcg_layout *L;
  ck_assert_int_eq(
      hcg_megatron_layout("--encoder-tp 2 --llm-offset 4", &cfg, &L, &err),
      HCG_OK);
  ck_assert_str_eq(hcg_grid_name(L, 0), "vision");
  ck_assert_str_eq(hcg_grid_name(L, 1), "language");
  hcg_layout_free(L);
  /* A bad encoder name is the parser's refusal. */
  cfg.encoder_name = "Vision";
  ck_assert_int_eq(hcg_megatron_layout("--encoder-tp 2", &cfg, &L, &err),
                   HCG_ESYNTAX);
  ck_assert_ptr_null(L);
  ck_assert_msg(
      !strncmp(err.message, "the layout of these arguments is refused: ", 42),
      "%s", err.message);
}
END_TEST

START_TEST(megatron_errors) {
  char text[1024];
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(layout_of("--bf16 --tensor-model-parallel-size two", 8, NULL,
                             text, sizeof text, &err),
                   HCG_ESYNTAX);
  ck_assert_int_eq(err.column, 37);
  ck_assert_int_eq(err.line, 1);
  ck_assert_str_eq(err.message,
                   "megatron arguments: column 37: "
                   "--tensor-model-parallel-size wants an integer, got 'two'\n"
                   "  --bf16 --tensor-model-parallel-size two\n"
                   "                                      ^");
  ck_assert_int_eq(layout_of("--tensor-model-parallel-size 3", 8, NULL, text,
                             sizeof text, &err),
                   HCG_ELAYOUT);
  ck_assert_int_eq(err.column, 0);
  ck_assert_str_eq(err.message,
                   "megatron arguments: the world of 8 ranks is not divisible "
                   "by tp*gtp_remat*cp*pp = 3 (--tensor-model-parallel-size "
                   "3)");
  ck_assert_int_eq(layout_of("--num-distributed-optimizer-instances 2", 8, NULL,
                             text, sizeof text, &err),
                   HCG_ENOTSUP);
  /* A newline in the arguments is white space, in the excerpt too. */
  ck_assert_int_eq(layout_of("--bf16\n--context-parallel-size x", 8, NULL, text,
                             sizeof text, &err),
                   HCG_ESYNTAX);
  ck_assert_int_eq(err.column, 32);
  ck_assert_ptr_nonnull(strstr(err.message, "\n  --bf16 --context"));
  /* No error struct: the status alone. */
  ck_assert_int_eq(layout_of("--llm-tp 0", 8, NULL, text, sizeof text, NULL),
                   HCG_ESYNTAX);
  /* Bad calls. */
  hcg_megatron_config cfg = HCG_MEGATRON_CONFIG_INIT;
  hcg_layout *L;
  ck_assert_int_eq(hcg_megatron_layout("", &cfg, &L, &err), HCG_EINVAL);
  ck_assert_ptr_null(L);
  cfg.world_size = 4;
  ck_assert_int_eq(hcg_megatron_layout(NULL, &cfg, &L, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_layout("", &cfg, NULL, &err), HCG_EINVAL);
  cfg.size = 3;
  ck_assert_int_eq(hcg_megatron_layout("", &cfg, &L, &err), HCG_EINVAL);
  /* Arguments longer than 1 MiB. */
  size_t big = (1u << 20) + 2;
  char *huge = malloc(big);
  ck_assert_ptr_nonnull(huge);
  memset(huge, ' ', big - 1);
  huge[big - 1] = '\0';
  ck_assert_int_eq(layout_of(huge, 8, NULL, text, sizeof text, &err),
                   HCG_ELIMIT);
  free(huge);
}
END_TEST

START_TEST(megatron_warnings) {
  char text[1024];
  hcg_error err = HCG_ERROR_INIT;
  struct heard h = {"", 0};
  ck_assert_int_eq(layout_of("--tensor-model-parallel-size 4 --encoder-tp 2 "
                             "--hierarchical-context-parallel-sizes 2 2",
                             8, &h, text, sizeof text, &err),
                   HCG_OK);
  ck_assert_int_eq(h.count, 2);
  ck_assert_str_eq(
      h.text,
      "--hierarchical-context-parallel-sizes: hcg makes no hierarchical "
      "context-parallel groups (the layout is the same; hcg.torch gives "
      "hcp=None)\n"
      "--tensor-model-parallel-size is not used with Megatron's MIMO "
      "arguments: the language module takes --llm-tp (Megatron's MIMO "
      "example sets the former from the latter)\n");
  /* Without a callback the warnings are dropped. */
  ck_assert_int_eq(layout_of("--hierarchical-context-parallel-sizes 2", 8, NULL,
                             text, sizeof text, &err),
                   HCG_OK);
}
END_TEST

/* hcg_megatron_values of a layout, as "dest=V@grid ..." into text (empty
 * on failure); its status and *err. */
static int values_of(hcg_layout *L, char *text, size_t cap, hcg_error *err) {
  hcg_megatron_value v[64];
  int n = -1;
  int rc = hcg_megatron_values(L, v, 64, &n, err);
  text[0] = '\0';
  if (rc)
    ck_assert_int_eq(n, 0);
  ck_assert_int_le(n, hcg_megatron_arg_count());
  size_t len = 0;
  for (int i = 0; i < n && len < cap; i++) {
    const hcg_megatron_arg *a = hcg_megatron_arg_at(v[i].arg);
    ck_assert_ptr_nonnull(a);
    snprintf(text + len, cap - len, "%s%s=%d@%s", i ? " " : "", a->dest,
             v[i].value, hcg_grid_name(L, v[i].grid));
    len += strlen(text + len);
  }
  return rc;
}

/* The values of a layout text of world ranks must be want. */
static void expect_values(const char *layout, int world, const char *want) {
  char text[2048];
  hcg_error err = HCG_ERROR_INIT;
  hcg_layout *L = must_parse(layout, world);
  ck_assert_msg(values_of(L, text, sizeof text, &err) == HCG_OK, "%s: %s",
                layout, err.message);
  ck_assert_str_eq(text, want);
  hcg_layout_free(L);
}

/* hcg_megatron_values must refuse the layout with code and message. */
static void expect_refused(const char *layout, int world, const char *language,
                           int code, const char *message) {
  char text[2048];
  hcg_error err = HCG_ERROR_INIT;
  hcg_layout *L = must_parse_lang(layout, world, language);
  ck_assert_int_eq(values_of(L, text, sizeof text, &err), code);
  ck_assert_str_eq(err.message, message);
  hcg_layout_free(L);
}

START_TEST(megatron_values_one_model) {
  /* What `hcg layout --megatron "--tensor-model-parallel-size 2
   * --pipeline-model-parallel-size 2" -n 16` prints, back. */
  expect_values("world@0:tp=2,gtp_remat=1,cp=1,dp=4,pp=2;"
                "world/expert:expt_tp=2,ep=1,expt_gtp_remat=1,expt_dp=4,pp",
                16,
                "tensor_model_parallel_size=2@world "
                "pipeline_model_parallel_size=2@world "
                "context_parallel_size=1@world data_parallel_size=4@world "
                "tensor_parallel_num_weight_shards=2@world "
                "gtp_weight_remat_size=1@world world_size=16@world "
                "expert_model_parallel_size=1@world "
                "expert_tensor_parallel_size=2@world "
                "expert_tensor_parallel_num_weight_shards=2@world "
                "expert_gtp_weight_remat_size=1@world "
                "use_tp_pp_dp_mapping=0@world");
  /* No expert view: ep is 1 and the experts' sizes are left out; pp 1:
   * the order is too. Dims a grid lacks are 1; gtp_remat makes shards. */
  expect_values("m:tp=2,gtp_remat=2,cp=2,dp=*", 16,
                "tensor_model_parallel_size=2@m "
                "pipeline_model_parallel_size=1@m context_parallel_size=2@m "
                "data_parallel_size=2@m tensor_parallel_num_weight_shards=4@m "
                "gtp_weight_remat_size=2@m world_size=16@m "
                "expert_model_parallel_size=1@m");
}
END_TEST

START_TEST(megatron_values_experts_and_order) {
  /* --use-tp-pp-dp-mapping: pp before dp in both views. */
  const char *text = "world@0:tp=2,gtp_remat=1,cp=1,pp=2,dp=4;"
                     "world/expert:expt_tp=1,ep=1,expt_gtp_remat=2,pp,"
                     "expt_dp=4";
  expect_values(text, 16,
                "tensor_model_parallel_size=2@world "
                "pipeline_model_parallel_size=2@world "
                "context_parallel_size=1@world data_parallel_size=4@world "
                "tensor_parallel_num_weight_shards=2@world "
                "gtp_weight_remat_size=1@world world_size=16@world "
                "expert_model_parallel_size=1@world "
                "expert_tensor_parallel_size=1@world "
                "expert_tensor_parallel_num_weight_shards=2@world "
                "expert_gtp_weight_remat_size=2@world "
                "use_tp_pp_dp_mapping=1@world");
  hcg_layout *L = must_parse(text, 16);
  hcg_megatron_sizes s;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, 0, &s, &err), HCG_OK);
  ck_assert_int_eq(s.tp, 2);
  ck_assert_int_eq(s.gtp_remat, 1);
  ck_assert_int_eq(s.cp, 1);
  ck_assert_int_eq(s.dp, 4);
  ck_assert_int_eq(s.pp, 2);
  ck_assert_int_eq(s.expert, 1);
  ck_assert_int_eq(s.ep, 1);
  ck_assert_int_eq(s.expt_tp, 1);
  ck_assert_int_eq(s.expt_gtp_remat, 2);
  ck_assert_int_eq(s.expt_dp, 4);
  ck_assert_int_eq(s.pp_before_dp, 1);
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, 1, &s, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, -1, &s, NULL), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_grid_sizes(NULL, 0, &s, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, 0, NULL, &err), HCG_EINVAL);
  hcg_layout_free(L);
  /* pp 1 in the base, but the expert view orders its pp before expt_dp:
   * the view decides. Size-1 dims stand anywhere. */
  L = must_parse("w:cp=2,tp=1,dp=4; w/expert:ep=2,pp=2,expt_dp=2", 8);
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, 0, &s, &err), HCG_OK);
  ck_assert_int_eq(s.pp_before_dp, 1);
  ck_assert_int_eq(s.pp, 1);
  ck_assert_int_eq(s.expt_tp, 1);
  hcg_layout_free(L);
  /* Neither pp nor dp above 1: no order, no expert sizes. */
  L = must_parse("w:tp=8", 8);
  ck_assert_int_eq(hcg_megatron_grid_sizes(L, 0, &s, &err), HCG_OK);
  ck_assert_int_eq(s.pp_before_dp, -1);
  ck_assert_int_eq(s.expert, 0);
  ck_assert_int_eq(s.ep, 0);
  ck_assert_int_eq(s.dp, 1);
  hcg_layout_free(L);
}
END_TEST

START_TEST(megatron_values_mimo) {
  /* `hcg layout --megatron "--encoder-tp 2 --encoder-dp 2 --llm-offset 4"
   * -n 8`, back: the encoder's values come last. */
  expect_values(
      "encoder@0:tp=2,gtp_remat=1,cp=1,dp=2,pp=1;"
      "encoder/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp;"
      "language@4:tp=2,gtp_remat=1,cp=1,dp=2,pp=1;"
      "language/expert:expt_tp=1,ep=1,expt_gtp_remat=1,expt_dp=4,pp",
      8,
      "llm_offset=4@language llm_tp=2@language llm_cp=1@language "
      "llm_pp=1@language llm_dp=2@language llm_ep=1@language "
      "llm_only=0@language tensor_parallel_num_weight_shards=2@language "
      "gtp_weight_remat_size=1@language llm_expt_tp=1@language "
      "expert_tensor_parallel_num_weight_shards=1@language "
      "expert_gtp_weight_remat_size=1@language encoder_tp=2@encoder "
      "encoder_dp=2@encoder");
  /* The language module alone. */
  expect_values("language:tp=2,dp=2,pp=2", 8,
                "llm_offset=0@language llm_tp=2@language llm_cp=1@language "
                "llm_pp=2@language llm_dp=2@language llm_ep=1@language "
                "llm_only=1@language "
                "tensor_parallel_num_weight_shards=2@language "
                "gtp_weight_remat_size=1@language");
  /* Two encoders, or one with cp or off rank 0: no encoder arguments. */
  const char *lang = "llm_offset=0@language llm_tp=2@language "
                     "llm_cp=1@language llm_pp=1@language llm_dp=2@language "
                     "llm_ep=1@language llm_only=0@language "
                     "tensor_parallel_num_weight_shards=2@language "
                     "gtp_weight_remat_size=1@language";
  expect_values("language@0:tp=2,dp=2; a@0:tp=4; b@0:dp=4", 4, lang);
  expect_values("language@0:tp=2,dp=2; a@0:tp=2,cp=2", 4, lang);
}
END_TEST

START_TEST(megatron_values_refused) {
  expect_refused("world:tp=2,ep=4", 8, NULL, HCG_ELAYOUT,
                 "grid 'world' has dim 'ep', which Megatron does not have "
                 "there (its dims: tp, gtp_remat, cp, dp, pp)");
  expect_refused("world:dp=4,tp=2", 8, NULL, HCG_ELAYOUT,
                 "grid 'world' orders its dims dp,tp; Megatron orders them "
                 "tp,gtp_remat,cp,dp,pp (or tp,gtp_remat,cp,pp,dp with "
                 "--use-tp-pp-dp-mapping)");
  expect_refused("w:tp=2,dp=4; w/expert:tp,ep=4", 8, NULL, HCG_ELAYOUT,
                 "view 'w/expert' has dim 'tp', which Megatron does not have "
                 "there (its dims: expt_tp, ep, expt_gtp_remat, expt_dp, pp)");
  expect_refused("llm:tp=2,pp=2,dp=2; llm/expert:ep=4,pp=2", 8, NULL,
                 HCG_ELAYOUT,
                 "view 'llm/expert' does not share pp with the base; "
                 "Megatron's expert grid does");
  expect_refused("w:tp=2,dp=2,pp=2; w/expert:expt_dp=2,ep=2,pp", 8, NULL,
                 HCG_ELAYOUT,
                 "view 'w/expert' orders its dims expt_dp,ep,pp; Megatron "
                 "orders them expt_tp,ep,expt_gtp_remat,expt_dp,pp (or "
                 "expt_tp,ep,expt_gtp_remat,pp,expt_dp with "
                 "--use-tp-pp-dp-mapping)");
  expect_refused("a:tp=2,dp=2; b:tp=4", 8, "a", HCG_ELAYOUT,
                 "a layout of several grids is Megatron's MIMO topology only "
                 "with a grid named 'language' (the language module); grids: "
                 "a, b");
  expect_refused("language:tp=2,pp=2,dp=2", 8, NULL, HCG_ELAYOUT,
                 "grid 'language' orders pp before dp; Megatron's MIMO "
                 "topology orders every module tp, gtp_remat, cp, dp, pp");
  /* Each grid's refusal comes first, in layout order. */
  expect_refused("a@0:tp=2,dp=2; b@0:dp=2,tp=2", 4, "a", HCG_ELAYOUT,
                 "grid 'b' orders its dims dp,tp; Megatron orders them "
                 "tp,gtp_remat,cp,dp,pp (or tp,gtp_remat,cp,pp,dp with "
                 "--use-tp-pp-dp-mapping)");
  /* Bad calls, and too small an array. */
  hcg_layout *L = must_parse("w:tp=2,dp=4,pp=2", 16);
  hcg_megatron_value v[9];
  hcg_error err = HCG_ERROR_INIT;
  int n = -1;
  ck_assert_int_eq(hcg_megatron_values(L, v, 8, &n, &err), HCG_ERANGE);
  ck_assert_int_eq(n, 0);
  ck_assert_str_eq(err.message, "hcg_megatron_values: 8 values do not hold "
                                "what the layout determines");
  ck_assert_int_eq(hcg_megatron_values(L, v, 9, &n, &err), HCG_OK);
  ck_assert_int_eq(n, 9); /* the order too: pp and dp above 1 */
  ck_assert_int_eq(hcg_megatron_values(NULL, v, 8, &n, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_values(L, NULL, 8, &n, NULL), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_values(L, v, -1, &n, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_megatron_values(L, v, 8, NULL, &err), HCG_EINVAL);
  hcg_layout_free(L);
}
END_TEST

Suite *megatron_suite(void) {
  Suite *s = suite_create("megatron");
  TCase *tc = tcase_create("arguments");
  tcase_add_test(tc, megatron_table);
  tcase_add_test(tc, megatron_layouts);
  tcase_add_test(tc, megatron_errors);
  tcase_add_test(tc, megatron_warnings);
  tcase_add_test(tc, megatron_values_one_model);
  tcase_add_test(tc, megatron_values_experts_and_order);
  tcase_add_test(tc, megatron_values_mimo);
  tcase_add_test(tc, megatron_values_refused);
  suite_add_tcase(s, tc);
  return s;
}
