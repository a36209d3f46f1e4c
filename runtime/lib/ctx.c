/*
 * ctx.c - a context from the task's HCG_* environment: read, checked for
 * consistency, checked against PMIx, and queried.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "core/contract.h" /* the environment's names, config structs */
#include "rt.h"

/* Where variables come from (hcg_ctx_config). */
struct envsrc {
  hcg_getenv_fn fn;
  void *arg;
  const char *const *envp;
};

static const char *env_get(const struct envsrc *e, const char *name) {
  if (e->fn)
    return e->fn(e->arg, name);
  if (e->envp) {
    size_t n = strlen(name);
    for (const char *const *p = e->envp; *p; p++)
      if (strncmp(*p, name, n) == 0 && (*p)[n] == '=')
        return *p + n + 1;
    return NULL;
  }
  return getenv(name);
}

/* A variable that must be a decimal integer in [lo, hi]. */
static int env_int(const struct envsrc *e, const char *name, long long lo,
                   long long hi, long long *out, hcg_error *err) {
  const char *v = env_get(e, name);
  if (!v)
    return hcg__fail(err, HCG_EENV,
                     "%s is not set: the task was not started by srun "
                     "--hcg-layout (the hcg SPANK plugin exports it)",
                     name);
  if (hcgrt_parse_int(v, lo, hi, out))
    return hcg__fail(err, HCG_EENV,
                     "%s='%.64s' is not an integer in [%lld, %lld]", name, v,
                     lo, hi);
  return HCG_OK;
}

/* Every HCG_* variable hcg_rank_env gives this rank must, when set, have
 * that value: a task whose HCG_RANK was changed after launch (or whose
 * variables come from different jobs) is caught here, PMIx or not. */
struct consistency {
  const struct envsrc *env;
  hcg_error *err;
  int rank;
};

static int check_var(void *arg, const char *name, const char *want) {
  struct consistency *c = arg;
  /* The variables hcg_ctx_init parses itself were checked there (by
   * value: HCG_RANK may be spelled "07"). This is not a scope question:
   * HCG_LANGUAGE is shared and still compared (an empty one is refused). */
  switch (hcg__env_var(name)) {
  case HCG__VAR_VERSION:
  case HCG__VAR_LAYOUT:
  case HCG__VAR_RANK:
  case HCG__VAR_WORLD_SIZE:
    return 0;
  default:
    break;
  }
  const char *have = env_get(c->env, name);
  if (!have || !strcmp(have, want))
    return 0;
  /* Set but empty is a broken environment, not a changed rank. */
  if (!*have)
    return hcg__fail(c->err, HCG_EMISMATCH,
                     "%s is set but empty; HCG_LAYOUT gives '%.128s': unset "
                     "it, or let srun --hcg-layout set it",
                     name, want);
  return hcg__fail(c->err, HCG_EMISMATCH,
                   "%s='%.128s' but HCG_RANK=%d and HCG_LAYOUT give '%.128s': "
                   "the HCG_* variables disagree (was HCG_RANK changed after "
                   "launch?)",
                   name, have, c->rank, want);
}

static int read_tag(const char *tag, char *out, hcg_error *err) {
  out[0] = '\0';
  if (!tag)
    return HCG_OK;
  size_t n = strlen(tag);
  if (n > HCG_MAX_TAG)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_config.tag is %zu bytes; the limit is %d", n,
                     HCG_MAX_TAG);
  for (size_t i = 0; i < n; i++) {
    char ch = tag[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
          (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
      return hcg__fail(err, HCG_EINVAL,
                       "hcg_ctx_config.tag '%s' may only hold letters, "
                       "digits, '_' and '-'",
                       tag);
  }
  memcpy(out, tag, n + 1);
  return HCG_OK;
}

/* An int setting of the context: the config's field unless HCG_UNSET, else
 * the variable, else the default, within [lo, hi]. */
struct setting {
  const char *field; /* in hcg_ctx_config */
  const char *var;
  const char *unit; /* "a number of UNIT in [lo, hi]" */
  int lo, hi, def;
};

static int read_setting(const struct envsrc *env, const struct setting *s,
                        int cfg, int *out, hcg_error *err) {
  if (cfg != HCG_UNSET && (cfg < s->lo || cfg > s->hi))
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_config.%s must be HCG_UNSET or in [%d, %d], "
                     "got %d",
                     s->field, s->lo, s->hi, cfg);
  *out = cfg != HCG_UNSET ? cfg : s->def;
  const char *v = cfg != HCG_UNSET ? NULL : env_get(env, s->var);
  long long t;
  if (!v)
    return HCG_OK;
  if (hcgrt_parse_int(v, s->lo, s->hi, &t))
    return hcg__fail(err, HCG_EENV,
                     "%s='%.64s' is not a number of %s in [%d, %d]", s->var, v,
                     s->unit, s->lo, s->hi);
  *out = (int)t;
  return HCG_OK;
}

