/*
 * main.c - the hcg command: check, enumerate and explain layouts with no
 * cluster. Errors go to stderr; the exit status is 2 for bad input (a usage
 * error or a bad layout) and 1 for any other failure (unreadable file,
 * unknown grid in a spec).
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "describe.h"

static const char usage_text[] =
    "usage: hcg check   [-n N] [--language NAME] [PLACEMENT] LAYOUT\n"
    "       hcg enum    [-n N] [--language NAME] LAYOUT SPEC\n"
    "       hcg explain [-n N] [--language NAME] LAYOUT [--rank R]\n"
    "                   [--format text|json|svg] [--full] [PLACEMENT]\n"
    "       hcg env     [-n N] [--language NAME] LAYOUT --rank R\n"
    "       hcg layout  --megatron ARGS -n N [--encoder-name NAME]\n"
    "       hcg help [COMMAND|TOPIC] | hcg COMMAND --help | hcg --version\n"
    "PLACEMENT: --nodes N | --tasks-per-node K, [--distribution D]\n"
    "           [--intra-node-dims DIMS] [--domain-size B]\n"
    "           [--intra-domain-dims DIMS]\n";

static const char help_text[] =
    "\n"
    "Checks and explains hcg layouts: the parallel groups (tensor, context,\n"
    "data, pipeline, expert) of Megatron-LM's HyperCommGrid, as the hcg SPANK\n"
    "plugin gives them to the tasks of `srun --hcg-layout=LAYOUT`.\n"
    "\n"
    "commands:\n"
    "  check    validate LAYOUT for N ranks and print its canonical form\n"
    "  enum     print the groups of SPEC as one JSON line, e.g. [[0,1],[2,3]]\n"
    "           SPEC is GRID[/VIEW]:DIM[,DIM...] (no dims: singletons); a\n"
    "           one-grid layout also takes DIM[,DIM...] alone\n"
    "  explain  grids, views, rank coordinates, each grid's process groups,\n"
    "           embedding groups, MIMO roles and bridges (--full: all)\n"
    "  env      the HCG_* variables the plugin exports to task R\n"
    "  layout   the layout Megatron-LM builds from its parallel arguments\n"
    "\n"
    "options:\n"
    "  -n, --world N        ranks in the world (the step's task count); may "
    "be\n"
    "                       left out when no grid infers a size with '*'\n"
    "  -l, --language NAME  the language module's grid (default: a grid named\n"
    "                       llm or language, or the only grid)\n"
    "  -r, --rank R         explain or show the environment of rank R only\n"
    "  -f, --format FMT     text (default), json, or svg (explain: a picture\n"
    "                       of the ranks on their nodes)\n"
    "      --full           explain: every rank and group (text)\n"
    "  -N, --nodes N        place the ranks on N nodes as Slurm would, and\n"
    "                       check that each group of an intra-node dim stays\n"
    "                       inside a node (a warning names each that does "
    "not)\n"
    "      --tasks-per-node K  the same with K tasks on each node\n"
    "  -m, --distribution D block (default), cyclic or plane=P, as srun's\n"
    "      --intra-node-dims DIMS  dims checked "
    "(default " HCG_PLACEMENT_DEFAULT_DIMS ")\n"
    "  -B, --domain-size B  every B consecutive nodes form an NVLink domain\n"
    "                       (a block, a rack): the dims of\n"
    "                       --intra-domain-dims are checked against domains\n"
    "                       instead of nodes, with a suggestion when a group\n"
    "                       crosses\n"
    "      --intra-domain-dims DIMS  dims checked against domains (default\n"
    "                       " HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS
    "; none: no dim)\n"
    "  -h, --help           this help\n"
    "  -V, --version        print the version\n"
    "\n"
    "LAYOUT is the layout text or @PATH to read it from a file, e.g.\n"
    "  'tp=2,cp=2,pp=4,dp=*'\n"
    "  'llm:tp=2,dp=*,pp=2; llm/expert:expt_tp=1,ep=4,expt_dp=*,pp'\n"
    "  'vision:tp=4,dp=2; llm:tp=2,cp=2,pp=2,dp=*'\n"
    "  'vision@0:tp=2,dp=4; llm@0:tp=4,dp=2'\n"
    "\n"
    "exit status: 0 success, 2 usage error or bad layout, 1 other failure.\n"
    "See hcg(1) and hcg help COMMAND. The reference, hcg help TOPIC:\n";

/* One command's help: `hcg help COMMAND` and `hcg COMMAND --help`. */
static const struct {
  const char *name, *text;
} command_help[] = {
    {"check",
     "usage: hcg check [-n N] [--language NAME] [PLACEMENT] LAYOUT\n"
     "\n"
     "Validates LAYOUT for N ranks and prints its canonical form (every\n"
     "offset explicit, every '*' resolved). Exit status 2 and a message\n"
     "with the column and a caret when the layout is refused.\n"
     "With --nodes N or --tasks-per-node K (and --distribution), also a\n"
     "line per intra-node dim saying whether its groups stay inside a\n"
     "node, and for one that crosses nodes the plugin's warning on stderr.\n"
     "With --domain-size B, the dims of --intra-domain-dims are checked\n"
     "against domains of B nodes instead, a line each, and when a group\n"
     "crosses its node or domain a last line 'placement: suggestion: ...'\n"
     "names a dim order or a --distribution that keeps every group inside\n"
     "(computed by checking it, as the plugin says it in its warning).\n"},
    {"enum",
     "usage: hcg enum [-n N] [--language NAME] LAYOUT SPEC\n"
     "\n"
     "Prints the groups of SPEC as one JSON line, e.g. [[0,1],[2,3]].\n"
     "SPEC is GRID[/VIEW]:DIM[,DIM...] (no dims: singletons); a one-grid\n"
     "layout also takes DIM[,DIM...] alone.\n"},
    {"explain",
     "usage: hcg explain [-n N] [--language NAME] LAYOUT [--rank R]\n"
     "                   [--format text|json|svg] [--full] [PLACEMENT]\n"
     "\n"
     "Explains the layout: grids, views, how each view numbers the\n"
     "ranks, every rank's coordinates, each grid's process groups,\n"
     "embedding groups, MIMO roles and bridges, in 100 columns.\n"
     "A grid of more than 32 ranks shows its first and last ranks and\n"
     "a field its first 8 groups; --full shows them all.\n"
     "With --rank R, only what rank R belongs to, in time and output\n"
     "that grow with the dims, not the world.\n"
     "\n"
     "Groups are complete and compact: [0-7], [0-63:8] (0 to 63 by 8),\n"
     "[0,1,8-15], or for many runs a sum, [5,7]+[0-1073741816:8]:\n"
     "each member of the first plus each member of the second.\n"
     "--format json: the same for programs; with --rank, a group of\n"
     "more than 1024 members is given as \"ranges\" (first, terms).\n"
     "--nodes N / --tasks-per-node K: where the ranks land and whether\n"
     "each intra-node dim's groups stay inside a node (JSON: placement).\n"
     "--domain-size B: the same for domains of B nodes (JSON:\n"
     "placement.domain_checks, placement.suggestion).\n"
     "--format svg: a picture of the ranks on their nodes; each module a\n"
     "coloured band, each tp group a box, pp stages labelled; --rank R\n"
     "highlights R's groups; with --domain-size, each domain a frame\n"
     "around its nodes and each group crossing domains a colour of its own.\n"},
    {"env", "usage: hcg env [-n N] [--language NAME] [PLACEMENT] LAYOUT "
            "--rank R\n"
            "\n"
            "Prints the HCG_* variables the plugin exports to task R; with\n"
            "--nodes or --tasks-per-node also its HCG_*_LOCAL, and with\n"
            "--domain-size its HCG_*_DOMAIN_LOCAL.\n"},
    {"help",
     "usage: hcg help [COMMAND|TOPIC]\n"
     "\n"
     "Prints the general help, the help of COMMAND, or TOPIC: the\n"
     "grammar, the process-group fields or the plugin's plugstack.conf\n"
     "arguments, as the code holds them (hcg help lists the topics).\n"},
};

