/*
 * fuzz.h - what the fuzz targets share: CHECK, an invariant that aborts
 * (so libFuzzer keeps the input) naming the failed condition.
 */
#ifndef HCG_FUZZ_H
#define HCG_FUZZ_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                               \
  do {                                                                         \
    if (!(c)) {                                                                \
      fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__,          \
              __LINE__);                                                       \
      abort();                                                                 \
    }                                                                          \
  } while (0)

#endif
