/*
 * log.c - the plugin's messages. Slurm prints them in srun's terminal or in
 * the node's log; the prefix tells the user which plugin speaks.
 *
 * spank.h offers slurm_error and its siblings, which take a format but no
 * va_list, so the message is formatted here first and passed as "%s".
 */
#include <slurm/spank.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "log.h"

#define PREFIX "hcg: "

/* Most messages fit; a longer one (a long layout's error) is formatted
 * again at its size rather than cut. */
enum { SHORT_MESSAGE = 1024 };

static void emit(enum hcgp_log_level level, const char *message) {
  switch (level) {
  case HCGP_LOG_ERROR:
    slurm_error(PREFIX "%s", message);
    break;
  case HCGP_LOG_INFO:
    slurm_info(PREFIX "%s", message);
    break;
  case HCGP_LOG_VERBOSE:
    slurm_verbose(PREFIX "%s", message);
    break;
  case HCGP_LOG_TASK:
    fprintf(stderr, PREFIX "%s\n", message);
    break;
  }
}

static int held;
static unsigned kept_back;

void hcgp_log_hold(void) {
  held = 1;
  kept_back = 0;
}

unsigned hcgp_log_release(void) {
  held = 0;
  return kept_back;
}

void hcgp_log(enum hcgp_log_level level, const char *fmt, ...) {
  if (held) {
    kept_back++;
    return;
  }
  char short_message[SHORT_MESSAGE];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(short_message, sizeof short_message, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if ((size_t)n < sizeof short_message) {
    emit(level, short_message);
    return;
  }
  char *message = malloc((size_t)n + 1);
  if (!message) {
    emit(level, short_message); /* cut short rather than lost */
    return;
  }
  va_start(ap, fmt);
  vsnprintf(message, (size_t)n + 1, fmt, ap);
  va_end(ap);
  emit(level, message);
  free(message);
}

void hcgp_log_hcg_error(const hcg_error *err) {
  hcgp_log(HCGP_LOG_ERROR, "%s",
           err->message[0] ? err->message : hcg_strerror(err->code));
}
