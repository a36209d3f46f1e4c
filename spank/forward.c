/*
 * forward.c - the srun -> slurmstepd layout hand-over and the per-task
 * computation (see forward.h for why the plugin needs its own variable).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fail.h"
#include "forward.h"

int hcgp_forward_encode(uint32_t job, uint32_t step, const char *language,
                        const char *canonical, char **out, hcg_error *err) {
  if (out)
    *out = NULL;
  if (!out || !canonical || !language)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcgp_forward_encode");
  size_t clen = strlen(canonical), llen = strlen(language);
  if (clen > HCG_MAX_LAYOUT_BYTES || llen > HCG_MAX_NAME)
    return hcg__fail(err, HCG_ELIMIT,
                     "the canonical layout is too long to forward");
  size_t cap = HCGP_FORWARD_HEADER_MAX + clen + 1;
  char *buf = malloc(cap);
  if (!buf)
    return hcg__fail(err, HCG_ENOMEM, "out of memory forwarding the layout");
  int n = snprintf(buf, cap, "%s:%" PRIu32 ".%" PRIu32 ":%s:%s",
                   HCGP_FORWARD_MAGIC, job, step, language, canonical);
  if (n < 0 || (size_t)n >= cap) {
    free(buf);
    return hcg__fail(err, HCG_ELIMIT,
                     "the canonical layout is too long to forward");
  }
  *out = buf;
  return HCG_OK;
}

#define REFUSAL "!"

int hcgp_forward_refuse(uint32_t job, uint32_t step, char **out,
                        hcg_error *err) {
  if (out)
    *out = NULL;
  if (!out)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcgp_forward_refuse");
  char buf[HCGP_FORWARD_HEADER_MAX];
  snprintf(buf, sizeof buf, "%s:%" PRIu32 ".%" PRIu32 ":%s", HCGP_FORWARD_MAGIC,
           job, step, REFUSAL);
  *out = strdup(buf);
  return *out ? HCG_OK
              : hcg__fail(err, HCG_ENOMEM,
                          "out of memory forwarding the layout");
}

/* Reads a decimal uint32 ending at `stop`; advances *p past it. */
static int read_u32(const char **p, const char *end, char stop, uint32_t *out) {
  const char *s = *p;
  uint64_t v = 0;
  if (s >= end || *s < '0' || *s > '9')
    return -1;
  for (; s < end && *s >= '0' && *s <= '9'; s++) {
    v = v * 10 + (uint64_t)(*s - '0');
    if (v > UINT32_MAX)
      return -1;
  }
  if (s >= end || *s != stop)
    return -1;
  *out = (uint32_t)v;
  *p = s + 1;
  return 0;
}

int hcgp_forward_decode(const char *value, size_t value_len, uint32_t job,
                        uint32_t step, char language[HCG_MAX_NAME + 1],
                        const char **text, size_t *len, hcg_error *err) {
  static const char malformed[] =
      "the layout forwarded by srun (" HCGP_FORWARD_ENV ") is malformed";
  if (!value || !text || !len || !language)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcgp_forward_decode");
  if (value_len > HCGP_FORWARD_MAX)
    return hcg__fail(err, HCG_ELIMIT,
                     "the layout forwarded by srun (" HCGP_FORWARD_ENV
                     ") is longer than any valid layout");
  const char *p = value, *end = value + value_len;
  size_t mlen = strlen(HCGP_FORWARD_MAGIC);
  if (value_len < mlen + 1 || memcmp(p, HCGP_FORWARD_MAGIC, mlen) ||
      p[mlen] != ':')
    return hcg__fail(err, HCG_EENV, "%s", malformed);
  p += mlen + 1;
  uint32_t fjob, fstep;
  if (read_u32(&p, end, '.', &fjob) || read_u32(&p, end, ':', &fstep))
    return hcg__fail(err, HCG_EENV, "%s", malformed);
  if (fjob != job || fstep != step) {
    return hcg__fail(err, HCG_EENV,
                     "the layout in " HCGP_FORWARD_ENV
                     " was made for step %" PRIu32 ".%" PRIu32
                     ", not for this step %" PRIu32 ".%" PRIu32
                     " (is the hcg plugin loaded in srun?)",
                     fjob, fstep, job, step);
  }
  if ((size_t)(end - p) == strlen(REFUSAL) &&
      !memcmp(p, REFUSAL, strlen(REFUSAL)))
    return hcg__fail(
        err, HCG_ELAYOUT,
        "srun refused the layout of this step (its message above says "
        "why); the task does not start");
  const char *colon = memchr(p, ':', (size_t)(end - p));
  if (!colon || colon == p || (size_t)(colon - p) > HCG_MAX_NAME)
    return hcg__fail(err, HCG_EENV, "%s", malformed);
  memcpy(language, p, (size_t)(colon - p));
  language[colon - p] = '\0';
  if (!hcg_name_valid(language)) /* srun forwards a grid's name */
    return hcg__fail(err, HCG_EENV, "%s", malformed);
  *text = colon + 1;
  *len = (size_t)(end - (colon + 1));
  return HCG_OK;
}

