/*
 * hook_env.c - the reader of HCG_TEST_COMM_FAIL (hook.h), in libhcghook,
 * which only test builds link (test_runtime, hcg-hello-hook), never libhcg.
 * Linking it in installs the reader.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "hook.h"

int hcgrt_hook_read_env(struct hcgrt_hook *h, hcg_error *err) {
  memset(h, 0, sizeof *h);
  const char *s = getenv("HCG_TEST_COMM_FAIL");
  if (!s)
    return HCG_OK;
  const char *colon = strchr(s, ':');
  char num[16];
  long long r;
  size_t len = colon ? (size_t)(colon - s) : 0;
  if (!colon || len == 0 || len >= sizeof num)
    goto bad;
  memcpy(num, s, len);
  num[len] = '\0';
  if (hcgrt_parse_int(num, 0, HCG_MAX_WORLD, &r))
    goto bad;
  if (strcmp(colon + 1, "prepare") == 0)
    h->stage = HCGRT_HOOK_PREPARE;
  else if (strcmp(colon + 1, "init") == 0)
    h->stage = HCGRT_HOOK_INIT;
  else
    goto bad;
  h->on = 1;
  h->rank = (int)r;
  h->name = "HCG_TEST_COMM_FAIL";
  return HCG_OK;
bad:
  return hcg__fail(err, HCG_EINVAL,
                   "HCG_TEST_COMM_FAIL='%.64s': expected RANK:prepare or "
                   "RANK:init (a test hook)",
                   s);
}

/* Before main, so that the first hcg_comm_create reads it. */
__attribute__((constructor)) static void install(void) {
  hcgrt_hook_reader = hcgrt_hook_read_env;
}
