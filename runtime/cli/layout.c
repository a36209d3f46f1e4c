/*
 * layout.c - `hcg layout --megatron ARGS -n N`: the hcg layout that
 * Megatron-LM builds from its parallel arguments, so that a job names its
 * sizes once:
 *
 *   srun --hcg-layout="$(hcg layout --megatron "$ARGS" -n $SLURM_NTASKS)" \
 *        python train.py $ARGS
 *
 * The arguments' model is the library's (hcg_megatron_layout,
 * runtime/core/megatron.c); this file is the command around it.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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

static void print_warning(void *arg, const char *message) {
  (void)arg;
  fprintf(stderr, "hcg: warning: %s\n", message);
}

static int layout_main(int argc, char **argv) {
  const char *args = NULL, *encoder = "encoder";
  int world = 0;
  int rc = layout_options(argc, argv, &args, &world, &encoder);
  if (rc)
    return rc < 0 ? 0 : rc;
  hcg_megatron_config cfg = HCG_MEGATRON_CONFIG_INIT;
  cfg.world_size = world;
  cfg.encoder_name = encoder;
  cfg.warn = print_warning;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  rc = hcg_megatron_layout(args, &cfg, &L, &err);
  if (rc) {
    fprintf(stderr, "hcg: %s\n", err.message);
    return rc == HCG_ENOMEM ? EXIT_OTHER : EXIT_USAGE;
  }
  puts(hcg_layout_text(L));
  hcg_layout_free(L);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "hcg: cannot write the output: %s\n", strerror(errno));
    return EXIT_OTHER;
  }
  return 0;
}

int hcg_cli_layout_dispatch(int argc, char **argv) {
  if (argc >= 2 && !strcmp(argv[1], "layout"))
    return layout_main(argc - 1, argv + 1);
  if (argc == 3 && !strcmp(argv[1], "help") && !strcmp(argv[2], "layout"))
    return hcg_cli_layout_help(stdout);
  return -1;
}
