/*
 * megatron.c - `hcg layout --megatron ARGS -n N`: the hcg layout that
 * Megatron-LM builds from its parallel arguments, so that a job names its
 * sizes once:
 *
 *   srun --hcg-layout="$(hcg layout --megatron "$ARGS" -n $SLURM_NTASKS)" \
 *        python train.py $ARGS
 *
 * ARGS is split at white space, as the shell splits an unquoted $ARGS. Only
 * Megatron's parallel arguments are read; every other word is skipped.
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
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ARGS longer than this is refused (a command line is shorter). */
#define MG_MAX_ARGS (1 << 20)

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
  MG_ENC_TP, /* the first MIMO argument */
  MG_ENC_DP,
  MG_LLM_OFFSET,
  MG_LLM_TP,
  MG_LLM_CP,
  MG_LLM_PP,
  MG_LLM_DP,
  MG_LLM_EP,
  MG_LLM_ETP,
  MG_LLM_ONLY,
  MG_COUNT
};

enum mg_kind { MG_INT, MG_FLAG, MG_INTS };

static const struct {
  const char *name;
  enum mg_kind kind;
  int min;  /* smallest value accepted */
  int dflt; /* value when not given (MIMO: the example's default) */
} mg_opt[MG_COUNT] = {
    [MG_TP] = {"--tensor-model-parallel-size", MG_INT, 1, 1},
    [MG_PP] = {"--pipeline-model-parallel-size", MG_INT, 1, 1},
    [MG_CP] = {"--context-parallel-size", MG_INT, 1, 1},
    [MG_EP] = {"--expert-model-parallel-size", MG_INT, 1, 1},
    [MG_ETP] = {"--expert-tensor-parallel-size", MG_INT, 1, 0},
    [MG_TP_SHARDS] = {"--tensor-parallel-num-weight-shards", MG_INT, 1, 0},
    [MG_ETP_SHARDS] = {"--expert-tensor-parallel-num-weight-shards", MG_INT, 1,
                       0},
    [MG_TP_PP_DP] = {"--use-tp-pp-dp-mapping", MG_FLAG, 0, 0},
    [MG_DIST_OPT] = {"--num-distributed-optimizer-instances", MG_INT, 1, 1},
    [MG_MODEL_PARALLEL] = {"--model-parallel-size", MG_INT, 1, 0},
    [MG_HCP] = {"--hierarchical-context-parallel-sizes", MG_INTS, 1, 0},
    [MG_ENC_TP] = {"--encoder-tp", MG_INT, 1, 2},
    [MG_ENC_DP] = {"--encoder-dp", MG_INT, 1, 2},
    [MG_LLM_OFFSET] = {"--llm-offset", MG_INT, 0, 4},
    [MG_LLM_TP] = {"--llm-tp", MG_INT, 1, 2},
    [MG_LLM_CP] = {"--llm-cp", MG_INT, 1, 1},
    [MG_LLM_PP] = {"--llm-pp", MG_INT, 1, 1},
    [MG_LLM_DP] = {"--llm-dp", MG_INT, 1, 2},
    [MG_LLM_EP] = {"--llm-ep", MG_INT, 1, 1},
    [MG_LLM_ETP] = {"--llm-expt-tp", MG_INT, 1, 1},
    [MG_LLM_ONLY] = {"--llm-only", MG_FLAG, 0, 0},
};

struct mg_args {
  int given[MG_COUNT]; /* column (1-based) of the last use; 0: not given */
  int value[MG_COUNT]; /* the value given, else the default */
};

struct mg_error {
  int column; /* 1-based column in ARGS, or 0 */
  char message[640];
};

__attribute__((format(printf, 3, 4))) static int
mg_fail(struct mg_error *e, int column, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  e->column = column;
  return -1;
}

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
    if (strlen(mg_opt[id].name) == end - start &&
        !strncmp(mg_opt[id].name, s + start, end - start))
      return id;
  return -1;
}

/* Reads the parallel arguments of ARGS; other words are skipped. A later
 * use of an option replaces an earlier one, as with argparse. */