/* Prints the help of `name` (NULL: the general help); -1 when unknown. */
static int print_help(const char *name) {
  if (!name) {
    fputs(usage_text, stdout);
    fputs(help_text, stdout);
    hcg_cli_reference_list(stdout);
    return 0;
  }
  if (!hcg_cli_reference(stdout, name))
    return 0;
  for (size_t i = 0; i < sizeof command_help / sizeof *command_help; i++)
    if (!strcmp(name, command_help[i].name)) {
      fputs(command_help[i].text, stdout);
      fputs("\noptions and LAYOUT: see hcg help\n", stdout);
      return 0;
    }
  return -1;
}

enum command { CMD_CHECK, CMD_ENUM, CMD_EXPLAIN, CMD_ENV };
static const char *const command_names[] = {"check", "enum", "explain", "env"};

struct options {
  enum command cmd;
  int world;
  const char *language;
  int rank;
  int json;
  int full;
  int svg;
  int nodes, tasks_per_node, domain_size;
  const char *distribution, *dims, *domain_dims;
  const char *layout;
  const char *spec;
};

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt,
                                                             ...) {
  fputs("hcg: ", stderr);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\n", stderr);
  fputs(usage_text, stderr);
  return EXIT_USAGE;
}

/* A positional argument: the command, then the layout, then enum's spec. */
static int take_positional(struct options *o, const char *arg) {
  if (o->layout == NULL && o->cmd == (enum command) - 1) {
    for (size_t i = 0; i < sizeof command_names / sizeof *command_names; i++)
      if (!strcmp(arg, command_names[i])) {
        o->cmd = (enum command)i;
        return 0;
      }
    return usage_error("unknown command '%s'", arg);
  } else if (!o->layout) {
    o->layout = arg;
  } else if (o->cmd == CMD_ENUM && !o->spec) {
    o->spec = arg;
  } else {
    return usage_error("unexpected argument '%s'", arg);
  }
  return 0;
}

