/*
 * bench_plugin.c - what the hcg SPANK plugin computes for each task in
 * slurmstepd, as the world grows. Prints figures; asserts nothing.
 *
 * Per task, slurm_spank_task_init reads the value srun forwarded, parses
 * the canonical layout for the step's task count and walks the task's
 * HCG_* variables (spank/forward.c: hcgp_task_env, the very code the plugin
 * runs; only spank_setenv is replaced by a counter). Ranks are sampled
 * across the whole world, so a cost that grew with the world would show.
 * A heterogeneous step (spank/hetstep.c: hcgp_het_task_env) is timed the
 * same way: its slurmstepd parses srun's text, checks the components and
 * then does the plain step's work.
 * Then the placement check of a task's node (spank/placement.c and the
 * core's hcg_rank_placement, as placement_slurm.c calls them) at 8 local
 * tasks: the per-task cost of the check, O(local tasks x group size).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "hetstep.h"
#include "placement.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct sink {
  long long bytes;
  int vars;
};

static int count_var(void *arg, const char *name, const char *value) {
  struct sink *s = arg;
  s->bytes += (long long)strlen(name) + (long long)strlen(value);
  s->vars++;
  return 0;
}

/* Spreads samples over the world with a multiplicative hash. */
static uint32_t sample_rank(int i, int world) {
  return (uint32_t)(((unsigned long long)i * 2654435761ULL) % (unsigned)world);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct layout_case {
  const char *name;
  const char *text;
};

/* vision on the first quarter of the step (component 0), llm on the rest
 * (component 1). */
static int het_steps(void) {
  static const int shifts[] = {10, 16, 20};
  enum { SAMPLES = 20000, ROUNDS = 7 };
  printf("\nheterogeneous step of two components (vision on the first "
         "quarter, llm on the rest)\n");
  printf("%-20s %9s %8s %6s %12s\n", "layout", "world", "bytes", "vars",
         "ns per task");
  for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
    int world = 1 << shifts[s], first = world / 4;
    char text[128], *fwd = NULL;
    snprintf(text, sizeof text, "vision:tp=8,dp=%d; llm:tp=8,cp=2,dp=*,pp=4",
             first / 8);
    hcg_error err = HCG_ERROR_INIT;
    if (hcgp_het_encode(text, strlen(text), &fwd, &err)) {
      fprintf(stderr, "bench_plugin: %s\n", err.message);
      return 1;
    }
    size_t len = strlen(fwd);
    char ntasks[16];
    snprintf(ntasks, sizeof ntasks, "%d", world);
    double rounds[ROUNDS];
    struct sink sink = {0, 0};
    for (int r = 0; r < ROUNDS; r++) {
      double t0 = now();
      for (int i = 0; i < SAMPLES; i++) {
        uint32_t g = sample_rank(i + r * SAMPLES, world);
        uint32_t base = g < (uint32_t)first ? 0 : (uint32_t)first;
        uint32_t count = base ? (uint32_t)(world - first) : (uint32_t)first;
        char procid[16];
        snprintf(procid, sizeof procid, "%u", g);
        struct hcgp_het_task t = {
            {42, 0, count, g - base, 1, 0, NULL}, procid, ntasks, "2"};
        if (hcgp_het_task_env(fwd, len, &t, count_var, &sink, NULL, &err)) {
          fprintf(stderr, "bench_plugin: %s\n", err.message);
          return 1;
        }
      }
      rounds[r] = (now() - t0) / SAMPLES * 1e9;
    }
    qsort(rounds, ROUNDS, sizeof rounds[0], cmp_double);
    printf("%-20s %9d %8zu %6d %12.0f\n", "MIMO over components", world, len,
           sink.vars / (ROUNDS * SAMPLES), rounds[ROUNDS / 2]);
    free(fwd);
  }
  return 0;
}

/* The layout for `world` ranks, or NULL (said on stderr). */
static hcg_layout *parse(const char *text, int world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_layout *L = NULL;
  hcg_error err = HCG_ERROR_INIT;
  if (hcg_layout_parse(text, strlen(text), &cfg, &L, &err))
    fprintf(stderr, "bench_plugin: %s\n", err.message);
  return L;
}

/* ---- the placement check (spank/placement_slurm.c) ---------------------- */

/* A node of LOCAL consecutive tasks; like Slurm's S_JOB_GLOBAL_TO_LOCAL_ID,
 * a lookup scans the node's task list. */
enum { LOCAL = 8 };
struct node {
  int ids[LOCAL];
};
static int on_node(void *arg, int rank) {
  const struct node *n = arg;
  for (int i = 0; i < LOCAL; i++)
    if (n->ids[i] == rank)
      return 0;
  return -1;
}

/* Per task: its own HCG_*_LOCAL variables, then the node-wide check over
 * all LOCAL tasks, as placement_slurm.c does (the layout is parsed once
 * here; the plugin parses it once per task, timed by the table above). */
