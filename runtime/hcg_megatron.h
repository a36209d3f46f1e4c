/*
 * hcg_megatron.h - Megatron-LM's parallel arguments: what each one is, and
 * the layout a set of them builds.
 *
 * One model of the arguments for every user: the `hcg layout --megatron`
 * command, and Python's hcg.megatron, which reads the table below, calls
 * hcg_megatron_layout (arguments to a layout) and hcg_megatron_values and
 * hcg_megatron_grid_sizes (a layout back to arguments). Part of the core (no
 * Slurm, PMIx or CUDA). Include hcg.h. doc/runtime.md, "Megatron's arguments",
 * says which of Megatron's arguments mean what.
 */
#ifndef HCG_MEGATRON_H
#define HCG_MEGATRON_H

#include "hcg_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How an argument is written on Megatron's command line. */
enum hcg_megatron_kind {
  HCG_MEGATRON_INT = 0,    /* --name N or --name=N */
  HCG_MEGATRON_FLAG = 1,   /* --name, no value */
  HCG_MEGATRON_INTS = 2,   /* --name N [N ...] (argparse's nargs='+') */
  HCG_MEGATRON_DERIVED = 3 /* no option: Megatron computes it (dp, world) */
};

/* Which of Megatron's two ways of running an argument belongs to. */
enum hcg_megatron_scope {
  HCG_MEGATRON_ANY = 0,    /* one model and MIMO alike */
  HCG_MEGATRON_SINGLE = 1, /* one model; MIMO's own arguments replace it */
  HCG_MEGATRON_MIMO = 2    /* examples/mimo's: any one given selects MIMO */
};

/* One of Megatron's arguments. Owned by the library, constant. */
typedef struct hcg_megatron_arg {
  const char *dest;   /* argparse's name: "tensor_model_parallel_size" */
  const char *option; /* "--tensor-model-parallel-size"; NULL if derived */
  const char *dim;    /* what it is in a layout: "tp", "tp*gtp_remat" */
  int kind;           /* enum hcg_megatron_kind */
  int scope;          /* enum hcg_megatron_scope */
  int min;            /* smallest value accepted */
  int dflt;           /* value when not given; 0 for none of its own */
} hcg_megatron_arg;

/* The arguments hcg reads, in a fixed order: hcg_megatron_arg_at(i) for i
 * in [0, hcg_megatron_arg_count()), NULL out of range. Any thread. */
int hcg_megatron_arg_count(void);
const hcg_megatron_arg *hcg_megatron_arg_at(int index);

/* Called once per warning about an argument read but not honoured
 * (message without a program prefix or a newline). */
typedef void (*hcg_warn_fn)(void *arg, const char *message);

/* Unset: 0 or NULL (see "Config structs" in doc/runtime.md). */
typedef struct hcg_megatron_config {
  size_t size;      /* sizeof(hcg_megatron_config), set by the INIT macro */
  unsigned version; /* HCG_CONFIG_VERSION, set by the INIT macro */
  int world_size;   /* ranks in the job; required */
  /* The MIMO encoder's grid; NULL: "encoder". */
  const char *encoder_name;
  hcg_warn_fn warn; /* NULL: warnings are dropped */
  void *warn_arg;
} hcg_megatron_config;

/* clang-format off */
#define HCG_MEGATRON_CONFIG_INIT                                               \
  {sizeof(hcg_megatron_config), HCG_CONFIG_VERSION, 0, NULL, NULL, NULL}
/* clang-format on */

/* The layout Megatron builds from `args` (its command line as one string,
 * split at white space; words that are not its parallel arguments are
 * skipped) for cfg->world_size ranks, parsed: *out owns it. Errors:
 * HCG_ESYNTAX for a word (err->column in args, and a caret), HCG_ELAYOUT
 * for sizes the world cannot hold, HCG_ELIMIT for args beyond 1 MiB; on
 * failure *out is NULL and nothing is leaked. Any thread. */
int hcg_megatron_layout(const char *args, const hcg_megatron_config *cfg,
                        hcg_layout **out, hcg_error *err);

/* ---------------------------------------------------------------------------
 * A layout back to Megatron's arguments: the inverse of hcg_megatron_layout.
 */

/* One grid's sizes, named as Megatron's ModuleGridSpec names them; the dims
 * a grid lacks are 1. Filled by the library; owned by the caller. */
typedef struct hcg_megatron_sizes {
  int tp, gtp_remat, cp, dp, pp; /* the base view */
  int expert; /* 1: the grid has a view "expert"; 0: the four below are 0 */
  int ep, expt_tp, expt_gtp_remat, expt_dp; /* the view "expert" */
  /* Which of Megatron's two orders the dims of size > 1 follow: 1 pp before
   * dp (--use-tp-pp-dp-mapping), 0 dp before pp, -1 either (pp or dp is 1
   * in both views, so the order changes no group). */
  int pp_before_dp;
} hcg_megatron_sizes;

/* The sizes of a grid of layout into *out. Megatron's base dims are tp,
 * gtp_remat, cp, dp, pp in this order (or pp before dp), its expert view's
 * expt_tp, ep, expt_gtp_remat, expt_dp, pp (pp shared with the base when
 * it is larger than 1); the size-1 dims may stand anywhere. Errors:
 * HCG_EINVAL for a NULL argument or a grid out of range, HCG_ELAYOUT for a
 * dim Megatron lacks, dims in another order, or an expert view that does
 * not share pp. Any thread. */
int hcg_megatron_grid_sizes(const hcg_layout *layout, int grid,
                            hcg_megatron_sizes *out, hcg_error *err);

/* One argument a layout determines: hcg_megatron_arg_at(arg) is the
 * argument, value its value (a flag's: 1 given, 0 not given), grid the
 * index of the grid it describes. */
typedef struct hcg_megatron_value {
  int arg;
  int value;
  int grid;
} hcg_megatron_value;

/* The values of Megatron's arguments that layout stands for, into
 * out[0 .. *count-1], in the order of Megatron's ModuleGridSpec (tp, pp,
 * cp, dp, the weight shards, world; then the experts', then the order);
 * an argument the layout does not determine is left out (the expert sizes
 * without an expert view, the order when pp or dp is 1, the encoder's
 * sizes unless there is one encoder of tp and dp only at rank 0). One
 * grid is one model spanning the world (Megatron's stock arguments);
 * several grids are Megatron's MIMO example, whose language module is the
 * grid named "language" (MIMO's arguments). Never more than
 * hcg_megatron_arg_count() values: HCG_ERANGE when cap is smaller than
 * what the layout needs. Errors: those of hcg_megatron_grid_sizes for
 * every grid, in layout order, then HCG_ELAYOUT for a model that does not
 * span the world, several grids without one named "language", or a
 * language module ordering pp before dp; HCG_EINVAL for a NULL argument.
 * On failure *count is 0. Any thread. */
int hcg_megatron_values(const hcg_layout *layout, hcg_megatron_value *out,
                        int cap, int *count, hcg_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HCG_MEGATRON_H */
