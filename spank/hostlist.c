/*
 * hostlist.c - Slurm's host lists, name by name (hostlist.h).
 */
#include <stdio.h>
#include <string.h>

#include "hostlist.h"

enum { BRACKETS_MAX = 4, NUMBER_DIGITS_MAX = 9 };

struct expand {
  hcgp_host_fn fn;
  void *arg;
  long max, count;
  char name[HCGP_NODE_NAME_MAX + 1];
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }

int hcgp_parse_digits(const char *s, size_t n, long *out) {
  if (!n || n > NUMBER_DIGITS_MAX)
    return -1;
  long v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit(s[i]))
      return -1;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return 0;
}

/* One item (no ',' outside brackets) after `used` bytes of name. */
static int expand_item(struct expand *e, size_t used, const char *s, size_t n,
                       int depth) {
  const char *open = memchr(s, '[', n);
  size_t lit = open ? (size_t)(open - s) : n;
  if (used + lit > HCGP_NODE_NAME_MAX)
    return -1;
  memcpy(e->name + used, s, lit);
  used += lit;
  if (!open) {
    if (!used)
      return -1; /* an empty name */
    e->name[used] = '\0';
    if (++e->count > e->max)
      return -1;
    return e->fn(e->arg, e->name, used);
  }
  if (depth >= BRACKETS_MAX)
    return -1;
  const char *close = memchr(open, ']', n - lit);
  if (!close || close == open + 1)
    return -1;
  const char *rest = close + 1;
  size_t nrest = n - (size_t)(rest - s);
  for (const char *p = open + 1; p < close;) {
    const char *comma = memchr(p, ',', (size_t)(close - p));
    const char *end = comma ? comma : close;
    const char *dash = memchr(p, '-', (size_t)(end - p));
    size_t wlo = (size_t)((dash ? dash : end) - p);
    long lo, hi;
    if (hcgp_parse_digits(p, wlo, &lo) ||
        (dash ? hcgp_parse_digits(dash + 1, (size_t)(end - dash - 1), &hi)
              : (hi = lo, 0)) ||
        hi < lo ||
        used + (wlo > NUMBER_DIGITS_MAX ? wlo : NUMBER_DIGITS_MAX) >
            HCGP_NODE_NAME_MAX)
      return -1;
    for (long v = lo; v <= hi; v++) {
      if (e->count >= e->max)
        return -1;
      int k =
          snprintf(e->name + used, NUMBER_DIGITS_MAX + 1, "%0*ld", (int)wlo, v);
      int rc = expand_item(e, used + (size_t)k, rest, nrest, depth + 1);
      if (rc)
        return rc;
    }
    if (!comma)
      break;
    p = comma + 1;
    if (p == close)
      return -1; /* "[1,]" */
  }
  return 0;
}

int hcgp_hostlist_each(const char *list, size_t len, long max, hcgp_host_fn fn,
                       void *arg) {
  if (!list || !fn || max < 0)
    return -1;
  struct expand e;
  e.fn = fn;
  e.arg = arg;
  e.max = max;
  e.count = 0;
  for (size_t i = 0; i < len;) {
    size_t j = i;
    int depth = 0;
    for (; j < len && (depth || list[j] != ','); j++) {
      char c = list[j];
      if (c <= ' ' || c > '~' || (c == '[' && depth) || (c == ']' && !depth))
        return -1;
      depth = c == '[' ? 1 : c == ']' ? 0 : depth;
    }
    if (depth || j == i)
      return -1;
    int rc = expand_item(&e, 0, list + i, j - i, 0);
    if (rc)
      return rc;
    if (j < len && j + 1 == len)
      return -1; /* a trailing ',' */
    i = j + 1;
  }
  return 0;
}
