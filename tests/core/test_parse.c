/* test_parse.c - the layout language: grammar, comments, offsets, '*',
 * canonical printing, files, limits, and every syntax error with its
 * column and caret. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "suites.h"

static void expect_canonical(const char *text, int world,
                             const char *canonical) {
  hcg_layout *L = must_parse(text, world);
  ck_assert_msg(strcmp(hcg_layout_text(L), canonical) == 0,
                "'%s': canonical '%s', expected '%s'", text, hcg_layout_text(L),
                canonical);
  /* The canonical text reads back to itself. */
  hcg_layout *again = must_parse(canonical, world);
  ck_assert_str_eq(hcg_layout_text(again), canonical);
  hcg_layout_free(again);
  hcg_layout_free(L);
}

START_TEST(grammar_accepts) {
  expect_canonical("tp=2,cp=2,pp=4,dp=*", 32, "world@0:tp=2,cp=2,pp=4,dp=2");
  expect_canonical("  tp = 2 , dp = 4  ", 8, "world@0:tp=2,dp=4");
  expect_canonical("llm:tp=2,cp=1,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,"
                   "expt_dp=*,pp",
                   16,
                   "llm@0:tp=2,cp=1,dp=4,pp=2;"
                   "llm/expert:expt_tp=1,ep=4,expt_dp=2,pp");
  expect_canonical("vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*", 24,
                   "vision@0:tp=4,dp=2;llm@8:tp=2,cp=2,pp=2,dp=2");
  expect_canonical("vision@0:tp=2,dp=4; llm@0:tp=4,dp=2", 8,
                   "vision@0:tp=2,dp=4;llm@0:tp=4,dp=2");
  /* Newlines separate items, comments run to the end of a line, blank
   * lines and a trailing ';' are fine, a ',' continues on the next line. */
  expect_canonical("# a MIMO layout\n"
                   "vision: tp=4, dp=2   # encoder\n"
                   "\n"
                   "llm: tp=2, cp=2,\n"
                   "     pp=2, dp=*;\n"
                   "llm/expert: ep=4, pp ; \r\n",
                   16,
                   "vision@0:tp=4,dp=2;llm@8:tp=2,cp=2,pp=2,dp=1;"
                   "llm/expert:ep=4,pp");
  /* Views may come after other grids; canonical puts them after theirs. */
  expect_canonical("llm:tp=2,pp=2; enc@4:tp=4; llm/e:ep=2,pp", 8,
                   "llm@0:tp=2,pp=2;llm/e:ep=2,pp;enc@4:tp=4");
  /* An unnamed grid may carry views as 'world'. */
  expect_canonical("tp=2,pp=2; world/e:ep=2,pp", 4,
                   "world@0:tp=2,pp=2;world/e:ep=2,pp");
  /* Leading zeros, a 32-character name. */
  expect_canonical("tp=02", 2, "world@0:tp=2");
  expect_canonical("abcdefghijklmnopqrstuvwxyz_01234=1", 1,
                   "world@0:abcdefghijklmnopqrstuvwxyz_01234=1");
  /* No world: derived from the layout when nothing is inferred. */
  expect_canonical("vision:tp=4; llm:tp=4", 0, "vision@0:tp=4;llm@4:tp=4");
}
END_TEST