/* One option (getopt_long's c and optarg). -h and -V print and exit. */
static int take_option(int c, struct options *o, char **argv) {
  switch (c) {
  case 'n':
    if (hcg_cli_parse_count(optarg, 1, &o->world))
      return usage_error("-n wants a positive number of ranks, got '%s'",
                         optarg);
    break;
  case 'l':
    o->language = optarg;
    break;
  case 'r':
    if (hcg_cli_parse_count(optarg, 0, &o->rank))
      return usage_error("--rank wants a rank (0, 1, ...), got '%s'", optarg);
    break;
  case 'f':
    o->json = !strcmp(optarg, "json");
    o->svg = !strcmp(optarg, "svg");
    if (!o->json && !o->svg && strcmp(optarg, "text"))
      return usage_error("--format is text, json or svg, got '%s'", optarg);
    break;
  case 'F':
    o->full = 1;
    break;
  case 'N':
    if (hcg_cli_parse_count(optarg, 1, &o->nodes))
      return usage_error("--nodes wants a positive number, got '%s'", optarg);
    break;
  case 'K':
    if (hcg_cli_parse_count(optarg, 1, &o->tasks_per_node))
      return usage_error("--tasks-per-node wants a positive number, got '%s'",
                         optarg);
    break;
  case 'm':
    o->distribution = optarg;
    break;
  case 'D':
    if (!hcg_placement_dims_valid(optarg))
      return usage_error("--intra-node-dims wants dim names separated by "
                         "commas, got '%s'",
                         optarg);
    o->dims = optarg;
    break;
  case 'B':
    if (hcg_cli_parse_count(optarg, 1, &o->domain_size))
      return usage_error("--domain-size wants a positive number of nodes, "
                         "got '%s'",
                         optarg);
    break;
  case 'E':
    if (strcmp(optarg, "none") && !hcg_placement_dims_valid(optarg))
      return usage_error("--intra-domain-dims wants dim names separated "
                         "by commas, or none, got '%s'",
                         optarg);
    o->domain_dims = strcmp(optarg, "none") ? optarg : "";
    break;
  case 'h':
    print_help(o->cmd == (enum command) - 1 ? NULL : command_names[o->cmd]);
    exit(0);
  case 'V':
    printf("hcg %s\n", hcg_version());
    exit(0);
  default:
    if (optopt)
      return usage_error("option -%c is unknown or needs a value", optopt);
    return usage_error("unknown option '%s'", argv[optind - 1]);
  }
  return 0;
}

