/*
 * bench_rank.c - the cost of one rank's coordinates and collection groups as
 * the world grows. Prints figures; asserts nothing.
 *
 * For a 5-dim grid with an expert view (Megatron's ModuleGridSpec dims) at
 * 2^10, 2^16 and 2^20 ranks, over many ranks spread across the world:
 *   - coords + groups: coordinates in the base and expert view and the group
 *     descriptor of every collection field (what a task needs to know where
 *     it stands; O(dims) each);
 *   - env walk: every HCG_* variable of the rank (what the plugin exports),
 *     and their size in bytes ("NAME=VALUE\0" each);
 *   - members: listing the members of the rank's groups, which is
 *     O(own group sizes) by nature and is shown with that sum, without and
 *     with the whole-grid group (intra_dist_opt: the world), whose listing
 *     alone is O(world); ns per member is the per-unit cost.
 */
#include <stdio.h>
#include <stdlib.h>
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

static int env_bytes(void *arg, const char *name, const char *value) {
  *(long long *)arg += (long long)(strlen(name) + strlen(value) + 2);
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
  printf("%8s %9s %16s %11s %9s %12s %10s %12s %10s %9s\n", "world", "parse us",
         "coords+groups ns", "env walk ns", "env bytes", "members ns",
         "sum sizes", "+grid us", "sum+grid", "ns/member");
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

    long long envb = 0;
    hcg_rank_env(L, 0, env_bytes, &envb);

    /* Members of every group, without and with intra_dist_opt (the whole
     * grid). */
    double members_ns[2];
    long long total[2] = {0, 0};
    for (int whole = 0; whole < 2; whole++) {
      int member_samples = whole || shift >= 20 ? 200 : 2000;
      t0 = now();
      for (int i = 0; i < member_samples; i++) {
        int r = sample_rank(i, world);
        total[whole] = 0;
        for (int k = 0; k < nreq; k++) {
          hcg_group g;
          hcg_group_of_rank(L, &reqs[k], r, &g);
          if (g.size == world && !whole)
            continue;
          hcg_group_members(L, &g, members,
                            (int)(sizeof members / sizeof *members));
          total[whole] += g.size;
        }
        sink = members[0];
      }
      members_ns[whole] = (now() - t0) / member_samples * 1e9;
    }
    printf("%8d %9.2f %16.1f %11.1f %9lld %12.1f %10lld %12.1f %10lld %9.2f\n",
           world, parse_us, groups_ns, env_ns, envb, members_ns[0], total[0],
           members_ns[1] / 1e3, total[1], members_ns[1] / (double)total[1]);
    /* The per-unit costs doc/scaling.md uses, for bench/bench_all.sh. */
    const char *sum = getenv("HCG_BENCH_SUMMARY");
    FILE *f = sum && shift == 20 ? fopen(sum, "a") : NULL;
    if (f) {
      fprintf(f, "rank at 2^20: coords + groups\t%.0f ns\t\n", groups_ns);
      fprintf(f, "rank at 2^20: HCG_* environment\t%lld bytes\t\n", envb);
      fprintf(f, "rank at 2^20: listing members\t%.2f ns/member\t\n",
              members_ns[1] / (double)total[1]);
      fclose(f);
    }
    hcg_layout_free(L);
    nfields = nreq;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("\n%d collection fields provided; peak RSS %ld KiB\n", nfields,
         ru.ru_maxrss);
  return 0;
}
