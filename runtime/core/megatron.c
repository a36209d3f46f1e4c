/*
 * megatron.c - Megatron-LM's parallel arguments (hcg_megatron.h): the one
 * table of what each argument is, the layout a set of them builds, and,
 * the other way, the arguments a layout stands for (by the table's indices,
 * so that no caller names them again).
 *
 * One model (megatron/training/arguments.py, parallel_state.py of Megatron
 * main): a grid `world` with dims tp, gtp_remat, cp, dp, pp (pp before dp
 * with --use-tp-pp-dp-mapping) and its view `expert` with expt_tp, ep,
 * expt_gtp_remat, expt_dp and the shared pp. dp and expt_dp are what the
 * world leaves; --expert-tensor-parallel-size defaults to tp;
 * --tensor-parallel-num-weight-shards S gives gtp_remat = S / tp.
 *
 * MIMO (examples/mimo/training/args.py and topology.py): as soon as one of
 * --encoder-tp, --encoder-dp, --llm-* is given, a grid for the encoder at
 * rank 0 (tp, dp, the other dims 1) and a grid `language` at --llm-offset,
 * each with the five dims and an expert view, the argparse defaults of
 * Megatron's example for what is not given. Their spans must be equal
 * (colocated) or disjoint, and cover the world.
 */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

/* ARGS longer than this is refused (a command line is shorter). */
#define MG_MAX_ARGS (1 << 20)
/* Longest layout the arguments make: two grids of five dims and a view. */
#define MG_MAX_LAYOUT 2048

enum mg_id {
  MG_TP,
  MG_PP,
  MG_CP,
  MG_EP,
  MG_ETP,
  MG_TP_SHARDS,
  MG_ETP_SHARDS,
  MG_TP_PP_DP,
  MG_DIST_OPT,
  MG_MODEL_PARALLEL,
  MG_HCP,
  MG_ENC_TP,
  MG_ENC_DP,
  MG_LLM_OFFSET,
  MG_LLM_TP,
  MG_LLM_CP,
  MG_LLM_PP,
  MG_LLM_DP,
  MG_LLM_EP,
  MG_LLM_ETP,
  MG_LLM_ONLY,
  MG_DP, /* the first derived value */
  MG_GTP,
  MG_EGTP,
  MG_WORLD,
  MG_COUNT
};