static int bench_placement(void) {
  static const struct layout_case cases[] = {
      {"tp=8 (inside)", "tp=8,dp=*"},
      {"dp=2,tp=8 (across)", "dp=2,tp=8,rest=*"},
      {"grid + expert view",
       "llm:tp=8,cp=2,dp=*,pp=8; llm/expert:expt_tp=1,ep=8,expt_dp=*,pp"},
  };
  static const int shifts[] = {10, 20};
  enum { NODES = 4096, ROUNDS = 7 };
  printf("\nplacement check per task in slurm_spank_task_init, %d local "
         "tasks per node\n(its HCG_*_LOCAL + the node's %d tasks x their "
         "intra-node groups, lookups scanning the node's task list as "
         "Slurm does; median of %d rounds over %d nodes)\n\n",
         LOCAL, LOCAL, ROUNDS, NODES);
  printf("%-20s %9s %9s %6s %12s\n", "layout", "world", "crossing", "vars",
         "ns per task");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
      int world = 1 << shifts[s];
      hcg_layout *L = parse(cases[c].text, world);
      if (!L)
        return 1;
      double rounds[ROUNDS];
      struct sink sink = {0, 0};
      long long crossing = 0;
      for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        for (int k = 0; k < NODES; k++) {
          struct node n;
          int first = (int)(sample_rank(k + r * NODES, world / LOCAL)) * LOCAL;
          for (int i = 0; i < LOCAL; i++)
            n.ids[i] = first + i;
          for (int i = 0; i < LOCAL; i++) {
            struct hcgp_node_check chk;
            if (hcg_rank_placement_env(L, n.ids[i], NULL, on_node, &n,
                                       count_var, &sink) ||
                hcgp_node_check(L, NULL, n.ids, LOCAL, on_node, &n, &chk)) {
              fprintf(stderr, "bench_plugin: placement check failed\n");
              return 1;
            }
            crossing += chk.crossing;
          }
        }
        rounds[r] = (now() - t0) / (NODES * LOCAL) * 1e9;
      }
      qsort(rounds, ROUNDS, sizeof rounds[0], cmp_double);
      printf("%-20s %9d %9lld %6d %12.0f\n", cases[c].name, world,
             crossing / (ROUNDS * NODES * LOCAL),
             sink.vars / (ROUNDS * NODES * LOCAL), rounds[ROUNDS / 2]);
      hcg_layout_free(L);
    }
  return 0;
}

int main(void) {
  static const struct layout_case cases[] = {
      {"grid + expert view",
       "llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8;"
       "llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp"},
      {"MIMO, 3 modules",
       "audio@0:tp=4,dp=*; vision@0:tp=8,dp=*;"
       "llm@0:tp=8,cp=2,dp=*,pp=4; llm/expert:expt_tp=2,ep=8,expt_dp=*,pp"},
  };
  static const int shifts[] = {10, 16, 20};
  enum { SAMPLES = 20000, ROUNDS = 7 };

  printf("hcg SPANK plugin, per-task work in slurm_spank_task_init\n");
  printf("(decode srun's value + parse the canonical layout + walk the "
         "task's HCG_* variables; median of %d rounds of %d ranks sampled "
         "across the world)\n\n",
         ROUNDS, SAMPLES);
  printf("%-20s %9s %8s %6s %12s\n", "layout", "world", "bytes", "vars",
         "ns per task");
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    for (size_t s = 0; s < sizeof shifts / sizeof shifts[0]; s++) {
      int world = 1 << shifts[s];
      hcg_layout *L = parse(cases[c].text, world);
      if (!L)
        return 1;
      hcg_error err = HCG_ERROR_INIT;
      char *fwd = NULL;
      if (hcgp_forward_encode(42, 0, hcg_grid_name(L, hcg_layout_language(L)),
                              hcg_layout_text(L), &fwd, &err)) {
        fprintf(stderr, "bench_plugin: %s\n", err.message);
        return 1;
      }
      size_t len = strlen(fwd);
      double rounds[ROUNDS];
      struct sink sink = {0, 0};
      for (int r = 0; r < ROUNDS; r++) {
        double t0 = now();
        for (int i = 0; i < SAMPLES; i++) {
          struct hcgp_task t = {
              42, 0,   (uint32_t)world, sample_rank(i + r * SAMPLES, world), 1,
              0,  NULL};
          if (hcgp_task_env(fwd, len, &t, count_var, &sink, &err)) {
            fprintf(stderr, "bench_plugin: %s\n", err.message);
            return 1;
          }
        }
        rounds[r] = (now() - t0) / SAMPLES * 1e9;
      }
      qsort(rounds, ROUNDS, sizeof rounds[0], cmp_double);
      printf("%-20s %9d %8zu %6d %12.0f\n", cases[c].name, world, len,
             sink.vars / (ROUNDS * SAMPLES), rounds[ROUNDS / 2]);
      free(fwd);
      hcg_layout_free(L);
    }
  }
  if (het_steps())
    return 1;
  return bench_placement();
}