START_TEST(syntax_errors) {
  expect_error("llm:tp=2,pp=2,cp=0", 8, HCG_ESYNTAX, 18,
               "layout: column 18: size of 'cp' must be a positive integer, "
               "got '0'\n  llm:tp=2,pp=2,cp=0\n                   ^");
  expect_error("", 8, HCG_ESYNTAX, 1, "the layout is empty");
  expect_error(" ; # nothing\n", 8, HCG_ESYNTAX, 0, "the layout is empty");
  expect_error("tp=-1", 8, HCG_ESYNTAX, 4,
               "size of 'tp' must be a positive integer or '*', got '-1'");
  expect_error("tp=x", 8, HCG_ESYNTAX, 4, "got 'x'");
  expect_error("tp=2x", 8, HCG_ESYNTAX, 4, "got '2x'");
  expect_error("tp=", 8, HCG_ESYNTAX, 4, "got ''");
  expect_error("tp=99999999999", 8, HCG_ELIMIT, 4,
               "size of 'tp' is 99999999999, larger than the limit 2147483647");
  expect_error("tp=2,dp", 8, HCG_ESYNTAX, 6,
               "dim 'dp' of grid 'world' needs a size: write dp=SIZE");
  expect_error("TP=2", 8, HCG_ESYNTAX, 1,
               "grid or dim name 'TP' must start with a lower-case letter");
  expect_error("tP=2", 8, HCG_ESYNTAX, 2,
               "may hold only lower-case letters, digits and '_'");
  expect_error("2tp=2", 8, HCG_ESYNTAX, 1, "must start with a lower-case");
  expect_error("tp=2,,dp=4", 8, HCG_ESYNTAX, 6, "expected a dim name, got ','");
  expect_error("tp=2 dp=4", 8, HCG_ESYNTAX, 6,
               "expected ',' or the end of the item (';' or a new line), got "
               "'d'");
  expect_error("tp!2", 8, HCG_ESYNTAX, 3,
               "expected '=' after dim 'tp', got "
               "'!'");
  expect_error("llm:tp=2;\nllm:dp=2", 4, HCG_ELAYOUT, 1,
               "layout: line 2, column 1: grid 'llm' is defined twice");
  expect_error("tp=2; dp=2", 4, HCG_ESYNTAX, 7,
               "an unnamed grid must be the only grid");
  expect_error("a:tp=2; dp=2", 4, HCG_ESYNTAX, 9,
               "an unnamed grid must be the only grid");
  expect_error("llm@x:tp=2", 2, HCG_ESYNTAX, 5,
               "offset of grid 'llm' must be a non-negative integer, got 'x'");
  expect_error("llm@2 tp=2", 4, HCG_ESYNTAX, 7,
               "expected ':' after the grid's offset, got 't'");
  expect_error("llm/e ep=2", 4, HCG_ESYNTAX, 7,
               "expected ':' before the view's dims");
  expect_error("llm:tp=*,dp=*", 4, HCG_ESYNTAX, 13,
               "grid 'llm' may infer one size with '*', but both 'tp' and 'dp' "
               "use it");
  expect_error("llm:tp=2,tp=2", 4, HCG_ELAYOUT, 10,
               "grid 'llm' names dim 'tp' twice");
  expect_error("llm:tp=2\x01", 2, HCG_ESYNTAX, 8, "got '2?'");
  expect_error("llm:tp=2;\x01", 2, HCG_ESYNTAX, 10, "got byte 0x01");
  expect_error("llm:tp=2,d\xc3\xa9=1", 2, HCG_ESYNTAX, 11,
               "expected '=' after dim 'd'");
  /* A long name: limit. */
  expect_error("abcdefghijklmnopqrstuvwxyz_0123456=1", 1, HCG_ELIMIT, 1,
               "is 34 characters long; the limit is 32");
  /* Products past 2^31-1. */
  expect_error("a=65536,b=65536", 0, HCG_ELIMIT, 1,
               "the dims of grid 'world' multiply to more than 2147483647");
  expect_error("a:x=2147483647; llm:y=1", 0, HCG_ELIMIT, 17,
               "grid 'llm' would start at rank 2147483647, past the limit");
  /* A zero or negative world from the API. */
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = -3;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse("tp=2", 4, &cfg, &L, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_layout_parse(NULL, 4, NULL, &L, NULL), HCG_EINVAL);
  /* Config structs are read by their size: garbage is refused, a newer
   * caller's longer struct is read up to the fields this library knows. */
  cfg = (hcg_layout_config)HCG_LAYOUT_CONFIG_INIT;
  cfg.size = 7;
  ck_assert_int_eq(hcg_layout_parse("tp=2", 4, &cfg, &L, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_layout_config.size is 7"));
  cfg.size = HCG_CONFIG_MAX_SIZE + 1;
  ck_assert_int_eq(hcg_layout_load("tp=2", &cfg, &L, &err), HCG_EINVAL);
  cfg.size = sizeof cfg;
  cfg.version = 0;
  ck_assert_int_eq(hcg_layout_load("@x", &cfg, &L, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "INIT macro"));
  struct {
    hcg_layout_config c;
    int later_field;
  } newer = {HCG_LAYOUT_CONFIG_INIT, 5};
  newer.c.size = sizeof newer;
  newer.c.world_size = 8;
  ck_assert_int_eq(hcg_layout_parse("tp=2,dp=*", 9, &newer.c, &L, &err), 0);
  ck_assert_int_eq(hcg_layout_world_size(L), 8);
  hcg_layout_free(L);
  /* A caller of the first release (no flags field) is still read; flags
   * no HCG_LAYOUT_* names are refused. */
  cfg = (hcg_layout_config)HCG_LAYOUT_CONFIG_INIT;
  cfg.size = offsetof(hcg_layout_config, flags);
  cfg.flags = 77; /* past the caller's size: not read */
  ck_assert_int_eq(hcg_layout_parse("tp=2", 4, &cfg, &L, &err), 0);
  hcg_layout_free(L);
  cfg.size = sizeof cfg;
  ck_assert_int_eq(hcg_layout_parse("tp=2", 4, &cfg, &L, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "hcg_layout_config.flags 0x4d"));
}
END_TEST

/* A site's language module (HCG_LAYOUT_SITE_LANGUAGE) names one grid among
 * several; a one-grid layout's only grid is its language module. Without
 * the flag the name is strict. */
START_TEST(site_language) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  cfg.world_size = 8;
  cfg.language = "lm";
  ck_assert_int_eq(hcg_layout_parse("vision:tp=8", 11, &cfg, &L, &err),
                   HCG_ELAYOUT);
  ck_assert_ptr_nonnull(strstr(err.message, "language module 'lm'"));
  cfg.flags = HCG_LAYOUT_SITE_LANGUAGE;
  ck_assert_int_eq(hcg_layout_parse("vision:tp=8", 11, &cfg, &L, &err), 0);
  ck_assert_int_eq(hcg_layout_language(L), 0);
  hcg_layout_free(L);
  /* Among several grids it is as strict as without the flag. */
  const char *two = "vision:tp=4; llm:tp=4";
  ck_assert_int_eq(hcg_layout_parse(two, strlen(two), &cfg, &L, &err),
                   HCG_ELAYOUT);
  ck_assert_ptr_nonnull(strstr(err.message, "language module 'lm'"));
  cfg.language = "vision";
  ck_assert_int_eq(hcg_layout_parse(two, strlen(two), &cfg, &L, &err), 0);
  ck_assert_int_eq(hcg_layout_language(L), 0);
  hcg_layout_free(L);
  /* A one-grid layout's other errors are the same with the flag. */
  cfg.language = "lm";
  ck_assert_int_eq(hcg_layout_parse("vision:tp=3", 11, &cfg, &L, &err),
                   HCG_ELAYOUT);
  ck_assert_ptr_null(strstr(err.message, "language module"));
}
END_TEST

/* Errors in long lines show a window around the column with the caret. */
START_TEST(long_line_excerpt) {
  char text[600];
  strcpy(text, "llm:");
  for (int i = 0; i < 15; i++) {
    char dim[48];
    snprintf(dim, sizeof dim, "d%02d_%s=1,", i, "abcdefghijklmnopqrstuvwxy");
    strcat(text, dim);
  }
  strcat(text, "cp=0");
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = 1;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(text, strlen(text), &cfg, &L, &err),
                   HCG_ESYNTAX);
  ck_assert_int_eq(err.column, (int)strlen(text));
  /* line 2 is "  ...<window>", line 3 has the caret under the '0'. */
  char *l2 = strchr(err.message, '\n') + 1;
  char *l3 = strchr(l2, '\n') + 1;
  ck_assert(strncmp(l2, "  ...", 5) == 0);
  size_t caret = (size_t)(strchr(l3, '^') - l3);
  ck_assert_int_eq(l2[caret], '0');
  ck_assert(strlen(l2) - strlen(l3) < 100);
}
END_TEST

