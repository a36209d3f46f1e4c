/*
 * requests.c - HCGTEST_REQUESTS=FILE, in libhcgtesting, which only test
 * programs link (hcg-hello-test), never libhcg: every PMIx get appends
 * "get PUBLISHER BY_RANK KEY" to FILE, so that tests/cluster counts the
 * requests each publisher answers (exchange.bats, agreement.bats).
 */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "testing.h"

static const char *path;

/* One write per line: with O_APPEND the lines of concurrent processes do
 * not mix. Best effort. */
static void log_gets(int by, const struct hcgrt_get *gets, int n) {
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  for (int i = 0; i < n; i++) {
    char line[HCG_KEY_MAX + 600];
    int len = snprintf(line, sizeof line, "get %d %d %s\n", gets[i].rank, by,
                       gets[i].key);
    if (len > 0 && (size_t)len < sizeof line &&
        write(fd, line, (size_t)len) != len)
      break;
  }
  close(fd);
}

void hcgrt_testing_requests(void) {
  const char *f = getenv("HCGTEST_REQUESTS");
  if (f && *f) {
    path = f;
    hcgrt_pmix_gets_seen = log_gets;
  }
}

/* Before main, so that the first exchange is counted. */
__attribute__((constructor)) static void install(void) {
  hcgrt_testing_requests();
}