static int mg_parse(const char *s, struct mg_args *a, struct mg_error *e) {
  for (int id = 0; id < MG_COUNT; id++) {
    a->given[id] = 0;
    a->value[id] = mg_opt[id].dflt;
  }
  if (strlen(s) > MG_MAX_ARGS)
    return mg_fail(e, 0, "the arguments are longer than %d bytes", MG_MAX_ARGS);
  size_t pos = 0, start, end;
  while (next_word(s, &pos, &start, &end)) {
    if (end - start < 3 || s[start] != '-' || s[start + 1] != '-')
      continue;
    const char *eq = memchr(s + start, '=', end - start);
    size_t name_end = eq ? (size_t)(eq - s) : end;
    int id = find_option(s, start, name_end);
    if (id < 0)
      continue;
    const char *name = mg_opt[id].name;
    int column = (int)start + 1;
    if (mg_opt[id].kind == MG_FLAG) {
      if (eq)
        return mg_fail(e, column, "%s is a flag and takes no value", name);
      a->given[id] = column;
      a->value[id] = 1;
      continue;
    }
    /* The value: after '=', else the next word. */
    size_t vstart, vend;
    if (eq) {
      vstart = name_end + 1;
      vend = end;
    } else if (!next_word(s, &pos, &vstart, &vend) ||
               (vend - vstart > 1 && s[vstart] == '-' &&
                !isdigit((unsigned char)s[vstart + 1]))) {
      return mg_fail(e, column, "%s needs a value", name);
    }
    int v;
    if (vstart == vend || word_int(s, vstart, vend, &v))
      return mg_fail(e, (int)vstart + 1, "%s wants an integer, got '%.*s'",
                     name, (int)(vend - vstart > 40 ? 40 : vend - vstart),
                     s + vstart);
    if (v < mg_opt[id].min)
      return mg_fail(e, (int)vstart + 1, "%s wants %s, got %d", name,
                     mg_opt[id].min ? "a positive integer"
                                    : "an integer of at least 0",
                     v);
    a->given[id] = column;
    a->value[id] = v;
    if (mg_opt[id].kind == MG_INTS && !eq) {
      /* nargs='+': more integers may follow. */
      size_t save = pos;
      while (next_word(s, &pos, &vstart, &vend) &&
             !word_int(s, vstart, vend, &v))
        save = pos;
      pos = save;
    }
  }
  return 0;
}

/* gtp_remat from a weight-shard count, as Megatron's
 * resolve_tensor_parallel_weight_shards: shards / tp, shards a multiple of
 * tp; 1 when not given. */
static int remat_size(const struct mg_args *a, int shards_id, int tp,
                      const char *tp_what, struct mg_error *e, int *out) {
  *out = 1;
  if (!a->given[shards_id])
    return 0;
  int shards = a->value[shards_id];
  if (shards < tp || shards % tp)
    return mg_fail(e, a->given[shards_id],
                   "%s %d must be a multiple of %s %d (Megatron: the weight "
                   "shards are %s times gtp_remat)",
                   mg_opt[shards_id].name, shards, tp_what, tp, tp_what);
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
                     mg_opt[ids[i]].name, a->value[ids[i]]);
    if (w < 0)
      break;
    len += (size_t)w;
  }
  if (len >= cap && cap > 4)
    strcpy(buf + cap - 4, "...");
}

/* The dims of one model (or the language module): dp and expt_dp are what
 * `ranks` leaves. */