START_TEST(limits) {
  /* Text length: the default bound and a lower one from the config. */
  size_t n = HCG_MAX_LAYOUT_BYTES + 1;
  char *big = malloc(n + 1);
  memset(big, ' ', n);
  memcpy(big, "tp=2", 4);
  big[n] = '\0';
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(big, n, NULL, &L, &err), HCG_ELIMIT);
  ck_assert_str_eq(err.message,
                   "layout: the layout is 65537 bytes; the limit is 65536");
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.max_bytes = 100;
  ck_assert_int_eq(hcg_layout_parse(big, 101, &cfg, &L, &err), HCG_ELIMIT);
  ck_assert_ptr_nonnull(strstr(err.message, "the limit is 100"));
  ck_assert_int_eq(hcg_layout_parse(big, 100, &cfg, &L, &err), HCG_OK);
  hcg_layout_free(L);
  free(big);

  /* Grids and dims. */
  char text[2048] = "";
  for (int g = 0; g <= HCG_MAX_GRIDS; g++) {
    char item[32];
    snprintf(item, sizeof item, "%sg%d:a=1", g ? ";" : "", g);
    strcat(text, item);
  }
  expect_error(text, 0, HCG_ELIMIT, 0, "a layout may have at most 16 grids");
  strcpy(text, "g:");
  for (int d = 0; d <= HCG_MAX_DIMS; d++) {
    char item[32];
    snprintf(item, sizeof item, "%sd%d=1", d ? "," : "", d);
    strcat(text, item);
  }
  expect_error(text, 0, HCG_ELIMIT, 0, "grid 'g' has more than 16 dims");
  /* A NUL byte inside the given length. */
  ck_assert_int_eq(hcg_layout_parse("tp=2\0x", 6, NULL, &L, &err), HCG_ESYNTAX);
  ck_assert_int_eq(err.column, 5);
}
END_TEST

