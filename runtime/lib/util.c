/*
 * util.c - error messages, strict integers and hashing for the runtime.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt.h"

void hcgrt_prefix(hcg_error *err, const char *fmt, ...) {
  if (!err)
    return;
  char head[HCG_ERROR_MAX];
  char tail[HCG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(tail, err->message, sizeof tail);
  tail[sizeof tail - 1] = '\0';
  size_t h = strlen(head), t = strlen(tail), cap = sizeof err->message - 1;
  if (h > cap)
    h = cap;
  if (t > cap - h)
    t = cap - h;
  memcpy(err->message, head, h);
  memcpy(err->message + h, tail, t);
  err->message[h + t] = '\0';
}

int hcgrt_parse_int(const char *s, long long lo, long long hi, long long *out) {
  if (!s || !*s)
    return -1;
  long long v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return -1;
    if (v > (hi - (*p - '0')) / 10)
      return -1; /* beyond hi, and never overflows */
    v = v * 10 + (*p - '0');
  }
  if (v < lo || v > hi)
    return -1;
  *out = v;
  return 0;
}

uint64_t hcgrt_hash64(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data;
  uint64_t h = 0xcbf29ce484222325ull ^ (seed * 0x9e3779b97f4a7c15ull);
  for (size_t i = 0; i < len; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  /* A final mix so that near keys differ in every digit. */
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}