static int model_grid(const struct mg_args *a, int ranks, int mimo,
                      struct mg_grid *g, struct mg_error *e) {
  int tp = a->value[mimo ? MG_LLM_TP : MG_TP];
  int cp = a->value[mimo ? MG_LLM_CP : MG_CP];
  int pp = a->value[mimo ? MG_LLM_PP : MG_PP];
  int ep = a->value[mimo ? MG_LLM_EP : MG_EP];
  int etp_id = mimo ? MG_LLM_ETP : MG_ETP;
  /* One model: experts default to tp (validate_args); MIMO: to 1. */
  int etp = a->given[etp_id] || mimo ? a->value[etp_id] : tp;
  int gtp, egtp;
  if (remat_size(a, MG_TP_SHARDS, tp,
                 mimo ? "--llm-tp" : "--tensor-model-parallel-size", e, &gtp) ||
      remat_size(a, MG_ETP_SHARDS, etp,
                 mimo ? "--llm-expt-tp" : "the expert tensor-parallel size", e,
                 &egtp))
    return -1;
  char why[320];
  int dense[] = {tp, gtp, cp, pp};
  long long model = product(dense, 4, ranks);
  if (model < 0 || ranks % model) {
    int ids[] = {MG_TP, MG_TP_SHARDS, MG_CP, MG_PP};
    int mids[] = {MG_LLM_TP, MG_TP_SHARDS, MG_LLM_CP, MG_LLM_PP};
    given_list(why, sizeof why, a, mimo ? mids : ids, 4);
    if (model < 0)
      return mg_fail(e, 0,
                     "tp*gtp_remat*cp*pp = %d*%d*%d*%d exceeds the %d ranks "
                     "of the %s (%s)",
                     tp, gtp, cp, pp, ranks, mimo ? "language module" : "world",
                     why);
    return mg_fail(e, 0,
                   "the %s of %d ranks is not divisible by tp*gtp_remat*cp*pp "
                   "= %lld (%s)",
                   mimo ? "language module" : "world", ranks, model, why);
  }
  int expert[] = {etp, ep, egtp, pp};
  long long emodel = product(expert, 4, ranks);
  if (emodel < 0 || ranks % emodel) {
    int ids[] = {MG_ETP, MG_EP, MG_ETP_SHARDS, MG_PP};
    int mids[] = {MG_LLM_ETP, MG_LLM_EP, MG_ETP_SHARDS, MG_LLM_PP};
    given_list(why, sizeof why, a, mimo ? mids : ids, 4);
    if (emodel < 0)
      return mg_fail(e, 0,
                     "expt_tp*ep*expt_gtp_remat*pp = %d*%d*%d*%d exceeds the "
                     "%d ranks of the %s (%s)",
                     etp, ep, egtp, pp, ranks,
                     mimo ? "language module" : "world", why);
    return mg_fail(e, 0,
                   "the %s of %d ranks is not divisible by "
                   "expt_tp*ep*expt_gtp_remat*pp = %lld (%s; the experts' "
                   "tensor-parallel size is %d)",
                   mimo ? "language module" : "world", ranks, emodel, why, etp);
  }
  g->tp = tp;
  g->gtp = gtp;
  g->cp = cp;
  g->pp = pp;
  g->dp = (int)(ranks / model);
  g->etp = etp;
  g->ep = ep;
  g->egtp = egtp;
  g->edp = (int)(ranks / emodel);
  g->size = ranks;
  g->pp_before_dp = !mimo && a->value[MG_TP_PP_DP];
  if (g->pp_before_dp && pp > 1 && g->edp != g->dp)
    return mg_fail(e, a->given[MG_TP_PP_DP],
                   "--use-tp-pp-dp-mapping with pipeline parallelism (pp %d) "
                   "needs the experts' data-parallel size (%d) to equal the "
                   "data-parallel size (%d), as Megatron asserts",
                   pp, g->edp, g->dp);
  return 0;
}

/* Refusals and warnings about arguments hcg cannot honour or that the MIMO
 * arguments replace. */
static int mg_check_unsupported(const struct mg_args *a, int mimo,
                                struct mg_error *e) {
  if (a->given[MG_MODEL_PARALLEL])
    return mg_fail(e, a->given[MG_MODEL_PARALLEL],
                   "--model-parallel-size is Megatron's old argument, which "
                   "it no longer accepts: use --tensor-model-parallel-size");
  if (a->value[MG_DIST_OPT] > 1)
    return mg_fail(e, a->given[MG_DIST_OPT],
                   "--num-distributed-optimizer-instances %d: hcg's "
                   "collection has one distributed-optimizer instance "
                   "(intra_dist_opt is the whole grid), so it cannot give "
                   "Megatron's groups for %d",
                   a->value[MG_DIST_OPT], a->value[MG_DIST_OPT]);
  if (a->given[MG_HCP])
    fprintf(stderr,
            "hcg: warning: --hierarchical-context-parallel-sizes: hcg makes "
            "no hierarchical context-parallel groups (the layout is the "
            "same; hcg.torch gives hcp=None)\n");
  if (mimo) {
    static const int stock[] = {MG_TP, MG_PP, MG_CP, MG_EP, MG_ETP};
    static const char *const instead[] = {"--llm-tp", "--llm-pp", "--llm-cp",
                                          "--llm-ep", "--llm-expt-tp"};
    for (size_t i = 0; i < sizeof stock / sizeof *stock; i++)
      if (a->given[stock[i]])
        fprintf(stderr,
                "hcg: warning: %s is not used with Megatron's MIMO "
                "arguments: the language module takes %s (Megatron's MIMO "
                "example sets the former from the latter)\n",
                mg_opt[stock[i]].name, instead[i]);
    if (a->given[MG_TP_PP_DP])
      fprintf(stderr, "hcg: warning: --use-tp-pp-dp-mapping is not used with "
                      "Megatron's MIMO arguments: its topology orders every "
                      "module tp, gtp_remat, cp, dp, pp\n");
  }
  return 0;
}

