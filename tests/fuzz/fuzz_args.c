/*
 * fuzz_args.c - libFuzzer target for the plugin's plugstack.conf argument
 * parser (spank/args.c), which runs inside srun and slurmstepd.
 *
 * Input: the argument words separated by '\n' (a plugstack.conf line gives
 * words without quoting; any other byte, NUL included, is part of a word).
 * Checks: every rejected word is reported once with a sentence; what is
 * accepted is within the documented bounds; a word list without rejections
 * parses the same a second time, from fresh defaults.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "fuzz.h"

#define MAX_WORDS 64

static void count_report(void *arg, const char *message) {
  CHECK(message && !strncmp(message, "plugstack.conf: ", 16));
  CHECK(strlen(message) < 512);
  ++*(int *)arg;
}

static void check_args(const struct hcgp_args *a) {
  CHECK(a->max_layout_bytes >= 1 &&
        a->max_layout_bytes <= HCG_MAX_LAYOUT_BYTES);
  CHECK(a->export_dims == 0 || a->export_dims == 1);
  CHECK(memchr(a->language, '\0', sizeof a->language));
  CHECK(!a->language[0] || hcg_name_valid(a->language));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A copy, NUL-terminated, cut into words at '\n' (a word with a NUL inside
   * ends there, as a C string would). */
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  char *words[MAX_WORDS];
  int n = 0;
  for (char *p = buf; n < MAX_WORDS;) {
    words[n++] = p;
    char *nl = memchr(p, '\n', size - (size_t)(p - buf));
    if (!nl)
      break;
    *nl = '\0';
    p = nl + 1;
  }

  struct hcgp_args a;
  hcgp_args_defaults(&a);
  check_args(&a);
  int reports = 0;
  int bad = hcgp_args_parse(&a, n, words, count_report, &reports);
  CHECK(bad >= 0 && bad <= n);
  CHECK(reports == bad);
  check_args(&a);
  /* Without a reporter, the same count. */
  struct hcgp_args b;
  hcgp_args_defaults(&b);
  CHECK(hcgp_args_parse(&b, n, words, NULL, NULL) == bad);
  CHECK(a.max_layout_bytes == b.max_layout_bytes &&
        a.export_dims == b.export_dims && !strcmp(a.language, b.language));
  free(buf);
  return 0;
}