/* The timeout of fences, gets and NCCL calls. */
static const struct setting timeout_setting = {
    "timeout_s", "HCG_TIMEOUT",     "seconds",
    1,           HCG_MAX_TIMEOUT_S, HCG_DEFAULT_TIMEOUT_S};
/* The fan-in bound of the exchange (exchange.c). The same on every process
 * of the job, as the number of fences depends on it. */
static const struct setting fanin_setting = {
    "fanin", "HCG_FANIN", "requests", 2, HCG_MAX_WORLD, HCGRT_DEFAULT_FANIN};

/* Version, world, rank, language and layout, in that order. */
static int read_layout(const struct envsrc *env, hcg_ctx *ctx, hcg_error *err) {
  const char *version = env_get(env, "HCG_VERSION");
  const char *text = env_get(env, "HCG_LAYOUT");
  if (!version && !text)
    return hcg__fail(err, HCG_EENV,
                     "no HCG_* environment (HCG_VERSION and HCG_LAYOUT are "
                     "not set): start the job with srun --hcg-layout=LAYOUT "
                     "(the hcg SPANK plugin), or give the variables in "
                     "hcg_ctx_config");
  if (!version)
    return hcg__fail(err, HCG_EENV,
                     "HCG_VERSION is not set although HCG_LAYOUT is: the "
                     "environment was not made by the hcg SPANK plugin");
  long long ver;
  if (hcgrt_parse_int(version, 0, 1000000, &ver) || ver != HCG_ENV_VERSION)
    return hcg__fail(err, HCG_EENV,
                     "HCG_VERSION='%.32s' but this libhcg (%s) reads version "
                     "%d of the environment: rebuild or upgrade so that the "
                     "plugin and the library match",
                     version, hcg_version(), HCG_ENV_VERSION);

  long long world, rank;
  int rc = env_int(env, "HCG_WORLD_SIZE", 1, HCG_MAX_WORLD, &world, err);
  if (rc)
    return rc;
  const char *rank_text = env_get(env, "HCG_RANK");
  if (!rank_text)
    return env_int(env, "HCG_RANK", 0, world - 1, &rank, err);
  if (hcgrt_parse_int(rank_text, 0, HCG_MAX_WORLD, &rank))
    return hcg__fail(err, HCG_EENV, "HCG_RANK='%.64s' is not an integer",
                     rank_text);
  if (rank >= world)
    return hcg__fail(err, HCG_EENV,
                     "HCG_RANK=%lld is outside [0, %lld) (HCG_WORLD_SIZE=%lld)",
                     rank, world, world);
  if (!text)
    return hcg__fail(err, HCG_EENV,
                     "HCG_LAYOUT is not set: the task was not started by srun "
                     "--hcg-layout (the hcg SPANK plugin exports it)");

  hcg_layout_config lc = HCG_LAYOUT_CONFIG_INIT;
  lc.world_size = (int)world;
  lc.language = env_get(env, "HCG_LANGUAGE");
  if (lc.language && !*lc.language)
    lc.language = NULL;
  rc = hcg_layout_parse(text, strlen(text), &lc, &ctx->layout, err);
  if (rc) {
    if (err)
      err->code = HCG_EENV;
    hcgrt_prefix(err,
                 "HCG_LAYOUT is not a valid layout for HCG_WORLD_SIZE=%lld"
                 ": ",
                 world);
    return HCG_EENV;
  }
  ctx->world = (int)world;
  ctx->rank = (int)rank;
  return HCG_OK;
}

static int check_pmix(hcg_ctx *ctx, int mode, hcg_error *err) {
  if (mode == HCG_PMIX_OFF)
    return HCG_OK;
  int present = hcgrt_pmix_present();
  if (!present && mode == HCG_PMIX_AUTO)
    return HCG_OK;
  /* A build without PMIx, or no libpmix to load: AUTO goes on without it
   * (an exchange says why: hcgrt_exchange_usable). */
  hcg_error why = HCG_ERROR_INIT;
  if (hcgrt_pmix_usable(&why)) {
    if (mode == HCG_PMIX_AUTO)
      return HCG_OK;
    return hcg__fail(err, why.code, "PMIx is required but %s", why.message);
  }
  if (!present)
    return hcg__fail(err, HCG_EPMIX,
                     "PMIx is required but this process was not started by "
                     "a PMIx server (PMIX_NAMESPACE is not set): run it with "
                     "srun --mpi=pmix");
  int prank;
  long long psize;
  int rc = hcgrt_pmix_open(&ctx->pmix, &prank, &psize, err);
  if (rc)
    return rc;
  if (prank != ctx->rank)
    return hcg__fail(err, HCG_EMISMATCH,
                     "HCG_RANK=%d but PMIx says this process is rank %d: the "
                     "HCG_* environment belongs to another task (was "
                     "HCG_RANK changed?)",
                     ctx->rank, prank);
  if (psize >= 0 && psize != ctx->world)
    return hcg__fail(err, HCG_EMISMATCH,
                     "HCG_WORLD_SIZE=%d but PMIx's job size (PMIX_JOB_SIZE) "
                     "is %lld: the layout was made for another job or step",
                     ctx->world, psize);
  return HCG_OK;
}