/* MIMO: the language module's grid, whose size is its own product, at
 * --llm-offset; --llm-only makes it the whole world. */
static int mimo_language(const struct mg_args *a, int world,
                         struct mg_grid *lang, struct mg_error *e) {
  int gtp;
  if (remat_size(a, MG_TP_SHARDS, a->value[MG_LLM_TP], "--llm-tp", e, &gtp))
    return -1;
  int dims[] = {a->value[MG_LLM_TP], gtp, a->value[MG_LLM_CP],
                a->value[MG_LLM_PP], a->value[MG_LLM_DP]};
  long long llm = product(dims, 5, world);
  int offset = a->value[MG_LLM_OFFSET];
  if (llm < 0 || offset > world - llm)
    return mg_fail(
        e, 0,
        "the language module (--llm-offset %d, tp*gtp_remat*cp*pp*dp "
        "= %d*%d*%d*%d*%d ranks) does not fit the world of %d ranks",
        offset, dims[0], dims[1], dims[2], dims[3], dims[4], world);
  *lang = (struct mg_grid){.name = "language", .offset = offset};
  if (model_grid(a, (int)llm, 1, lang, e))
    return -1;
  if (!a->value[MG_LLM_ONLY])
    return 0;
  if (offset != 0)
    return mg_fail(e, a->given[MG_LLM_OFFSET],
                   "--llm-only needs --llm-offset 0 (got %d): the language "
                   "module alone must cover the world",
                   offset);
  if (llm != world)
    return mg_fail(e, a->given[MG_LLM_ONLY],
                   "--llm-only: the language module has %lld ranks "
                   "(tp*gtp_remat*cp*pp*dp) but the world has %d",
                   llm, world);
  return 0;
}

/* MIMO: the encoder's grid (tp, dp) from rank 0, which with the language
 * module's must share all ranks or none, and cover the world. */
static int mimo_encoder(const struct mg_args *a, int world, const char *encoder,
                        const struct mg_grid *lang, struct mg_grid *eg,
                        struct mg_error *e) {
  int edims[] = {a->value[MG_ENC_TP], a->value[MG_ENC_DP]};
  long long enc = product(edims, 2, world);
  if (enc < 0)
    return mg_fail(e, 0,
                   "the encoder (--encoder-tp %d * --encoder-dp %d ranks) "
                   "does not fit the world of %d ranks",
                   edims[0], edims[1], world);
  long long llm = lang->size, offset = lang->offset, lend = offset + llm;
  int same = offset == 0 && enc == llm;
  int disjoint = enc <= offset;
  if (!same && !disjoint)
    return mg_fail(e, 0,
                   "the module grids must either fully share ranks or be "
                   "disjoint: %s [0, %lld), language [%lld, %lld)",
                   encoder, enc, offset, lend);
  long long covered = same ? enc : enc + llm;
  long long last = lend > enc ? lend : enc;
  if (covered != world || last != world)
    return mg_fail(e, 0,
                   "the module grids must cover the world [0, %d) with no "
                   "gaps: %s [0, %lld), language [%lld, %lld)",
                   world, encoder, enc, offset, lend);
  *eg = (struct mg_grid){.name = encoder,
                         .size = (int)enc,
                         .tp = edims[0],
                         .gtp = 1,
                         .cp = 1,
                         .dp = edims[1],
                         .pp = 1,
                         .etp = 1,
                         .ep = 1,
                         .egtp = 1,
                         .edp = (int)enc};
  return 0;
}

