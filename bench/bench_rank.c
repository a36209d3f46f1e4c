/*
 * bench_rank.c - the cost of one rank's coordinates and collection groups as
 * the world grows. Prints figures; asserts nothing.
 *
 * For a 5-dim grid with an expert view (Megatron's ModuleGridSpec dims) at
 * 2^10, 2^16 and 2^20 ranks, over many ranks spread across the world:
 *   - coords + groups: coordinates in the base and expert view and the group
 *     descriptor of every collection field (what a task needs to know where
 *     it stands; O(dims) each);
 *   - env walk: every HCG_* variable of the rank (what the plugin exports);
 *   - members: listing the members of the rank's groups, which is
 *     O(own group sizes) by nature and is shown with that sum.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hcg.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile long long sink;

static int count_var(void *arg, const char *name, const char *value) {
  (void)name;
  *(long long *)arg += value[0];
  return 0;
}

/* Spreads n samples over the world with a multiplicative hash. */
static int sample_rank(int i, int world) {
  return (int)(((unsigned long long)i * 2654435761ULL) % (unsigned)world);
}

int main(void) {
  static const char layout[] =
      "llm:tp=8,gtp_remat=1,cp=2,dp=*,pp=8;"
      "llm/expert:expt_tp=1,ep=8,expt_gtp_remat=1,expt_dp=*,pp";
  printf("hcg per-rank cost, layout '%s'\n\n", layout);
  printf("%10s %10s %16s %12s %14s %18s\n", "world", "parse us",
         "coords+groups ns", "env walk ns", "members ns", "sum of group sizes");
  static int members[1 << 21];
  static const int shifts[] = {10, 16, 20};
  int nfields = 0;
  for (int s = 0; s < 3; s++) {
    int shift = shifts[s], world = 1 << shift;
    hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
    cfg.world_size = world;
    hcg_layout *L = NULL;
    hcg_error err = HCG_ERROR_INIT;

    int parses = 2000;
    double t0 = now();
    for (int i = 0; i < parses; i++) {
      hcg_layout_free(L);
      if (hcg_layout_parse(layout, strlen(layout), &cfg, &L, &err)) {
        fprintf(stderr, "bench: %s\n", err.message);
        return 1;
      }
    }
    double parse_us = (now() - t0) / parses * 1e6;

    hcg_request reqs[HCG_FIELD_COUNT];
    int nreq = 0;
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      if (hcg_collection_request(L, 0, f, &reqs[nreq]) == HCG_OK)
        nreq++;

    int samples = 200000;
    t0 = now();
    for (int i = 0; i < samples; i++) {
      int r = sample_rank(i, world), c[HCG_MAX_DIMS];
      hcg_rank_coords(L, 0, 0, r, c, HCG_MAX_DIMS);
      hcg_rank_coords(L, 0, 1, r, c, HCG_MAX_DIMS);
      long long acc = c[0];
      for (int k = 0; k < nreq; k++) {
        hcg_group g;
        hcg_group_of_rank(L, &reqs[k], r, &g);
        acc += g.first + g.index;
      }
      sink = acc;
    }
    double groups_ns = (now() - t0) / samples * 1e9;

    int env_samples = 50000;
    t0 = now();
    for (int i = 0; i < env_samples; i++) {
      long long acc = 0;
      hcg_rank_env(L, sample_rank(i, world), count_var, &acc);
      sink = acc;
    }
    double env_ns = (now() - t0) / env_samples * 1e9;

    /* Members of every group but intra_dist_opt (the whole grid). */
    int member_samples = shift >= 20 ? 200 : 2000;
    long long total = 0;
    t0 = now();
    for (int i = 0; i < member_samples; i++) {
      int r = sample_rank(i, world);
      total = 0;
      for (int k = 0; k < nreq; k++) {
        hcg_group g;
        hcg_group_of_rank(L, &reqs[k], r, &g);
        if (g.size == world)
          continue;
        hcg_group_members(L, &g, members,
                          (int)(sizeof members / sizeof *members));
        total += g.size;
      }
      sink = members[0];
    }
    double members_ns = (now() - t0) / member_samples * 1e9;
    printf("%10d %10.2f %16.1f %12.1f %14.1f %18lld\n", world, parse_us,
           groups_ns, env_ns, members_ns, total);
    hcg_layout_free(L);
    nfields = nreq;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("\n%d collection fields provided; peak RSS %ld KiB\n", nfields,
         ru.ru_maxrss);
  return 0;
}