/* The placement verdicts the plugin set (HCG_*_LOCAL and
 * HCG_*_DOMAIN_LOCAL, scope HCG_ENV_PLACEMENT): 1 or 0; anything else in
 * such a variable is an error, an absent one is "not checked" (-1). */
static int
read_verdicts(const struct envsrc *env, hcg_ctx *ctx, const char *suffix,
              signed char out[HCG_MAX_GRIDS][1 + HCG_MAX_VIEWS][HCG_MAX_DIMS],
              hcg_error *err) {
  memset(out, -1,
         sizeof(signed char) * HCG_MAX_GRIDS * (1 + HCG_MAX_VIEWS) *
             HCG_MAX_DIMS);
  const hcg_layout *L = ctx->layout;
  for (int i = 0; i < ctx->ngrids; i++) {
    int g = ctx->grids[i];
    for (int v = 0; v < hcg_grid_num_views(L, g); v++)
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++) {
        char name[4 + 3 * (HCG_MAX_NAME + 1) + 16];
        hcg__env_stem(name, sizeof name - 14, L, g, v, d);
        strcat(name, suffix);
        const char *val = env_get(env, name);
        if (!val)
          continue;
        if (strcmp(val, "0") && strcmp(val, "1"))
          return hcg__fail(err, HCG_EENV, "%s is '%.20s', not 0 or 1", name,
                           val);
        out[g][v][d] = (signed char)(val[0] - '0');
      }
  }
  return HCG_OK;
}

int hcg_ctx_init(const hcg_ctx_config *user, hcg_ctx **out, hcg_error *err) {
  static const hcg_ctx_config defaults = HCG_CTX_CONFIG_INIT;
  if (!out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_ctx_init");
  *out = NULL;
  hcg_ctx_config config;
  int rc = HCG__CONFIG_READ(hcg_ctx_config, user, &defaults, &config, err);
  if (rc)
    return rc;
  const hcg_ctx_config *cfg = &config;
  if (cfg->pmix < HCG_PMIX_AUTO || cfg->pmix > HCG_PMIX_OFF)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_config.pmix must be an enum hcg_pmix_use, "
                     "got %d",
                     cfg->pmix);
  if (cfg->device < HCG_UNSET)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_ctx_config.device must be HCG_UNSET or a device "
                     "number, got %d",
                     cfg->device);

  hcg_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a context");
  ctx->device = -1;
  ctx->device_cfg = cfg->device;
  ctx->local_rank = -1;
  struct envsrc env = {cfg->getenv_fn, cfg->getenv_arg, cfg->envp};

  rc = read_tag(cfg->tag, ctx->tag, err);
  if (!rc)
    rc = read_layout(&env, ctx, err);
  if (!rc) {
    struct consistency c = {&env, err, ctx->rank};
    rc = hcg_rank_env(ctx->layout, ctx->rank, check_var, &c);
  }
  if (!rc)
    rc = read_setting(&env, &timeout_setting, cfg->timeout_s, &ctx->timeout_s,
                      err);
  if (!rc)
    rc = read_setting(&env, &fanin_setting, cfg->fanin, &ctx->fanin, err);
  if (!rc) {
    long long local;
    const char *v = env_get(&env, "SLURM_LOCALID");
    if (v && !hcgrt_parse_int(v, 0, HCG_MAX_WORLD, &local))
      ctx->local_rank = (int)local;
    int ng = hcg_layout_num_grids(ctx->layout);
    for (int g = 0; g < ng; g++)
      if (hcg_grid_contains(ctx->layout, g, ctx->rank))
        ctx->grids[ctx->ngrids++] = g;
    rc = read_verdicts(&env, ctx, "_LOCAL", ctx->node_local, err);
    if (!rc)
      rc = read_verdicts(&env, ctx, "_DOMAIN_LOCAL", ctx->domain_local, err);
  }
  if (!rc) {
    rc = check_pmix(ctx, cfg->pmix, err);
  }
  if (rc) {
    hcg_ctx_free(ctx);
    return rc;
  }
  *out = ctx;
  return HCG_OK;
}