/* The options that make sense only together, or only for one command. */
static int check_options(const struct options *o) {
  if (o->cmd == (enum command) - 1)
    return usage_error("%s", "a command is needed");
  if (!o->layout)
    return usage_error("%s", "a LAYOUT is needed");
  if (o->cmd == CMD_ENUM && !o->spec)
    return usage_error("%s", "enum needs a SPEC (GRID[/VIEW]:DIMS)");
  if (o->cmd == CMD_ENV && o->rank < 0)
    return usage_error("%s", "env needs --rank R");
  if (o->full && o->cmd != CMD_EXPLAIN)
    return usage_error("%s", "--full is an option of explain only");
  if (o->svg && o->cmd != CMD_EXPLAIN)
    return usage_error("%s", "--format svg is an option of explain only");
  if (o->nodes && o->tasks_per_node)
    return usage_error("%s", "give --nodes or --tasks-per-node, not both");
  if ((o->distribution || o->dims) && !o->nodes && !o->tasks_per_node)
    return usage_error("%s", "--distribution and --intra-node-dims need "
                             "--nodes or --tasks-per-node");
  if ((o->domain_size || o->domain_dims) && !o->nodes && !o->tasks_per_node)
    return usage_error("%s", "--domain-size and --intra-domain-dims need "
                             "--nodes or --tasks-per-node");
  if (o->domain_dims && !o->domain_size)
    return usage_error("%s", "--intra-domain-dims needs --domain-size");
  if ((o->nodes || o->tasks_per_node) && o->cmd == CMD_ENUM)
    return usage_error("%s", "enum takes no placement");
  return 0;
}

static int parse_args(int argc, char **argv, struct options *o) {
  static const struct option longopts[] = {
      {"world", required_argument, NULL, 'n'},
      {"language", required_argument, NULL, 'l'},
      {"rank", required_argument, NULL, 'r'},
      {"format", required_argument, NULL, 'f'},
      {"full", no_argument, NULL, 'F'},
      {"nodes", required_argument, NULL, 'N'},
      {"tasks-per-node", required_argument, NULL, 'K'},
      {"distribution", required_argument, NULL, 'm'},
      {"intra-node-dims", required_argument, NULL, 'D'},
      {"domain-size", required_argument, NULL, 'B'},
      {"intra-domain-dims", required_argument, NULL, 'E'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0}};
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "+n:l:r:f:N:m:B:hV", longopts, NULL)) !=
             -1 ||
         optind < argc) {
    /* c == -1: a positional argument; collect it and go on parsing. */
    int rc =
        c == -1 ? take_positional(o, argv[optind++]) : take_option(c, o, argv);
    if (rc)
      return rc;
  }
  return check_options(o);
}

static int print_enum(const hcg_layout *L, const char *spec) {
  hcg_request req;
  hcg_error err = HCG_ERROR_INIT;
  if (hcg_request_parse(L, spec, &req, &err)) {
    fprintf(stderr, "hcg: %s\n", err.message);
    return EXIT_OTHER;
  }
  int ngroups = hcg_request_num_groups(L, &req);
  putchar('[');
  for (int o = 0; o < ngroups; o++) {
    hcg_group g;
    hcg_group_at(L, &req, o, &g);
    fputs(o ? ",[" : "[", stdout);
    for (int i = 0; i < g.size; i++)
      printf(i ? ",%d" : "%d", hcg_group_member(L, &g, i));
    putchar(']');
  }
  puts("]");
  return 0;
}

static int print_env_var(void *arg, const char *name, const char *value) {
  (void)arg;
  printf("%s=%s\n", name, value);
  return 0;
}

struct model {
  const hcg_placement *p;
  int domain_size;
};

static int placement_node(void *arg, int rank) {
  return hcg_placement_node(((struct model *)arg)->p, rank);
}

static int placement_domain(void *arg, int rank) {
  const struct model *m = arg;
  return hcg_placement_domain(m->p, m->domain_size, rank);
}

static void print_checks(const struct desc *d, const struct desc_check *c,
                         int n, const char *level) {
  for (int i = 0; i < n; i++, c++) {
    const hcg_placement_verdict *v = &c->example;
    const struct desc_grid *g = &d->grid[v->grid];
    printf("placement: %s%s%s:%s: ", g->name, v->view ? "/" : "",
           v->view ? g->view[v->view].name : "",
           g->view[v->view].dim[v->dim].name);
    if (c->crossing)
      printf("%d of %d groups cross %ss\n", c->crossing, c->groups, level);
    else
      printf("every group inside a %s (%d groups)\n", level, c->groups);
    if (c->crossing)
      fprintf(stderr, "hcg: warning: placement: %s\n", c->message);
  }
}