static char *write_temp(const char *content) {
  char *path = strdup("/tmp/hcg-test-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, content, strlen(content)),
                   (ssize_t)strlen(content));
  close(fd);
  return path;
}

START_TEST(layout_files) {
  char *path = write_temp("# model\nvision: tp=4, dp=2\nllm: tp=2, dp=*\n");
  char arg[64];
  snprintf(arg, sizeof arg, "@%s", path);
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = 16;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_load(arg, &cfg, &L, &err), HCG_OK);
  ck_assert_str_eq(hcg_layout_text(L), "vision@0:tp=4,dp=2;llm@8:tp=2,dp=4");
  hcg_layout_free(L);
  unlink(path);
  free(path);

  /* Errors in files name the file and the line. */
  path = write_temp("vision: tp=4\nllm: tp=2, dp=0\n");
  snprintf(arg, sizeof arg, "@%s", path);
  ck_assert_int_eq(hcg_layout_load(arg, &cfg, &L, &err), HCG_ESYNTAX);
  char want[128];
  snprintf(want, sizeof want, "layout '%s': line 2, column 15: size of 'dp'",
           path);
  ck_assert_msg(strstr(err.message, want), "%s", err.message);
  ck_assert_int_eq(err.line, 2);

  /* Too large for the configured bound. */
  cfg.max_bytes = 10;
  ck_assert_int_eq(hcg_layout_load(arg, &cfg, &L, &err), HCG_ELIMIT);
  ck_assert_ptr_nonnull(strstr(err.message, "bytes; the limit is 10"));
  unlink(path);
  free(path);

  /* A source name given by the caller, and an error at the end of a text
   * ending in a newline: on the last line, not on an empty one after it. */
  hcg_layout_config named = HCG_LAYOUT_CONFIG_INIT;
  named.source_name = "model.hcg";
  const char *t = "vision: tp=4\nllm: tp=2,\n";
  ck_assert_int_eq(hcg_layout_parse(t, strlen(t), &named, &L, &err),
                   HCG_ESYNTAX);
  ck_assert_msg(strstr(err.message, "layout 'model.hcg': line 2, column 11: "
                                    "expected a dim name, got the end of "
                                    "the layout\n  llm: tp=2,\n"),
                "%s", err.message);
  ck_assert_int_eq(err.line, 2);

  ck_assert_int_eq(hcg_layout_load("@/nonexistent/layout", &cfg, &L, &err),
                   HCG_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err.message, "cannot open layout file "
                                            "'/nonexistent/layout'"));
  ck_assert_int_eq(hcg_layout_load("@/tmp", &cfg, &L, &err), HCG_EIO);
  ck_assert_ptr_nonnull(strstr(err.message, "is not a regular file"));
  ck_assert_int_eq(hcg_layout_load("@", &cfg, &L, &err), HCG_ENOTFOUND);
  char *text;
  ck_assert_int_eq(hcg_layout_read_file("/dev/zero", 0, &text, NULL, &err),
                   HCG_EIO);
  ck_assert_ptr_null(text);
}
END_TEST

START_TEST(strerror_and_version) {
  for (int c = 0; c < HCG_STATUS_COUNT; c++)
    ck_assert(strcmp(hcg_strerror(c), "unknown hcg status") != 0);
  ck_assert_str_eq(hcg_strerror(-1), "unknown hcg status");
  ck_assert_str_eq(hcg_strerror(HCG_STATUS_COUNT), "unknown hcg status");
  ck_assert_str_eq(hcg_strerror(HCG_OK), "success");
  ck_assert_str_eq(hcg_version(), "0.1.0");
}
END_TEST