int hcg_ctx_node_local(const hcg_ctx *ctx, int grid, int view, int dim) {
  if (!ctx || grid < 0 || grid >= HCG_MAX_GRIDS || view < 0 ||
      view > HCG_MAX_VIEWS || dim < 0 || dim >= HCG_MAX_DIMS)
    return -1;
  return ctx->node_local[grid][view][dim];
}

int hcg_ctx_domain_local(const hcg_ctx *ctx, int grid, int view, int dim) {
  if (!ctx || grid < 0 || grid >= HCG_MAX_GRIDS || view < 0 ||
      view > HCG_MAX_VIEWS || dim < 0 || dim >= HCG_MAX_DIMS)
    return -1;
  return ctx->domain_local[grid][view][dim];
}

void hcg_ctx_free(hcg_ctx *ctx) {
  if (!ctx)
    return;
  hcgrt_comms_free_all(ctx);
  hcgrt_pmix_close(ctx->pmix);
  hcg_layout_free(ctx->layout);
  free(ctx);
}

const hcg_layout *hcg_ctx_layout(const hcg_ctx *ctx) {
  return ctx ? ctx->layout : NULL;
}
int hcg_ctx_rank(const hcg_ctx *ctx) { return ctx ? ctx->rank : -1; }
int hcg_ctx_world_size(const hcg_ctx *ctx) { return ctx ? ctx->world : 0; }
int hcg_ctx_has_pmix(const hcg_ctx *ctx) { return ctx && ctx->pmix; }
int hcg_ctx_timeout(const hcg_ctx *ctx) { return ctx ? ctx->timeout_s : 0; }
int hcg_ctx_num_grids(const hcg_ctx *ctx) { return ctx ? ctx->ngrids : 0; }

int hcg_ctx_grid(const hcg_ctx *ctx, int i) {
  return ctx && i >= 0 && i < ctx->ngrids ? ctx->grids[i] : -1;
}

int hcg_ctx_coords(const hcg_ctx *ctx, int grid, int view, int *coords,
                   int cap) {
  if (!ctx)
    return HCG_EINVAL;
  return hcg_rank_coords(ctx->layout, grid, view, ctx->rank, coords, cap);
}

int hcg_ctx_group(const hcg_ctx *ctx, const char *spec, hcg_group *out,
                  hcg_error *err) {
  if (!ctx || !spec || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_ctx_group");
  hcg_request req;
  int rc = hcg_request_parse(ctx->layout, spec, &req, err);
  if (rc)
    return rc;
  rc = hcg_group_of_rank(ctx->layout, &req, ctx->rank, out);
  if (rc == HCG_ENOTMEMBER)
    return hcg__fail(err, rc, "rank %d is not in grid '%s' of spec '%s'",
                     ctx->rank, hcg_grid_name(ctx->layout, req.grid), spec);
  if (rc)
    return hcg__fail(err, rc, "spec '%s': %s", spec, hcg_strerror(rc));
  return HCG_OK;
}

int hcg_ctx_group_of(const hcg_ctx *ctx, const hcg_request *req,
                     hcg_group *out) {
  if (!ctx)
    return HCG_EINVAL;
  return hcg_group_of_rank(ctx->layout, req, ctx->rank, out);
}

int hcg_ctx_field_group(const hcg_ctx *ctx, int grid, enum hcg_field field,
                        hcg_group *out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  hcg_request req;
  int rc = hcg_collection_request(ctx->layout, grid, field, &req);
  if (rc)
    return rc;
  return hcg_group_of_rank(ctx->layout, &req, ctx->rank, out);
}

int hcg_ctx_embedding_group(const hcg_ctx *ctx, enum hcg_embedding kind,
                            int out[2], int *n) {
  if (!ctx)
    return HCG_EINVAL;
  return hcg_embedding_group_of_rank(ctx->layout, kind, ctx->rank, out, n);
}

int hcg_ctx_stage(const hcg_ctx *ctx, int grid, int *is_first, int *is_last) {
  if (!ctx)
    return HCG_EINVAL;
  return hcg_rank_stage(ctx->layout, grid, ctx->rank, is_first, is_last);
}

int hcg_ctx_get_stats(const hcg_ctx *ctx, hcg_ctx_stats *out) {
  if (!ctx || !out)
    return HCG_EINVAL;
  *out = ctx->stats;
  out->comms = ctx->comms.n;
  return HCG_OK;
}

long long hcg_ctx_num_fences(const hcg_ctx *ctx) {
  return ctx ? ctx->stats.fences : -1;
}
