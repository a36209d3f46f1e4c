/*
 * count.c - the one reading of a count that an option of hcg takes (-n,
 * --rank, --nodes, ...), shared by main.c's options and `hcg layout`'s
 * (layout.c), so that both refuse the same texts. It calls nothing of the
 * command: both use it, and it uses neither.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>

#include "cli.h"

int hcg_cli_parse_count(const char *s, int min, int *out) {
  if (!s || !*s)
    return -1;
  errno = 0;
  char *end;
  long long v = strtoll(s, &end, 10);
  if (errno || *end || v < min || v > INT_MAX || s[0] == '+' || s[0] == ' ')
    return -1;
  *out = (int)v;
  return 0;
}
