/*
 * fuzz.h - what the fuzz targets share: CHECK, an invariant that aborts
 * (so libFuzzer keeps the input) naming the failed condition.
 */
#ifndef HCG_FUZZ_H
#define HCG_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__,          \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

/* An input "<world>\n<text>" (buf NUL-terminated, size bytes before the
 * NUL): the text, with *world set from a first line that is a number in
 * [1, HCG_MAX_WORLD]; otherwise all of buf, *world left as it is. */
static inline char *fuzz_world_prefix(char *buf, size_t size, int *world) {
  char *nl = memchr(buf, '\n', size);
  if (!nl || nl == buf || nl - buf > 10)
    return buf;
  char *end;
  long long w = strtoll(buf, &end, 10);
  if (end != nl || w <= 0 || w > HCG_MAX_WORLD)
    return buf;
  *world = (int)w;
  return nl + 1;
}

#endif