int hcgp_forward_refused(const char *value, size_t value_len, uint32_t job,
                         uint32_t step) {
  char lang[HCG_MAX_NAME + 1];
  const char *text;
  size_t len;
  hcg_error err = HCG_ERROR_INIT;
  return hcgp_forward_decode(value, value_len, job, step, lang, &text, &len,
                             &err) == HCG_ELAYOUT;
}

/* The HCG_* settings a user may pass to a task; keep doc/security.md and
 * hcg(1) in step. (The test programs' settings are HCGTEST_*, not ours.) */
static const char *const user_settings[] = {
    "HCG_TIMEOUT", "HCG_TRACE", "HCG_FANIN",
    "HCG_LIBRARY", "HCG_CLI",   "HCG_PMIX_LIBRARY",
};

int hcgp_env_user_setting(const char *name) {
  if (!name)
    return 0;
  size_t n = strcspn(name, "=");
  for (size_t i = 0; i < sizeof user_settings / sizeof *user_settings; i++)
    if (strlen(user_settings[i]) == n && !memcmp(name, user_settings[i], n))
      return 1;
  return 0;
}

int hcgp_env_plugin_owned(const char *entry) {
  return entry && !strncmp(entry, "HCG_", 4) && !hcgp_env_user_setting(entry);
}

int hcgp_env_grid_shared(const char *name) {
  switch (hcg_env_scope(name)) {
  case HCG_ENV_SHARED:
    return 1;
  case HCG_ENV_PER_RANK:
    return !strcmp(name, "HCG_GRIDS");
  case HCG_ENV_PER_DIM: {
    size_t n = strlen(name);
    return n > 5 && !strcmp(name + n - 5, "_SIZE");
  }
  default:
    return 0;
  }
}

uint32_t hcgp_layout_common_rank(const hcg_layout *L) {
  int best = -1, rank = 0;
  for (int g = 0; g < hcg_layout_num_grids(L); g++)
    if (hcg_grid_size(L, g) > best) {
      best = hcg_grid_size(L, g);
      rank = hcg_grid_offset(L, g);
    }
  return rank > 0 ? (uint32_t)rank : 0;
}

int hcgp_step_heterogeneous(const char *ntasks, uint32_t world) {
  if (!ntasks || !*ntasks || ntasks[0] == '-')
    return 0;
  char *end;
  errno = 0;
  unsigned long long n = strtoull(ntasks, &end, 10);
  if (errno || *end)
    return 0;
  return n != world;
}

int hcgp_srun_cmdline_attaches(const char *cmdline, size_t len) {
  if (!cmdline)
    return 1;
  /* Each word starts at 0 or after a NUL; a last word without its NUL was
   * cut short by the caller, and is judged on what is there. */
  for (size_t at = 0; at < len;) {
    const char *w = cmdline + at;
    size_t n = strnlen(w, len - at);
    if (n >= 6 && !strncmp(w, "--jobi", 6))
      return 1;
    at += n + 1;
  }
  return 0;
}