static const hcg_megatron_arg mg_arg[MG_COUNT] = {
    [MG_TP] = {"tensor_model_parallel_size", "--tensor-model-parallel-size",
               "tp", HCG_MEGATRON_INT, HCG_MEGATRON_SINGLE, 1, 1},
    [MG_PP] = {"pipeline_model_parallel_size", "--pipeline-model-parallel-size",
               "pp", HCG_MEGATRON_INT, HCG_MEGATRON_SINGLE, 1, 1},
    [MG_CP] = {"context_parallel_size", "--context-parallel-size", "cp",
               HCG_MEGATRON_INT, HCG_MEGATRON_SINGLE, 1, 1},
    [MG_EP] = {"expert_model_parallel_size", "--expert-model-parallel-size",
               "ep", HCG_MEGATRON_INT, HCG_MEGATRON_SINGLE, 1, 1},
    /* Its default is tp (validate_args). */
    [MG_ETP] = {"expert_tensor_parallel_size", "--expert-tensor-parallel-size",
                "expt_tp", HCG_MEGATRON_INT, HCG_MEGATRON_SINGLE, 1, 0},
    [MG_TP_SHARDS] = {"tensor_parallel_num_weight_shards",
                      "--tensor-parallel-num-weight-shards", "tp*gtp_remat",
                      HCG_MEGATRON_INT, HCG_MEGATRON_ANY, 1, 0},
    [MG_ETP_SHARDS] = {"expert_tensor_parallel_num_weight_shards",
                       "--expert-tensor-parallel-num-weight-shards",
                       "expt_tp*expt_gtp_remat", HCG_MEGATRON_INT,
                       HCG_MEGATRON_ANY, 1, 0},
    [MG_TP_PP_DP] = {"use_tp_pp_dp_mapping", "--use-tp-pp-dp-mapping",
                     "the order of pp and dp", HCG_MEGATRON_FLAG,
                     HCG_MEGATRON_SINGLE, 0, 0},
    [MG_DIST_OPT] = {"num_distributed_optimizer_instances",
                     "--num-distributed-optimizer-instances", "inter_dist_opt",
                     HCG_MEGATRON_INT, HCG_MEGATRON_ANY, 1, 1},
    [MG_MODEL_PARALLEL] = {"model_parallel_size", "--model-parallel-size", "tp",
                           HCG_MEGATRON_INT, HCG_MEGATRON_ANY, 1, 0},
    [MG_HCP] = {"hierarchical_context_parallel_sizes",
                "--hierarchical-context-parallel-sizes", "hcp",
                HCG_MEGATRON_INTS, HCG_MEGATRON_ANY, 1, 0},
    [MG_ENC_TP] = {"encoder_tp", "--encoder-tp", "tp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 2},
    [MG_ENC_DP] = {"encoder_dp", "--encoder-dp", "dp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 2},
    [MG_LLM_OFFSET] = {"llm_offset", "--llm-offset", "offset", HCG_MEGATRON_INT,
                       HCG_MEGATRON_MIMO, 0, 4},
    [MG_LLM_TP] = {"llm_tp", "--llm-tp", "tp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 2},
    [MG_LLM_CP] = {"llm_cp", "--llm-cp", "cp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 1},
    [MG_LLM_PP] = {"llm_pp", "--llm-pp", "pp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 1},
    [MG_LLM_DP] = {"llm_dp", "--llm-dp", "dp", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 2},
    [MG_LLM_EP] = {"llm_ep", "--llm-ep", "ep", HCG_MEGATRON_INT,
                   HCG_MEGATRON_MIMO, 1, 1},
    [MG_LLM_ETP] = {"llm_expt_tp", "--llm-expt-tp", "expt_tp", HCG_MEGATRON_INT,
                    HCG_MEGATRON_MIMO, 1, 1},
    [MG_LLM_ONLY] = {"llm_only", "--llm-only", "the encoder grids (none)",
                     HCG_MEGATRON_FLAG, HCG_MEGATRON_MIMO, 0, 0},
    [MG_DP] = {"data_parallel_size", NULL, "dp", HCG_MEGATRON_DERIVED,
               HCG_MEGATRON_SINGLE, 1, 0},
    [MG_GTP] = {"gtp_weight_remat_size", NULL, "gtp_remat",
                HCG_MEGATRON_DERIVED, HCG_MEGATRON_ANY, 1, 0},
    [MG_EGTP] = {"expert_gtp_weight_remat_size", NULL, "expt_gtp_remat",
                 HCG_MEGATRON_DERIVED, HCG_MEGATRON_ANY, 1, 0},
    [MG_WORLD] = {"world_size", NULL, "the world", HCG_MEGATRON_DERIVED,
                  HCG_MEGATRON_SINGLE, 1, 0},
};

int hcg_megatron_arg_count(void) { return MG_COUNT; }

const hcg_megatron_arg *hcg_megatron_arg_at(int index) {
  return index >= 0 && index < MG_COUNT ? &mg_arg[index] : NULL;
}

/* One call of hcg_megatron_layout: its input and where errors go. */
struct mg_run {
  const char *args;
  const hcg_megatron_config *cfg;
  hcg_error *err;
};

/* Fails with code: at column (1-based) of ARGS with a caret, or, column 0,
 * about the arguments as a whole. */
__attribute__((format(printf, 4, 5))) static int
mg_fail(const struct mg_run *run, int code, int column, const char *fmt, ...) {
  char what[HCG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (column)
    return hcg__fail_col(run->err, code, "megatron arguments", run->args,
                         (size_t)column - 1, "%s", what);
  return hcg__fail(run->err, code, "megatron arguments: %s", what);
}

__attribute__((format(printf, 2, 3))) static void
mg_warn(const struct mg_run *run, const char *fmt, ...) {
  if (!run->cfg->warn)
    return;
  char what[HCG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  run->cfg->warn(run->cfg->warn_arg, what);
}

struct mg_args {
  int given[MG_COUNT]; /* column (1-based) of the last use; 0: not given */
  int value[MG_COUNT]; /* the value given, else the default */
};

static int is_space(char c) { return isspace((unsigned char)c) != 0; }

/* The next word of s at or after *pos: [*start, *end); 0 at the end. */
static int next_word(const char *s, size_t *pos, size_t *start, size_t *end) {
  size_t i = *pos;
  while (s[i] && is_space(s[i]))
    i++;
  if (!s[i])
    return 0;
  *start = i;
  while (s[i] && !is_space(s[i]))
    i++;
  *end = i;
  *pos = i;
  return 1;
}

/* A decimal int of [start, end), as Python's int() reads one ('+' or '-',
 * digits); -1 when it is not one or does not fit an int. */
static int word_int(const char *s, size_t start, size_t end, int *out) {
  size_t i = start;
  int neg = 0;
  if (i < end && (s[i] == '+' || s[i] == '-'))
    neg = s[i++] == '-';
  if (i == end)
    return -1;
  long long v = 0;
  for (; i < end; i++) {
    if (s[i] < '0' || s[i] > '9')
      return -1;
    v = v * 10 + (s[i] - '0');
    if (v > (long long)INT_MAX + 1)
      return -1;
  }
  v = neg ? -v : v;
  if (v > INT_MAX || v < INT_MIN)
    return -1;
  *out = (int)v;
  return 0;
}

static int find_option(const char *s, size_t start, size_t end) {
  for (int id = 0; id < MG_COUNT; id++)
    if (mg_arg[id].option && strlen(mg_arg[id].option) == end - start &&
        !strncmp(mg_arg[id].option, s + start, end - start))
      return id;
  return -1;
}

/* The value of an option that takes one, after '=' (eq) or as the next
 * word, into a; *pos moves past what was read. */
static int read_value(const struct mg_run *run, int id, const char *eq,
                      size_t name_end, size_t end, size_t *pos,
                      struct mg_args *a) {
  const char *s = run->args, *name = mg_arg[id].option;
  int column = a->given[id];
  size_t vstart, vend;
  if (eq) {
    vstart = name_end + 1;
    vend = end;
  } else if (!next_word(s, pos, &vstart, &vend) ||
             (vend - vstart > 1 && s[vstart] == '-' &&
              !isdigit((unsigned char)s[vstart + 1]))) {
    return mg_fail(run, HCG_ESYNTAX, column, "%s needs a value", name);
  }
  int v;
  if (vstart == vend || word_int(s, vstart, vend, &v))
    return mg_fail(run, HCG_ESYNTAX, (int)vstart + 1,
                   "%s wants an integer, got '%.*s'", name,
                   (int)(vend - vstart > 40 ? 40 : vend - vstart), s + vstart);
  if (v < mg_arg[id].min)
    return mg_fail(
        run, HCG_ESYNTAX, (int)vstart + 1, "%s wants %s, got %d", name,
        mg_arg[id].min ? "a positive integer" : "an integer of at least 0", v);
  a->value[id] = v;
  if (mg_arg[id].kind == HCG_MEGATRON_INTS && !eq) {
    /* nargs='+': more integers may follow. */
    size_t save = *pos;
    while (next_word(s, pos, &vstart, &vend) && !word_int(s, vstart, vend, &v))
      save = *pos;
    *pos = save;
  }
  return 0;
}

/* Reads the parallel arguments of ARGS; other words are skipped. A later
 * use of an option replaces an earlier one, as with argparse. */
static int mg_parse(const struct mg_run *run, struct mg_args *a) {
  const char *s = run->args;
  for (int id = 0; id < MG_COUNT; id++) {
    a->given[id] = 0;
    a->value[id] = mg_arg[id].dflt;
  }
  if (strlen(s) > MG_MAX_ARGS)
    return mg_fail(run, HCG_ELIMIT, 0, "the arguments are longer than %d bytes",
                   MG_MAX_ARGS);
  size_t pos = 0, start, end;
  while (next_word(s, &pos, &start, &end)) {
    if (end - start < 3 || s[start] != '-' || s[start + 1] != '-')
      continue;
    const char *eq = memchr(s + start, '=', end - start);
    size_t name_end = eq ? (size_t)(eq - s) : end;
    int id = find_option(s, start, name_end);
    if (id < 0)
      continue;
    a->given[id] = (int)start + 1;
    if (mg_arg[id].kind == HCG_MEGATRON_FLAG) {
      if (eq)
        return mg_fail(run, HCG_ESYNTAX, a->given[id],
                       "%s is a flag and takes no value", mg_arg[id].option);
      a->value[id] = 1;
    } else if (read_value(run, id, eq, name_end, end, &pos, a)) {
      return -1;
    }
  }
  return 0;
}

/* gtp_remat from a weight-shard count, as Megatron's
 * resolve_tensor_parallel_weight_shards: shards / tp, shards a multiple of
 * tp; 1 when not given. */
static int remat_size(const struct mg_run *run, const struct mg_args *a,
                      int shards_id, int tp, const char *tp_what, int *out) {
  *out = 1;
  if (!a->given[shards_id])
    return 0;
  int shards = a->value[shards_id];
  if (shards < tp || shards % tp)
    return mg_fail(run, HCG_ELAYOUT, a->given[shards_id],
                   "%s %d must be a multiple of %s %d (Megatron: the weight "
                   "shards are %s times gtp_remat)",
                   mg_arg[shards_id].option, shards, tp_what, tp, tp_what);
  *out = shards / tp;
  return 0;
}

/* The product of n factors, or -1 when it exceeds limit. */
static long long product(const int *f, int n, long long limit) {
  long long p = 1;
  for (int i = 0; i < n; i++) {
    p *= f[i];
    if (p > limit)
      return -1;
  }
  return p;
}

struct mg_grid {
  const char *name;
  int offset, size;
  int tp, gtp, cp, dp, pp; /* the base */
  int etp, ep, egtp, edp;  /* the expert view (pp shared) */
  int pp_before_dp;        /* --use-tp-pp-dp-mapping */
};

/* Appends a grid and its expert view to out. */
static int put_grid(char *out, size_t cap, size_t *len,
                    const struct mg_grid *g) {
  char tail[64], etail[64];
  if (g->pp_before_dp) {
    snprintf(tail, sizeof tail, "pp=%d,dp=%d", g->pp, g->dp);
    snprintf(etail, sizeof etail, "pp,expt_dp=%d", g->edp);
  } else {
    snprintf(tail, sizeof tail, "dp=%d,pp=%d", g->dp, g->pp);
    snprintf(etail, sizeof etail, "expt_dp=%d,pp", g->edp);
  }
  int n = snprintf(out + *len, cap - *len,
                   "%s%s@%d:tp=%d,gtp_remat=%d,cp=%d,%s;"
                   "%s/expert:expt_tp=%d,ep=%d,expt_gtp_remat=%d,%s",
                   *len ? ";" : "", g->name, g->offset, g->tp, g->gtp, g->cp,
                   tail, g->name, g->etp, g->ep, g->egtp, etail);
  if (n < 0 || (size_t)n >= cap - *len)
    return -1;
  *len += (size_t)n;
  return 0;
}

/* "--a 2, --b 3" for the given options among ids (defaults left out). */
static void given_list(char *buf, size_t cap, const struct mg_args *a,
                       const int *ids, int n) {
  size_t len = 0;
  buf[0] = '\0';
  for (int i = 0; i < n && len < cap; i++) {
    if (!a->given[ids[i]])
      continue;
    int w = snprintf(buf + len, cap - len, "%s%s %d", len ? ", " : "",
                     mg_arg[ids[i]].option, a->value[ids[i]]);
    if (w < 0)
      break;
    len += (size_t)w;
  }
  if (len >= cap && cap > 4)
    strcpy(buf + cap - 4, "...");
}

/* Refuses a world of `ranks` that the product of dims (tp, gtp, cp, pp or
 * their expert counterparts) does not divide; *model is the product. */
static int divides(const struct mg_run *run, const struct mg_args *a,
                   const int dims[4], const int ids[4], int expert, int mimo,
                   int ranks, long long *model) {
  static const char *const what[2] = {"tp*gtp_remat*cp*pp",
                                      "expt_tp*ep*expt_gtp_remat*pp"};
  const char *whole = mimo ? "language module" : "world";
  *model = product(dims, 4, ranks);
  if (*model >= 0 && ranks % *model == 0)
    return 0;
  char why[320];
  given_list(why, sizeof why, a, ids, 4);
  if (*model < 0)
    return mg_fail(run, HCG_ELAYOUT, 0,
                   "%s = %d*%d*%d*%d exceeds the %d ranks of the %s (%s)",
                   what[expert], dims[0], dims[1], dims[2], dims[3], ranks,
                   whole, why);
  if (!expert)
    return mg_fail(run, HCG_ELAYOUT, 0,
                   "the %s of %d ranks is not divisible by %s = %lld (%s)",
                   whole, ranks, what[0], *model, why);
  return mg_fail(run, HCG_ELAYOUT, 0,
                 "the %s of %d ranks is not divisible by %s = %lld (%s; the "
                 "experts' tensor-parallel size is %d)",
                 whole, ranks, what[1], *model, why, dims[0]);
}

/* The dims of one model (or the language module): dp and expt_dp are what
 * `ranks` leaves. */
static int model_grid(const struct mg_run *run, const struct mg_args *a,
                      int ranks, int mimo, struct mg_grid *g) {
  int tp = a->value[mimo ? MG_LLM_TP : MG_TP];
  int cp = a->value[mimo ? MG_LLM_CP : MG_CP];
  int pp = a->value[mimo ? MG_LLM_PP : MG_PP];
  int ep = a->value[mimo ? MG_LLM_EP : MG_EP];
  int etp_id = mimo ? MG_LLM_ETP : MG_ETP;
  /* One model: experts default to tp (validate_args); MIMO: to 1. */
  int etp = a->given[etp_id] || mimo ? a->value[etp_id] : tp;
  int gtp, egtp;
  if (remat_size(run, a, MG_TP_SHARDS, tp,
                 mimo ? "--llm-tp" : "--tensor-model-parallel-size", &gtp) ||
      remat_size(run, a, MG_ETP_SHARDS, etp,
                 mimo ? "--llm-expt-tp" : "the expert tensor-parallel size",
                 &egtp))
    return -1;
  int dense[] = {tp, gtp, cp, pp};
  int ids[] = {MG_TP, MG_TP_SHARDS, MG_CP, MG_PP};
  int mids[] = {MG_LLM_TP, MG_TP_SHARDS, MG_LLM_CP, MG_LLM_PP};
  long long model, emodel;
  if (divides(run, a, dense, mimo ? mids : ids, 0, mimo, ranks, &model))
    return -1;
  int expert[] = {etp, ep, egtp, pp};
  int eids[] = {MG_ETP, MG_EP, MG_ETP_SHARDS, MG_PP};
  int emids[] = {MG_LLM_ETP, MG_LLM_EP, MG_ETP_SHARDS, MG_LLM_PP};
  if (divides(run, a, expert, mimo ? emids : eids, 1, mimo, ranks, &emodel))
    return -1;
  *g = (struct mg_grid){.name = g->name,
                        .offset = g->offset,
                        .size = ranks,
                        .tp = tp,
                        .gtp = gtp,
                        .cp = cp,
                        .dp = (int)(ranks / model),
                        .pp = pp,
                        .etp = etp,
                        .ep = ep,
                        .egtp = egtp,
                        .edp = (int)(ranks / emodel),
                        .pp_before_dp = !mimo && a->value[MG_TP_PP_DP]};
  if (g->pp_before_dp && pp > 1 && g->edp != g->dp)
    return mg_fail(run, HCG_ELAYOUT, a->given[MG_TP_PP_DP],
                   "--use-tp-pp-dp-mapping with pipeline parallelism (pp %d) "
                   "needs the experts' data-parallel size (%d) to equal the "
                   "data-parallel size (%d), as Megatron asserts",
                   pp, g->edp, g->dp);
  return 0;
}

/* Refusals and warnings about arguments hcg cannot honour or that the MIMO
 * arguments replace. */
static int check_unsupported(const struct mg_run *run, const struct mg_args *a,
                             int mimo) {
  if (a->given[MG_MODEL_PARALLEL])
    return mg_fail(run, HCG_ENOTSUP, a->given[MG_MODEL_PARALLEL],
                   "--model-parallel-size is Megatron's old argument, which "
                   "it no longer accepts: use --tensor-model-parallel-size");
  if (a->value[MG_DIST_OPT] > 1)
    return mg_fail(run, HCG_ENOTSUP, a->given[MG_DIST_OPT],
                   "--num-distributed-optimizer-instances %d: hcg's "
                   "collection has one distributed-optimizer instance "
                   "(intra_dist_opt is the whole grid), so it cannot give "
                   "Megatron's groups for %d",
                   a->value[MG_DIST_OPT], a->value[MG_DIST_OPT]);
  if (a->given[MG_HCP])
    mg_warn(run, "--hierarchical-context-parallel-sizes: hcg makes no "
                 "hierarchical context-parallel groups (the layout is the "
                 "same; hcg.torch gives hcp=None)");
  if (!mimo)
    return 0;
  static const int stock[] = {MG_TP, MG_PP, MG_CP, MG_EP, MG_ETP};
  static const int instead[] = {MG_LLM_TP, MG_LLM_PP, MG_LLM_CP, MG_LLM_EP,
                                MG_LLM_ETP};
  for (size_t i = 0; i < sizeof stock / sizeof *stock; i++)
    if (a->given[stock[i]])
      mg_warn(run,
              "%s is not used with Megatron's MIMO arguments: the language "
              "module takes %s (Megatron's MIMO example sets the former from "
              "the latter)",
              mg_arg[stock[i]].option, mg_arg[instead[i]].option);
  if (a->given[MG_TP_PP_DP])
    mg_warn(run, "--use-tp-pp-dp-mapping is not used with Megatron's MIMO "
                 "arguments: its topology orders every module tp, gtp_remat, "
                 "cp, dp, pp");
  return 0;
}

/* MIMO's language module at --llm-offset: its size is its own product. */
static int language_grid(const struct mg_run *run, const struct mg_args *a,
                         int world, struct mg_grid *lang) {
  int gtp;
  if (remat_size(run, a, MG_TP_SHARDS, a->value[MG_LLM_TP], "--llm-tp", &gtp))
    return -1;
  int dims[] = {a->value[MG_LLM_TP], gtp, a->value[MG_LLM_CP],
                a->value[MG_LLM_PP], a->value[MG_LLM_DP]};
  long long llm = product(dims, 5, world);
  int offset = a->value[MG_LLM_OFFSET];
  if (llm < 0 || offset > world - llm)
    return mg_fail(
        run, HCG_ELAYOUT, 0,
        "the language module (--llm-offset %d, tp*gtp_remat*cp*pp*dp "
        "= %d*%d*%d*%d*%d ranks) does not fit the world of %d ranks",
        offset, dims[0], dims[1], dims[2], dims[3], dims[4], world);
  lang->name = "language";
  lang->offset = offset;
  return model_grid(run, a, (int)llm, 1, lang);
}

/* MIMO's encoder at rank 0, whose span and the language module's must be
 * equal or disjoint and cover the world. */
static int encoder_grid(const struct mg_run *run, const struct mg_args *a,
                        int world, const char *name, const struct mg_grid *lang,
                        struct mg_grid *enc) {
  int edims[] = {a->value[MG_ENC_TP], a->value[MG_ENC_DP]};
  long long size = product(edims, 2, world);
  if (size < 0)
    return mg_fail(run, HCG_ELAYOUT, 0,
                   "the encoder (--encoder-tp %d * --encoder-dp %d ranks) "
                   "does not fit the world of %d ranks",
                   edims[0], edims[1], world);
  long long lend = (long long)lang->offset + lang->size;
  int same = lang->offset == 0 && size == lang->size;
  int disjoint = size <= lang->offset;
  if (!same && !disjoint)
    return mg_fail(run, HCG_ELAYOUT, 0,
                   "the module grids must either fully share ranks or be "
                   "disjoint: %s [0, %lld), language [%d, %lld)",
                   name, size, lang->offset, lend);
  long long covered = same ? size : size + lang->size;
  long long last = lend > size ? lend : size;
  if (covered != world || last != world)
    return mg_fail(run, HCG_ELAYOUT, 0,
                   "the module grids must cover the world [0, %d) with no "
                   "gaps: %s [0, %lld), language [%d, %lld)",
                   world, name, size, lang->offset, lend);
  *enc = (struct mg_grid){.name = name,
                          .size = (int)size,
                          .tp = edims[0],
                          .gtp = 1,
                          .cp = 1,
                          .dp = edims[1],
                          .pp = 1,
                          .etp = 1,
                          .ep = 1,
                          .egtp = 1,
                          .edp = (int)size};
  return 0;
}

/* The layout text of the arguments (not yet checked by the parser). */
static int mg_text(const struct mg_run *run, const struct mg_args *a, char *out,
                   size_t cap) {
  int world = run->cfg->world_size, mimo = 0;
  for (int id = 0; id < MG_COUNT; id++)
    mimo |= mg_arg[id].scope == HCG_MEGATRON_MIMO && a->given[id];
  if (check_unsupported(run, a, mimo))
    return -1;
  size_t len = 0;
  out[0] = '\0';
  struct mg_grid lang = {.name = "world"}, enc;
  if (!mimo) {
    if (model_grid(run, a, world, 0, &lang))
      return -1;
  } else if (language_grid(run, a, world, &lang)) {
    return -1;
  } else if (a->value[MG_LLM_ONLY]) {
    if (lang.offset != 0)
      return mg_fail(run, HCG_ELAYOUT, a->given[MG_LLM_OFFSET],
                     "--llm-only needs --llm-offset 0 (got %d): the language "
                     "module alone must cover the world",
                     lang.offset);
    if (lang.size != world)
      return mg_fail(run, HCG_ELAYOUT, a->given[MG_LLM_ONLY],
                     "--llm-only: the language module has %d ranks "
                     "(tp*gtp_remat*cp*pp*dp) but the world has %d",
                     lang.size, world);
  } else {
    const char *name =
        run->cfg->encoder_name ? run->cfg->encoder_name : "encoder";
    if (encoder_grid(run, a, world, name, &lang, &enc))
      return -1;
    if (put_grid(out, cap, &len, &enc))
      return mg_fail(run, HCG_ELIMIT, 0, "layout too long");
  }
  if (put_grid(out, cap, &len, &lang))
    return mg_fail(run, HCG_ELIMIT, 0, "layout too long");
  return 0;
}

int hcg_megatron_layout(const char *args, const hcg_megatron_config *cfg,
                        hcg_layout **out, hcg_error *err) {
  if (out)
    *out = NULL;
  hcg_megatron_config c;
  static const hcg_megatron_config defaults = HCG_MEGATRON_CONFIG_INIT;
  int rc = HCG__CONFIG_READ(hcg_megatron_config, cfg, &defaults, &c, err);
  if (rc)
    return rc;
  if (!args || !out || c.world_size < 1)
    return hcg__fail(err, HCG_EINVAL, "hcg_megatron_layout: %s",
                     !args || !out ? "invalid argument"
                                   : "world_size must be a positive number of "
                                     "ranks (Megatron's data-parallel sizes "
                                     "are what the world leaves)");
  /* The steps fail with -1, their error in e. */
  hcg_error e = HCG_ERROR_INIT;
  struct mg_run run = {args, &c, &e};
  struct mg_args a;
  char text[MG_MAX_LAYOUT];
  if (mg_parse(&run, &a) || mg_text(&run, &a, text, sizeof text)) {
    if (err)
      *err = e;
    return e.code;
  }
  hcg_layout_config lc = HCG_LAYOUT_CONFIG_INIT;
  lc.world_size = c.world_size;
  hcg_error perr = HCG_ERROR_INIT;
  rc = hcg_layout_parse(text, strlen(text), &lc, out, &perr);
  if (rc) /* a bad encoder name, or a size the parser refuses */
    return hcg__fail(err, rc, "the layout of these arguments is refused: %s",
                     perr.message);
  return HCG_OK;
}

/* ---------------------------------------------------------------------------
 * A layout back to the arguments (hcg_megatron_values): the dims of each
 * grid as Megatron's ModuleGridSpec, then the arguments those sizes are.
 */

/* Megatron's two orders of a view's dims: [0] dp before pp, [1] pp before
 * dp (--use-tp-pp-dp-mapping). */
static const char *const mg_base_order[2][5] = {
    {"tp", "gtp_remat", "cp", "dp", "pp"},
    {"tp", "gtp_remat", "cp", "pp", "dp"}};
static const char *const mg_expert_order[2][5] = {
    {"expt_tp", "ep", "expt_gtp_remat", "expt_dp", "pp"},
    {"expt_tp", "ep", "expt_gtp_remat", "pp", "expt_dp"}};

#define MG_EXPERT_VIEW "expert"
#define MG_LANGUAGE "language"

/* Position of name among the five of order, or -1. */
static int order_pos(const char *const order[5], const char *name) {
  for (int i = 0; i < 5; i++)
    if (!strcmp(order[i], name))
      return i;
  return -1;
}

/* A view's size of name; 1 when the view lacks it. */
static int view_size(const struct hcg_view *v, const char *name) {
  for (int d = 0; d < v->ndims; d++)
    if (!strcmp(v->dims[d].name, name))
      return v->dims[d].size;
  return 1;
}

/* Fails for a dim of the view that Megatron lacks there (not in order). */
static int known_dims(const struct hcg_view *v, const char *const order[5],
                      const char *what, hcg_error *err) {
  for (int d = 0; d < v->ndims; d++)
    if (order_pos(order, v->dims[d].name) < 0)
      return hcg__fail(err, HCG_ELAYOUT,
                       "%s has dim '%s', which Megatron does not have there "
                       "(its dims: %s, %s, %s, %s, %s)",
                       what, v->dims[d].name, order[0], order[1], order[2],
                       order[3], order[4]);
  return HCG_OK;
}

/* Which of the two orders the view's dims of size > 1 follow (all known):
 * *before (pp before dp) is 1 or 0 when pp and dp (named dp) are both
 * larger than 1, else -1. Fails when they follow neither. */
static int view_order(const struct hcg_view *v, const char *const orders[2][5],
                      const char *dp, const char *what, int *before,
                      hcg_error *err) {
  int fits[2];
  for (int k = 0; k < 2; k++) {
    int last = -1;
    fits[k] = 1;
    for (int d = 0; d < v->ndims && fits[k]; d++) {
      if (v->dims[d].size <= 1)
        continue; /* a size-1 dim changes no group wherever it stands */
      int at = order_pos(orders[k], v->dims[d].name);
      fits[k] = at > last;
      last = at;
    }
  }
  if (!fits[0] && !fits[1]) {
    char big[HCG_MAX_DIMS * HCG_NAME_BUF + 1] = "";
    struct hcg_buf b;
    hcg__buf_init(&b, big, sizeof big);
    for (int d = 0; d < v->ndims; d++)
      if (v->dims[d].size > 1)
        hcg__buf_printf(&b, "%s%s", b.len ? "," : "", v->dims[d].name);
    return hcg__fail(err, HCG_ELAYOUT,
                     "%s orders its dims %s; Megatron orders them "
                     "%s,%s,%s,%s,%s (or %s,%s,%s,%s,%s with "
                     "--use-tp-pp-dp-mapping)",
                     what, big, orders[0][0], orders[0][1], orders[0][2],
                     orders[0][3], orders[0][4], orders[1][0], orders[1][1],
                     orders[1][2], orders[1][3], orders[1][4]);
  }
  *before = view_size(v, "pp") > 1 && view_size(v, dp) > 1 ? fits[1] : -1;
  return HCG_OK;
}

int hcg_megatron_grid_sizes(const hcg_layout *layout, int grid,
                            hcg_megatron_sizes *out, hcg_error *err) {
  if (!layout || !out || grid < 0 || grid >= layout->ngrids)
    return hcg__fail(err, HCG_EINVAL, "hcg_megatron_grid_sizes: %s",
                     !layout || !out ? "invalid argument"
                                     : "grid index out of range");
  const struct hcg_grid *g = &layout->grids[grid];
  const struct hcg_view *base = &g->views[0];
  char what[HCG_NAME_BUF * 2 + 16];
  snprintf(what, sizeof what, "grid '%s'", g->name);
  hcg_megatron_sizes s = {0};
  int rc = known_dims(base, mg_base_order[0], what, err);
  if (!rc)
    rc = view_order(base, mg_base_order, "dp", what, &s.pp_before_dp, err);
  if (rc)
    return rc;
  s.tp = view_size(base, "tp");
  s.gtp_remat = view_size(base, "gtp_remat");
  s.cp = view_size(base, "cp");
  s.dp = view_size(base, "dp");
  s.pp = view_size(base, "pp");
  const struct hcg_view *exp = NULL;
  for (int v = 1; v < g->nviews && !exp; v++)
    if (!strcmp(g->views[v].name, MG_EXPERT_VIEW))
      exp = &g->views[v];
  if (exp) {
    snprintf(what, sizeof what, "view '%s/%s'", g->name, MG_EXPERT_VIEW);
    int shared = 0;
    for (int d = 0; d < exp->ndims; d++)
      shared |= !strcmp(exp->dims[d].name, "pp") && exp->dims[d].shared;
    int before;
    rc = known_dims(exp, mg_expert_order[0], what, err);
    if (rc)
      return rc;
    if (s.pp > 1 && !shared)
      return hcg__fail(err, HCG_ELAYOUT,
                       "%s does not share pp with the base; Megatron's expert "
                       "grid does",
                       what);
    rc = view_order(exp, mg_expert_order, "expt_dp", what, &before, err);
    if (rc)
      return rc;
    /* The shared pp enumerates alike in both views, so where both orders
     * matter they agree. */
    if (s.pp_before_dp < 0)
      s.pp_before_dp = before;
    s.expert = 1;
    s.ep = view_size(exp, "ep");
    s.expt_tp = view_size(exp, "expt_tp");
    s.expt_gtp_remat = view_size(exp, "expt_gtp_remat");
    s.expt_dp = view_size(exp, "expt_dp");
  }
  *out = s;
  return HCG_OK;
}

/* The values being written: out[0 .. n-1] of cap. */
struct mg_values {
  hcg_megatron_value *out;
  int cap, n, grid;
};

/* Appends arg = value for the current grid; -1 when out is full. */
static int put_value(struct mg_values *vs, int arg, int value) {
  if (vs->n >= vs->cap)
    return -1;
  vs->out[vs->n++] = (hcg_megatron_value){arg, value, vs->grid};
  return 0;
}

/* tp * gtp_remat: both divide the grid's size, so the product is at most
 * that size and fits an int. */
static int shards(int tp, int remat) { return (int)((long long)tp * remat); }

/* One model spanning the world: Megatron's stock arguments. */
static int single_values(const hcg_layout *layout, int grid,
                         const hcg_megatron_sizes *s, struct mg_values *vs,
                         hcg_error *err) {
  const struct hcg_grid *g = &layout->grids[grid];
  if (g->offset != 0 || g->size != layout->world)
    return hcg__fail(err, HCG_ELAYOUT,
                     "grid '%s' spans [%d, %lld) of a world of %d: one "
                     "Megatron model spans them all",
                     g->name, g->offset, (long long)g->offset + g->size,
                     layout->world);
  vs->grid = grid;
  if (put_value(vs, MG_TP, s->tp) || put_value(vs, MG_PP, s->pp) ||
      put_value(vs, MG_CP, s->cp) || put_value(vs, MG_DP, s->dp) ||
      put_value(vs, MG_TP_SHARDS, shards(s->tp, s->gtp_remat)) ||
      put_value(vs, MG_GTP, s->gtp_remat) ||
      put_value(vs, MG_WORLD, layout->world) ||
      put_value(vs, MG_EP, s->expert ? s->ep : 1))
    return -1;
  if (s->expert &&
      (put_value(vs, MG_ETP, s->expt_tp) ||
       put_value(vs, MG_ETP_SHARDS, shards(s->expt_tp, s->expt_gtp_remat)) ||
       put_value(vs, MG_EGTP, s->expt_gtp_remat)))
    return -1;
  if (s->pp_before_dp >= 0 && put_value(vs, MG_TP_PP_DP, s->pp_before_dp))
    return -1;
  return 0;
}

/* Megatron's MIMO example: the language module's arguments, and the
 * encoder's when there is one encoder of tp and dp only, at rank 0. */
static int mimo_values(const hcg_layout *layout, int lang,
                       const hcg_megatron_sizes *sizes, struct mg_values *vs,
                       hcg_error *err) {
  const hcg_megatron_sizes *s = &sizes[lang];
  if (s->pp_before_dp == 1)
    return hcg__fail(err, HCG_ELAYOUT,
                     "grid '%s' orders pp before dp; Megatron's MIMO topology "
                     "orders every module tp, gtp_remat, cp, dp, pp",
                     MG_LANGUAGE);
  vs->grid = lang;
  if (put_value(vs, MG_LLM_OFFSET, layout->grids[lang].offset) ||
      put_value(vs, MG_LLM_TP, s->tp) || put_value(vs, MG_LLM_CP, s->cp) ||
      put_value(vs, MG_LLM_PP, s->pp) || put_value(vs, MG_LLM_DP, s->dp) ||
      put_value(vs, MG_LLM_EP, s->expert ? s->ep : 1) ||
      put_value(vs, MG_LLM_ONLY, layout->ngrids == 1) ||
      put_value(vs, MG_TP_SHARDS, shards(s->tp, s->gtp_remat)) ||
      put_value(vs, MG_GTP, s->gtp_remat))
    return -1;
  if (s->expert &&
      (put_value(vs, MG_LLM_ETP, s->expt_tp) ||
       put_value(vs, MG_ETP_SHARDS, shards(s->expt_tp, s->expt_gtp_remat)) ||
       put_value(vs, MG_EGTP, s->expt_gtp_remat)))
    return -1;
  if (layout->ngrids != 2)
    return 0;
  int enc = lang ? 0 : 1;
  const hcg_megatron_sizes *e = &sizes[enc];
  if (layout->grids[enc].offset != 0 || e->cp != 1 || e->pp != 1 ||
      e->gtp_remat != 1 || (e->expert && (e->ep != 1 || e->expt_tp != 1)))
    return 0;
  vs->grid = enc;
  if (put_value(vs, MG_ENC_TP, e->tp) || put_value(vs, MG_ENC_DP, e->dp))
    return -1;
  return 0;
}

int hcg_megatron_values(const hcg_layout *layout, hcg_megatron_value *out,
                        int cap, int *count, hcg_error *err) {
  if (count)
    *count = 0;
  if (!layout || !out || !count || cap < 0)
    return hcg__fail(err, HCG_EINVAL, "hcg_megatron_values: invalid argument");
  hcg_megatron_sizes sizes[HCG_MAX_GRIDS];
  int lang = -1;
  for (int g = 0; g < layout->ngrids; g++) {
    int rc = hcg_megatron_grid_sizes(layout, g, &sizes[g], err);
    if (rc)
      return rc;
    if (lang < 0 && !strcmp(layout->grids[g].name, MG_LANGUAGE))
      lang = g;
  }
  struct mg_values vs = {out, cap, 0, 0};
  int rc;
  if (lang >= 0) {
    rc = mimo_values(layout, lang, sizes, &vs, err);
  } else if (layout->ngrids == 1) {
    rc = single_values(layout, 0, &sizes[0], &vs, err);
  } else {
    char names[HCG_MAX_GRIDS * (HCG_NAME_BUF + 2)] = "";
    struct hcg_buf b;
    hcg__buf_init(&b, names, sizeof names);
    for (int g = 0; g < layout->ngrids; g++)
      hcg__buf_printf(&b, "%s%s", g ? ", " : "", layout->grids[g].name);
    return hcg__fail(err, HCG_ELAYOUT,
                     "a layout of several grids is Megatron's MIMO topology "
                     "only with a grid named '%s' (the language module); "
                     "grids: %s",
                     MG_LANGUAGE, names);
  }
  if (rc > 0)
    return rc;
  if (rc < 0)
    return hcg__fail(err, HCG_ERANGE,
                     "hcg_megatron_values: %d values do not hold what the "
                     "layout determines",
                     cap);
  *count = vs.n;
  return HCG_OK;
}