/* Specs for hcg enum. */
START_TEST(request_specs) {
  hcg_layout *L =
      must_parse("vision:tp=4,dp=2; llm:tp=2,dp=2,pp=2; llm/e:ep=4,pp", 16);
  hcg_request req;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_request_parse(L, "tp", &req, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "must name its grid"));
  ck_assert_int_eq(hcg_request_parse(L, "nope:tp", &req, &err), HCG_ENOTFOUND);
  ck_assert_ptr_nonnull(
      strstr(err.message, "no grid named 'nope' (grids: vision, llm)"));
  ck_assert_int_eq(hcg_request_parse(L, "llm/x:ep", &req, &err), HCG_ENOTFOUND);
  ck_assert_ptr_nonnull(
      strstr(err.message, "grid 'llm' has no view named 'x' (views: base, e)"));
  ck_assert_int_eq(hcg_request_parse(L, "llm:ep", &req, &err), HCG_ENOTFOUND);
  ck_assert_ptr_nonnull(
      strstr(err.message, "grid 'llm' has no dim 'ep' (its dims: tp, dp, pp)"));
  ck_assert_int_eq(hcg_request_parse(L, "llm/e:tp", &req, &err), HCG_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err.message, "view 'llm/e' has no dim 'tp'"));
  ck_assert_int_eq(hcg_request_parse(L, "llm:tp,tp", &req, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "named twice"));
  ck_assert_int_eq(hcg_request_parse(L, "llm:tp,", &req, &err), HCG_EINVAL);
  ck_assert_int_eq(hcg_request_parse(L, "llm: tp , dp", &req, &err), HCG_OK);
  ck_assert_int_eq(hcg_request_num_groups(L, &req), 2);
  /* Every key is a spec of the same groups. */
  const char *specs[] = {"llm:tp,pp",   "llm/e:ep", "llm/e:pp",
                         "llm/e:ep,pp", "llm:",     "vision:dp,tp"};
  for (int i = 0; i < 6; i++) {
    hcg_request a, b;
    char key[HCG_KEY_MAX];
    ck_assert_int_eq(hcg_request_parse(L, specs[i], &a, &err), HCG_OK);
    ck_assert_int_eq(hcg_request_key(L, &a, key, sizeof key), HCG_OK);
    ck_assert_msg(hcg_request_parse(L, key, &b, &err) == HCG_OK, "%s: %s", key,
                  err.message);
    ck_assert(memcmp(&a, &b, sizeof a) == 0);
  }
  ck_assert_int_eq(hcg_request_parse(L, "llm:tp-", &req, &err), HCG_EINVAL);
  /* An empty spec, or quotes typed as one: said so, never "no dim ''''". */
  ck_assert_int_eq(hcg_request_parse(L, "", &req, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "the group spec is empty; with "
                                            "several grids name one, e.g. "
                                            "'llm:'"));
  ck_assert_int_eq(hcg_request_parse(L, "llm:''", &req, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "spec \"llm:''\": \"''\" is not "
                                            "a dim name"));
  ck_assert_ptr_null(strstr(err.message, "''''"));
  const char *empty[] = {""};
  ck_assert_int_eq(hcg_request_make(L, 1, 0, empty, 1, &req, &err), HCG_EINVAL);
  ck_assert_ptr_nonnull(strstr(err.message, "an empty dim name"));
  hcg_layout_free(L);
  L = must_parse("tp=2,dp=*", 4);
  ck_assert_int_eq(hcg_request_parse(L, "''", &req, &err), HCG_EINVAL);
  ck_assert_ptr_null(strstr(err.message, "''''"));
  ck_assert_int_eq(hcg_request_parse(L, "", &req, &err), HCG_OK);
  ck_assert_int_eq(hcg_request_group_size(L, &req), 1);
  hcg_layout_free(L);
}
END_TEST

Suite *parse_suite(void) {
  Suite *s = suite_create("parse");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, grammar_accepts);
  tcase_add_test(tc, syntax_errors);
  tcase_add_test(tc, long_line_excerpt);
  tcase_add_test(tc, site_language);
  tcase_add_test(tc, limits);
  tcase_add_test(tc, layout_files);
  tcase_add_test(tc, strerror_and_version);
  tcase_add_test(tc, request_specs);
  suite_add_tcase(s, tc);
  return s;
}