struct filter {
  hcgp_task_setenv_fn fn;
  void *arg;
  int export_dims;
};

static int filtered(void *arg, const char *name, const char *value) {
  struct filter *f = arg;
  if (!f->export_dims && hcg_env_scope(name) == HCG_ENV_PER_DIM)
    return 0;
  return f->fn(f->arg, name, value);
}

int hcgp_layout_task_env(const hcg_layout *L, const struct hcgp_task *t,
                         hcgp_task_setenv_fn fn, void *arg) {
  if (!L || !t || !fn)
    return HCG_EINVAL;
  struct filter f = {fn, arg, t->export_dims};
  return hcg_rank_env(L, (int)t->rank, filtered, &f);
}

int hcgp_task_env(const char *forwarded, size_t len, const struct hcgp_task *t,
                  hcgp_task_setenv_fn fn, void *arg, hcg_error *err) {
  return hcgp_task_env_keep(forwarded, len, t, fn, arg, NULL, err);
}

int hcgp_task_env_keep(const char *forwarded, size_t len,
                       const struct hcgp_task *t, hcgp_task_setenv_fn fn,
                       void *arg, hcg_layout **keep, hcg_error *err) {
  if (keep)
    *keep = NULL;
  if (!forwarded || !t || !fn)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcgp_task_env");
  hcg_layout *layout = NULL;
  int rc = hcgp_forward_layout(forwarded, len, t, &layout, err);
  if (rc)
    return rc;
  rc = hcgp_layout_task_env(layout, t, fn, arg);
  if (rc == 0 && keep)
    *keep = layout;
  else
    hcg_layout_free(layout);
  return rc;
}

int hcgp_forward_layout(const char *forwarded, size_t len,
                        const struct hcgp_task *t, hcg_layout **out,
                        hcg_error *err) {
  *out = NULL;
  if (!forwarded || !t)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcgp_task_env");
  if (t->world < 1 || t->world > HCG_MAX_WORLD || t->rank >= t->world) {
    return hcg__fail(err, HCG_ERANGE,
                     "task %" PRIu32 " of %" PRIu32
                     " is outside the ranks a layout can describe",
                     t->rank, t->world);
  }
  char language[HCG_MAX_NAME + 1];
  const char *text;
  size_t tlen;
  int rc = hcgp_forward_decode(forwarded, len, t->job, t->step, language, &text,
                               &tlen, err);
  if (rc)
    return rc;
  /* The value reached us through the user's environment: a user who runs
   * srun without the plugin (a private SLURM_CONF) can write anything into
   * it for their own step. So the site's policy applies again here, to the
   * canonical text (srun checks the same before forwarding). */
  if (t->max_bytes && tlen > t->max_bytes)
    return hcg__fail(err, HCG_ELIMIT,
                     "the layout forwarded in " HCGP_FORWARD_ENV
                     " is %zu bytes, longer than this site's "
                     "max_layout_bytes=%zu (is the hcg plugin loaded in srun?)",
                     tlen, t->max_bytes);
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = (int)t->world;
  cfg.language = language;
  hcg_layout *layout = NULL;
  rc = hcg_layout_parse(text, tlen, &cfg, &layout, err);
  if (rc)
    return rc;
  /* The site's language= chooses among several grids only (as in srun). */
  if (t->language && t->language[0] && hcg_layout_num_grids(layout) > 1 &&
      strcmp(language, t->language)) {
    hcg_layout_free(layout);
    return hcg__fail(err, HCG_EENV,
                     "the layout forwarded in " HCGP_FORWARD_ENV
                     " uses grid '%s' as the language module, but this site "
                     "sets language=%s (is the hcg plugin loaded in srun?)",
                     language, t->language);
  }
  *out = layout;
  return HCG_OK;
}
