/* helpers.c - shared assertions for the core's unit tests. */
#include "helpers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hcg_layout *must_parse_lang(const char *text, int world, const char *language) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  cfg.language = language;
  hcg_layout *L = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_parse(text, strlen(text), &cfg, &L, &err);
  ck_assert_msg(rc == HCG_OK, "parse of '%s' (world %d) failed: %s", text,
                world, err.message);
  return L;
}

hcg_layout *must_parse(const char *text, int world) {
  return must_parse_lang(text, world, NULL);
}

char *enum_string(const hcg_layout *L, const hcg_request *req) {
  size_t cap = 64, len = 0;
  char *s = malloc(cap);
  ck_assert_ptr_nonnull(s);
#define PUT(...)                                                               \
  do {                                                                         \
    int n_ = snprintf(NULL, 0, __VA_ARGS__);                                   \
    while (len + (size_t)n_ + 1 > cap) {                                       \
      cap *= 2;                                                                \
      s = realloc(s, cap);                                                     \
      ck_assert_ptr_nonnull(s);                                                \
    }                                                                          \
    snprintf(s + len, cap - len, __VA_ARGS__);                                 \
    len += (size_t)n_;                                                         \
  } while (0)
  PUT("[");
  int n = hcg_request_num_groups(L, req);
  for (int o = 0; o < n; o++) {
    hcg_group g;
    ck_assert_int_eq(hcg_group_at(L, req, o, &g), HCG_OK);
    PUT("%s[", o ? "," : "");
    for (int i = 0; i < g.size; i++)
      PUT("%s%d", i ? "," : "", hcg_group_member(L, &g, i));
    PUT("]");
  }
  PUT("]");
#undef PUT
  return s;
}

void expect_enum_at(const char *file, int line, const char *text, int world,
                    const char *spec, const char *expected) {
  hcg_layout *L = must_parse(text, world);
  hcg_request req;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_request_parse(L, spec, &req, &err);
  ck_assert_msg(rc == HCG_OK, "%s:%d: spec '%s': %s", file, line, spec,
                err.message);
  char *got = enum_string(L, &req);
  ck_assert_msg(strcmp(got, expected) == 0,
                "%s:%d: '%s' -n %d, %s:\n  got      %s\n  expected %s", file,
                line, text, world, spec, got, expected);
  free(got);
  hcg_layout_free(L);
}

void expect_error_at(const char *file, int line, const char *text, int world,
                     int code, int column, const char *needle) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_layout *L = (hcg_layout *)1;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_parse(text, strlen(text), &cfg, &L, &err);
  ck_assert_msg(rc == code,
                "%s:%d: '%s' (world %d): rc %d (%s), expected %d; %s", file,
                line, text, world, rc, hcg_strerror(rc), code, err.message);
  ck_assert_msg(L == NULL, "%s:%d: layout not NULL on error", file, line);
  ck_assert_int_eq(err.code, code);
  ck_assert_msg(strstr(err.message, needle) != NULL,
                "%s:%d: message of '%s' lacks '%s':\n%s", file, line, text,
                needle, err.message);
  if (column > 0) {
    ck_assert_msg(err.column == column,
                  "%s:%d: '%s': column %d, expected %d:\n%s", file, line, text,
                  err.column, column, err.message);
    /* The caret sits under the column: last line is 2 + (column-1) spaces
     * then '^' (for lines short enough not to be windowed). */
    const char *caret = strrchr(err.message, '\n');
    ck_assert_ptr_nonnull(caret);
    if (strlen(text) < 70)
      ck_assert_msg((int)(strchr(caret, '^') - caret - 1) == 2 + column - 1,
                    "%s:%d: caret misplaced:\n%s", file, line, err.message);
  }
}

void expect_key(const hcg_layout *L, const char *spec, const char *key) {
  hcg_request req;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_msg(hcg_request_parse(L, spec, &req, &err) == HCG_OK, "%s",
                err.message);
  char buf[HCG_KEY_MAX];
  ck_assert_int_eq(hcg_request_key(L, &req, buf, sizeof buf), HCG_OK);
  ck_assert_str_eq(buf, key);
}