/* The layout of ARGS for `world` ranks into out (its text, not yet
 * checked by the core). */
static int mg_layout(const char *args, int world, const char *encoder,
                     char *out, size_t cap, struct mg_error *e) {
  struct mg_args a;
  if (mg_parse(args, &a, e))
    return -1;
  int mimo = 0;
  for (int id = MG_ENC_TP; id < MG_COUNT; id++)
    mimo |= a.given[id] != 0;
  if (mg_check_unsupported(&a, mimo, e))
    return -1;
  size_t len = 0;
  out[0] = '\0';
  if (!mimo) {
    struct mg_grid g = {.name = "world"};
    if (model_grid(&a, world, 0, &g, e))
      return -1;
    return put_grid(out, cap, &len, &g) ? mg_fail(e, 0, "layout too long") : 0;
  }
  struct mg_grid lang, eg;
  if (mimo_language(&a, world, &lang, e))
    return -1;
  if (a.value[MG_LLM_ONLY])
    return put_grid(out, cap, &len, &lang) ? mg_fail(e, 0, "layout too long")
                                           : 0;
  if (mimo_encoder(&a, world, encoder, &lang, &eg, e))
    return -1;
  if (put_grid(out, cap, &len, &eg) || put_grid(out, cap, &len, &lang))
    return mg_fail(e, 0, "layout too long");
  return 0;
}

/* Shows ARGS around column with a caret under it (at most 76 columns). */
static void show_caret(FILE *f, const char *s, int column) {
  size_t n = strlen(s), at = (size_t)column - 1, from = 0;
  if (at > n)
    at = n;
  if (at > 40)
    from = at - 36;
  size_t to = from + 76 < n ? from + 76 : n;
  fputs("  ", f);
  if (from)
    fputs("...", f);
  for (size_t i = from; i < to; i++)
    fputc(is_space(s[i]) ? ' ' : s[i], f);
  if (to < n)
    fputs("...", f);
  fprintf(f, "\n  %*s^\n", (int)(at - from + (from ? 3 : 0)), "");
}

static const char layout_usage[] =
    "usage: hcg layout --megatron ARGS -n N [--encoder-name NAME]\n";

static const char layout_help[] =
    "\n"
    "Prints the hcg layout Megatron-LM builds from its parallel arguments,\n"
    "for srun --hcg-layout, so that a job script names its sizes once:\n"
    "\n"
    "  ARGS=\"--tensor-model-parallel-size 2 --pipeline-model-parallel-size "
    "2 ...\"\n"
    "  srun --hcg-layout=\"$(hcg layout --megatron \"$ARGS\" -n "
    "$SLURM_NTASKS)\" \\\n"
    "       python train.py $ARGS\n"
    "\n"
    "ARGS is split at white space; words that are not parallel arguments\n"
    "are skipped. One model: --tensor-model-parallel-size,\n"
    "--pipeline-model-parallel-size, --context-parallel-size,\n"
    "--expert-model-parallel-size, --expert-tensor-parallel-size (default:\n"
    "tp), --tensor-parallel-num-weight-shards and\n"
    "--expert-tensor-parallel-num-weight-shards (gtp_remat), and\n"
    "--use-tp-pp-dp-mapping (order tp-cp-ep-pp-dp instead of tp-cp-ep-dp-pp)\n"
    "give the grid `world` (tp,gtp_remat,cp,dp,pp) and its view `expert`\n"
    "(expt_tp,ep,expt_gtp_remat,expt_dp,pp). MIMO (Megatron's\n"
    "examples/mimo): --encoder-tp, --encoder-dp, --llm-offset, --llm-tp,\n"
    "--llm-cp, --llm-pp, --llm-dp, --llm-ep, --llm-expt-tp, --llm-only give a\n"
    "grid for the encoder at rank 0 and the grid `language`, each with an\n"
    "expert view; equal spans are colocated, else they must be disjoint.\n"
    "Every rank of the N must be in a grid.\n"
    "\n"
    "options:\n"
    "  --megatron ARGS      Megatron's arguments, one word\n"
    "  -n, --world N        ranks in the job (the step's task count)\n"
    "      --encoder-name NAME  the encoder module's grid (default encoder)\n"
    "\n"
    "exit status: 0 success, 2 bad arguments, 1 other failure.\n";

