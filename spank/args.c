/*
 * args.c - strict parsing of the plugstack.conf arguments.
 *
 * Strict because a typo in a site's configuration (expot_dims=no) must not
 * silently change what every job receives: the caller turns any rejected
 * argument into an error where a person is watching (srun, sbatch, salloc)
 * and into a log line on compute nodes, where failing would drain the node.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "args.h"

void hcgp_args_defaults(struct hcgp_args *args) {
  args->max_layout_bytes = HCGP_DEFAULT_MAX_BYTES;
  args->export_dims = 1;
  args->language[0] = '\0';
  snprintf(args->intra_node_dims, sizeof args->intra_node_dims, "%s",
           HCG_PLACEMENT_DEFAULT_DIMS);
  args->placement = HCGP_PLACEMENT_WARN;
  snprintf(args->intra_domain_dims, sizeof args->intra_domain_dims, "%s",
           HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS);
}

int hcgp_placement_parse(const char *s, int allow_off) {
  if (!s)
    return -1;
  if (allow_off && !strcmp(s, "off"))
    return HCGP_PLACEMENT_OFF;
  if (!strcmp(s, "warn"))
    return HCGP_PLACEMENT_WARN;
  if (!strcmp(s, "refuse"))
    return HCGP_PLACEMENT_REFUSE;
  return -1;
}

/* Decimal digits only: no sign, no spaces, no hex, no suffix; overflow is
 * refused rather than wrapped. */
static int parse_size(const char *s, size_t *out) {
  if (!*s)
    return -1;
  size_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    size_t d = (size_t)(*s - '0');
    if (v > (HCG_MAX_LAYOUT_BYTES - d) / 10)
      return -1; /* larger than any acceptable bound */
    v = v * 10 + d;
  }
  *out = v;
  return 0;
}

static int parse_bool(const char *s, int *out) {
  if (!strcmp(s, "yes")) {
    *out = 1;
    return 0;
  }
  if (!strcmp(s, "no")) {
    *out = 0;
    return 0;
  }
  return -1;
}

/* The keys and the list of them in the message for an unknown one come
 * from core/plugstack.h, the table `hcg help plugstack` prints. */
#define KEY_ID(id, key, value, dflt, meaning) KEY_##id,
#define KEY_NAME(id, key, value, dflt, meaning) key,
#define KEY_SYNTAX(id, key, value, dflt, meaning) ", " key "=" value
enum { HCGP_ARGS(KEY_ID) KEY_COUNT };
static const char *const key_names[KEY_COUNT] = {HCGP_ARGS(KEY_NAME)};
/* ", max_layout_bytes=N, export_dims=yes|no, ...": skip the first ", ". */
static const char key_list[] = HCGP_ARGS(KEY_SYNTAX);

static void report_fmt(hcgp_args_report_fn report, void *arg, const char *fmt,
                       ...) __attribute__((format(printf, 3, 4)));

static void report_fmt(hcgp_args_report_fn report, void *arg, const char *fmt,
                       ...) {
  if (!report)
    return;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  report(arg, msg);
}

/* The key a word names (its text before '='), or -1. */
static int find_key(const char *word, size_t klen) {
  for (int k = 0; k < KEY_COUNT; k++)
    if (strlen(key_names[k]) == klen && !strncmp(word, key_names[k], klen))
      return k;
  return -1;
}

/* Sets one key's value: 0, or 1 after reporting a bad value. */
static int take_value(struct hcgp_args *args, int key, const char *val,
                      hcgp_args_report_fn report, void *report_arg) {
  switch (key) {
  case KEY_MAX_BYTES: {
    size_t v;
    if (parse_size(val, &v) || v < 1 || v > HCG_MAX_LAYOUT_BYTES) {
      report_fmt(report, report_arg,
                 "plugstack.conf: max_layout_bytes=%.64s: the value must be "
                 "an integer from 1 to %d",
                 val, HCG_MAX_LAYOUT_BYTES);
      return 1;
    } else {
      args->max_layout_bytes = v;
    }
    break;
  }
  case KEY_EXPORT_DIMS:
    if (parse_bool(val, &args->export_dims)) {
      report_fmt(report, report_arg,
                 "plugstack.conf: export_dims=%.64s: the value must be yes "
                 "or no",
                 val);
      return 1;
    }
    break;
  case KEY_LANGUAGE:
    if (!hcg_name_valid(val)) {
      report_fmt(report, report_arg,
                 "plugstack.conf: language=%.64s: the value must be a grid "
                 "name ([a-z][a-z0-9_]*, at most %d characters)",
                 val, HCG_MAX_NAME);
      return 1;
    } else {
      snprintf(args->language, sizeof args->language, "%s", val);
    }
    break;
  case KEY_INTRA_NODE_DIMS:
    if (strlen(val) > HCGP_DIMS_MAX || !hcg_placement_dims_valid(val)) {
      report_fmt(report, report_arg,
                 "plugstack.conf: intra_node_dims=%.64s: the value must be "
                 "dim names separated by commas (e.g. %s), at most %d "
                 "characters",
                 val, HCG_PLACEMENT_DEFAULT_DIMS, HCGP_DIMS_MAX);
      return 1;
    } else {
      snprintf(args->intra_node_dims, sizeof args->intra_node_dims, "%s", val);
    }
    break;
  case KEY_INTRA_DOMAIN_DIMS:
    if (!strcmp(val, "none")) {
      args->intra_domain_dims[0] = '\0';
    } else if (strlen(val) > HCGP_DIMS_MAX || !hcg_placement_dims_valid(val)) {
      report_fmt(report, report_arg,
                 "plugstack.conf: intra_domain_dims=%.64s: the value must "
                 "be dim names separated by commas (e.g. %s), at most %d "
                 "characters, or none",
                 val, HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS, HCGP_DIMS_MAX);
      return 1;
    } else {
      snprintf(args->intra_domain_dims, sizeof args->intra_domain_dims, "%s",
               val);
    }
    break;
  case KEY_PLACEMENT: {
    int p = hcgp_placement_parse(val, 1);
    if (p < 0) {
      report_fmt(report, report_arg,
                 "plugstack.conf: placement=%.64s: the value must be off, "
                 "warn or refuse",
                 val);
      return 1;
    } else {
      args->placement = p;
    }
    break;
  }
  }
  return 0;
}

int hcgp_args_parse(struct hcgp_args *args, int argc, char *const argv[],
                    hcgp_args_report_fn report, void *report_arg) {
  int bad = 0;
  int seen[KEY_COUNT] = {0};
  for (int i = 0; i < argc; i++) {
    const char *word = argv[i];
    if (!word)
      continue;
    const char *eq = strchr(word, '=');
    int key = find_key(word, eq ? (size_t)(eq - word) : strlen(word));
    if (key < 0) {
      report_fmt(report, report_arg,
                 "plugstack.conf: unknown argument '%.64s'%s; the arguments "
                 "are %s",
                 word, strlen(word) > 64 ? "..." : "", key_list + 2);
      bad++;
    } else if (!eq) {
      report_fmt(report, report_arg,
                 "plugstack.conf: argument '%s' needs a value (%s=VALUE)",
                 key_names[key], key_names[key]);
      bad++;
    } else if (seen[key]++) {
      report_fmt(report, report_arg,
                 "plugstack.conf: argument '%s' is given more than once",
                 key_names[key]);
      bad++;
    } else {
      bad += take_value(args, key, eq + 1, report, report_arg);
    }
  }
  return bad;
}
