/* helpers.h - shared assertions for the core's unit tests. */
#ifndef HCG_TEST_HELPERS_H
#define HCG_TEST_HELPERS_H

#include <check.h>
#include <stddef.h>

#include "hcg.h"

/* Parses text for `world` ranks (0: derive), failing the test on error. */
hcg_layout *must_parse(const char *text, int world);
hcg_layout *must_parse_lang(const char *text, int world, const char *language);

/* The canonical enumeration of spec as "[[0,1],[2,3]]" (malloc'd). */
char *enum_string(const hcg_layout *L, const hcg_request *req);

/* Asserts that spec enumerates as expected in layout text. */
#define expect_enum(text, world, spec, expected)                               \
  expect_enum_at(__FILE__, __LINE__, text, world, spec, expected)
void expect_enum_at(const char *file, int line, const char *text, int world,
                    const char *spec, const char *expected);

/* Asserts that parsing fails with code, a message containing `needle`, and
 * (if column > 0) that column; returns nothing. */
#define expect_error(text, world, code, column, needle)                        \
  expect_error_at(__FILE__, __LINE__, text, world, code, column, needle)
void expect_error_at(const char *file, int line, const char *text, int world,
                     int code, int column, const char *needle);

/* The key of a spec. */
void expect_key(const hcg_layout *L, const char *spec, const char *key);

#endif