int hcg_cli_layout_help(FILE *out) {
  fputs(layout_usage, out);
  fputs(layout_help, out);
  return 0;
}

static int layout_usage_error(const char *what, const char *arg) {
  fprintf(stderr, "hcg: layout: %s%s%s%s\n", what, arg ? " '" : "",
          arg ? arg : "", arg ? "'" : "");
  fputs(layout_usage, stderr);
  return EXIT_USAGE;
}

/* `hcg layout`'s options: --megatron ARGS, -n N, --encoder-name NAME. 0
 * to go on, -1 when -h printed the help, or the exit status of the usage
 * error printed. */
static int layout_options(int argc, char **argv, const char **args, int *world,
                          const char **encoder) {
  static const struct option longopts[] = {
      {"megatron", required_argument, NULL, 'M'},
      {"world", required_argument, NULL, 'n'},
      {"encoder-name", required_argument, NULL, 'E'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  optind = 1;
  /* '+': the ARGS word may start with '--' and must not be permuted. */
  while ((c = getopt_long(argc, argv, "+n:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'M':
      *args = optarg;
      break;
    case 'n':
      if (hcg_cli_parse_count(optarg, 1, world))
        return layout_usage_error("-n wants a positive number of ranks, got",
                                  optarg);
      break;
    case 'E':
      *encoder = optarg;
      break;
    case 'h':
      hcg_cli_layout_help(stdout);
      return -1;
    default:
      return layout_usage_error("unknown option or missing value:",
                                argv[optind - 1]);
    }
  }
  if (optind < argc)
    return layout_usage_error("unexpected argument", argv[optind]);
  if (!*args)
    return layout_usage_error("--megatron ARGS is needed", NULL);
  if (!*world)
    return layout_usage_error("-n N is needed (Megatron's data-parallel "
                              "sizes are what the world leaves)",
                              NULL);
  if (!strcmp(*encoder, "language"))
    return layout_usage_error("--encoder-name: 'language' is the language "
                              "module's grid",
                              NULL);
  return 0;
}

/* Prints the canonical layout of `text` (what the arguments gave). */
static int print_layout(const char *text, int world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_parse(text, strlen(text), &cfg, &L, &err);
  if (rc) {
    /* A bad --encoder-name, or a size the core refuses (too many ranks). */
    fprintf(stderr, "hcg: the layout of these arguments is refused: %s\n",
            err.message);
    return rc == HCG_ESYNTAX || rc == HCG_ELAYOUT || rc == HCG_ELIMIT
               ? EXIT_USAGE
               : EXIT_OTHER;
  }
  puts(hcg_layout_text(L));
  hcg_layout_free(L);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "hcg: cannot write the output: %s\n", strerror(errno));
    return EXIT_OTHER;
  }
  return 0;
}

static int layout_main(int argc, char **argv) {
  const char *args = NULL, *encoder = "encoder";
  int world = 0;
  int rc = layout_options(argc, argv, &args, &world, &encoder);
  if (rc)
    return rc < 0 ? 0 : rc;
  char text[2048];
  struct mg_error e = {0, ""};
  if (mg_layout(args, world, encoder, text, sizeof text, &e)) {
    if (e.column) {
      fprintf(stderr, "hcg: megatron arguments: column %d: %s\n", e.column,
              e.message);
      show_caret(stderr, args, e.column);
    } else {
      fprintf(stderr, "hcg: megatron arguments: %s\n", e.message);
    }
    return EXIT_USAGE;
  }
  return print_layout(text, world);
}

int hcg_cli_layout_dispatch(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "layout"))
    return layout_main(argc - 1, argv + 1);
  if (argc == 3 && !strcmp(argv[1], "help") && !strcmp(argv[2], "layout"))
    return hcg_cli_layout_help(stdout);
  return -1;
}