/* check: one line per checked dim; a dim whose groups cross nodes (or
 * domains) also gets the plugin's warning on stderr; with domains, a
 * suggestion when anything crosses. */
static int print_placement(const hcg_layout *L, const hcg_placement *p,
                           const struct options *o) {
  struct desc *d = describe_layout(L);
  if (!d || describe_placement(d, p, o->dims, o->domain_size, o->domain_dims)) {
    describe_free(d);
    fputs("hcg: out of memory\n", stderr);
    return EXIT_OTHER;
  }
  const struct desc_placement *pl = &d->placement;
  print_checks(d, pl->check, pl->nchecks, "node");
  print_checks(d, pl->domain_check, pl->ndomain_checks, "domain");
  if (pl->domain_size && pl->suggestion[0])
    printf("placement: %s%s\n", pl->suggested > 0 ? "suggestion: " : "",
           pl->suggestion);
  describe_free(d);
  return 0;
}

/* Runs the parsed command on the layout (placement NULL: none asked). */
static int run_command(const hcg_layout *L, const struct options *o,
                       const hcg_placement *place) {
  switch (o->cmd) {
  case CMD_CHECK:
    puts(hcg_layout_text(L));
    return place ? print_placement(L, place, o) : 0;
  case CMD_ENUM:
    return print_enum(L, o->spec);
  case CMD_EXPLAIN: {
    struct explain_opts eo = {.rank = o->rank,
                              .json = o->json,
                              .full = o->full,
                              .svg = o->svg,
                              .placement = place,
                              .dims = o->dims,
                              .domain_size = o->domain_size,
                              .domain_dims = o->domain_dims};
    return hcg_cli_explain(stdout, L, &eo);
  }
  case CMD_ENV:
    hcg_rank_env(L, o->rank, print_env_var, NULL);
    if (place) {
      struct model m = {place, o->domain_size};
      hcg_rank_placement_env(L, o->rank, o->dims, placement_node, &m,
                             print_env_var, NULL);
      if (o->domain_size)
        hcg_rank_domain_env(L, o->rank, o->domain_dims, placement_domain, &m,
                            print_env_var, NULL);
    }
    return 0;
  }
  return 0;
}

/* The layout of the options, parsed for their world and language: 0, or
 * the exit status of the error it printed. */
static int load_layout(const struct options *o, hcg_layout **L) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = o->world;
  cfg.language = o->language;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_load(o->layout, &cfg, L, &err);
  if (rc) {
    fprintf(stderr, "hcg: %s\n", err.message);
    return rc == HCG_ESYNTAX || rc == HCG_ELAYOUT || rc == HCG_ELIMIT
               ? EXIT_BAD_LAYOUT
               : EXIT_OTHER;
  }
  if (o->rank >= hcg_layout_world_size(*L)) {
    fprintf(stderr, "hcg: rank %d is outside the world of %d ranks\n", o->rank,
            hcg_layout_world_size(*L));
    hcg_layout_free(*L);
    *L = NULL;
    return EXIT_OTHER;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct options o = {.cmd = (enum command) - 1, .rank = -1};
  if (argc < 2) {
    fputs(usage_text, stderr);
    return EXIT_USAGE;
  }
  int rc = hcg_cli_layout_dispatch(argc, argv);
  if (rc >= 0)
    return rc;
  if (!strcmp(argv[1], "help")) {
    if (argc > 3)
      return usage_error("%s", "help takes at most one COMMAND");
    if (print_help(argc == 3 ? argv[2] : NULL))
      return usage_error("no help for '%s': not a command or topic", argv[2]);
    return 0;
  }
  rc = parse_args(argc, argv, &o);
  if (rc)
    return rc;
  hcg_layout *L;
  rc = load_layout(&o, &L);
  if (rc)
    return rc;

  hcg_placement place;
  hcg_error err = HCG_ERROR_INIT;
  int placed = o.nodes || o.tasks_per_node;
  if (placed &&
      hcg_placement_make(hcg_layout_world_size(L), o.nodes, o.tasks_per_node,
                         o.distribution, &place, &err)) {
    hcg_layout_free(L);
    return usage_error("%s", err.message);
  }
  rc = run_command(L, &o, placed ? &place : NULL);
  hcg_layout_free(L);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    fprintf(stderr, "hcg: cannot write the output: %s\n", strerror(errno));
    return EXIT_OTHER;
  }
  return rc;
}
