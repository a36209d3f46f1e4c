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

Suite *megatron_suite(void) {
  Suite *s = suite_create("megatron");
  TCase *tc = tcase_create("arguments");
  tcase_add_test(tc, megatron_table);
  tcase_add_test(tc, megatron_layouts);
  tcase_add_test(tc, megatron_errors);
  tcase_add_test(tc, megatron_warnings);
  suite_add_tcase(s, tc);
  return s;
}
