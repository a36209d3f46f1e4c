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
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"
#include "hetstep.h"

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
      hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
      cfg.world_size = world;
      hcg_layout *L = NULL;
      hcg_error err = HCG_ERROR_INIT;
      if (hcg_layout_parse(cases[c].text, strlen(cases[c].text), &cfg, &L,
                           &err)) {
        fprintf(stderr, "bench_plugin: %s\n", err.message);
        return 1;
      }
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
  return het_steps();
}
