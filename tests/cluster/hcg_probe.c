/*
 * hcg_probe.c - the test helper of the cluster tests (tests/cluster, the .bats
 * files) for what hcg-hello does not show.
 *
 *   hcg_probe pmix
 *
 * Checks what the plugin exported against PMIx (Slurm's mpi/pmix):
 * hcg_ctx_init with PMIx required compares HCG_RANK with the PMIx rank and
 * HCG_WORLD_SIZE with PMIX_JOB_SIZE. Prints "ok RANK SIZE" or "bad ...".
 *
 *   hcg_probe contexts N TAG1 TAG2 ... [--timeout S]
 *
 * Several contexts in one process, each forming the whole collection of the
 * rank's grids.
 * Creates N contexts (PMIx required), with the given tags ("-" for none),
 * and runs one exchange in each, in order. Prints per context and group
 *   ctx C rank R KEY leader=L id=DIGEST
 * then "ctx C rank R fences F", or "ctx C rank R error CODE: message".
 * Exits 0 when every exchange succeeded.
 *
 *   hcg_probe publish [ROUNDS]
 *
 * hcg_ctx_publish and hcg_ctx_fetch (PMIx required): every rank publishes
 * "rank R round K" padded to 64 bytes, ROUNDS times (default 2), and after
 * each publication fetches the bytes of rank 0, of the next rank and of the
 * previous one (and the PROBE_SILENT rank's), and checks them. Prints
 * "ok R gets G fences F" or "bad R ...". The rank PROBE_SILENT names does not
 * publish: it leaves before the fence (PROBE_TIMEOUT: the context's timeout).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"

#define MAXC 4

static unsigned long long digest(const unsigned char *id) {
  unsigned long long h = 0xcbf29ce484222325ull;
  for (int i = 0; i < HCG_ID_BYTES; i++) {
    h ^= id[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

static int pmix_probe(void) {
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.pmix = HCG_PMIX_REQUIRE;
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_ctx_init(&cfg, &ctx, &err);
  const char *rank = getenv("HCG_RANK"), *world = getenv("HCG_WORLD_SIZE");
  if (rc)
    printf("bad %s: %s\n", hcg_strerror(rc), err.message);
  else
    printf("ok %d %d HCG_RANK=%s HCG_WORLD_SIZE=%s\n", hcg_ctx_rank(ctx),
           hcg_ctx_world_size(ctx), rank, world);
  hcg_ctx_free(ctx);
  return rc ? 1 : 0;
}

static int publish_probe(int rounds) {
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.pmix = HCG_PMIX_REQUIRE;
  const char *t = getenv("PROBE_TIMEOUT");
  if (t)
    cfg.timeout_s = atoi(t);
  hcg_ctx *ctx = NULL;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_ctx_init(&cfg, &ctx, &err);
  if (rc) {
    printf("bad init %s: %s\n", hcg_strerror(rc), err.message);
    return 1;
  }
  int me = hcg_ctx_rank(ctx), n = hcg_ctx_world_size(ctx);
  const char *silent = getenv("PROBE_SILENT");
  if (silent && atoi(silent) == me) {
    printf("silent %d\n", me);
    hcg_ctx_free(ctx);
    return 0;
  }
  char mine[64], got[64], want[64];
  for (int k = 0; k < rounds && !rc; k++) {
    memset(mine, 0, sizeof mine);
    snprintf(mine, sizeof mine, "rank %d round %d", me, k);
    long long epoch = -1;
    rc = hcg_ctx_publish(ctx, mine, sizeof mine, &epoch, &err);
    if (rc) {
      printf("bad %d publish %s: %s\n", me, hcg_strerror(rc), err.message);
      break;
    }
    /* And the silent rank's, when there is one: a PMIx that completes the
     * fence without it (PMIx 5) shows its absence there. */
    int peers[4] = {0, (me + 1) % n, (me + n - 1) % n,
                    silent ? atoi(silent) : 0};
    int np = silent ? 4 : 3;
    for (int i = 0; i < np && !rc; i++) {
      rc = hcg_ctx_fetch(ctx, epoch, peers[i], got, sizeof got, &err);
      memset(want, 0, sizeof want);
      snprintf(want, sizeof want, "rank %d round %d", peers[i], k);
      if (rc)
        printf("bad %d fetch %d %s: %s\n", me, peers[i], hcg_strerror(rc),
               err.message);
      else if (memcmp(got, want, sizeof want)) {
        printf("bad %d fetch %d: got '%.64s', want '%s'\n", me, peers[i], got,
               want);
        rc = 1;
      }
    }
  }
  if (!rc) {
    hcg_ctx_stats st;
    hcg_ctx_get_stats(ctx, &st);
    printf("ok %d gets %lld fences %lld\n", me, st.gets,
           hcg_ctx_num_fences(ctx));
  }
  hcg_ctx_free(ctx);
  return rc ? 1 : 0;
}

int main(int argc, char **argv) {
  if (argc == 2 && !strcmp(argv[1], "pmix"))
    return pmix_probe();
  if ((argc == 2 || argc == 3) && !strcmp(argv[1], "publish"))
    return publish_probe(argc == 3 ? atoi(argv[2]) : 2);
  if (argc < 3 || strcmp(argv[1], "contexts")) {
    fprintf(stderr, "usage: hcg_probe pmix\n"
                    "       hcg_probe contexts N TAG... [--timeout S]\n"
                    "       hcg_probe publish [ROUNDS]\n");
    return 2;
  }
  int n = atoi(argv[2]), timeout = 0;
  if (n < 1 || n > MAXC || argc < 3 + n) {
    fprintf(stderr, "hcg_probe: N must be 1..%d with N tags\n", MAXC);
    return 2;
  }
  if (argc >= 5 + n && !strcmp(argv[3 + n], "--timeout"))
    timeout = atoi(argv[4 + n]);
  setvbuf(stdout, NULL, _IOLBF, 0);

  hcg_ctx *ctx[MAXC] = {0};
  hcg_groupset *set[MAXC] = {0};
  int failed = 0;
  for (int c = 0; c < n; c++) {
    hcg_error err = HCG_ERROR_INIT;
    hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
    cfg.pmix = HCG_PMIX_REQUIRE;
    cfg.timeout_s = timeout > 0 ? timeout : HCG_UNSET;
    cfg.tag = strcmp(argv[3 + c], "-") ? argv[3 + c] : NULL;
    int rc = hcg_ctx_init(&cfg, &ctx[c], &err);
    if (!rc)
      rc = hcg_groupset_create(hcg_ctx_layout(ctx[c]), &set[c], &err);
    for (int i = 0; !rc && i < hcg_ctx_num_grids(ctx[c]); i++)
      rc = hcg_groupset_add_collection(set[c], hcg_ctx_grid(ctx[c], i), NULL,
                                       &err);
    if (rc) {
      printf("ctx %d rank -1 error %s: %s\n", c, hcg_strerror(rc), err.message);
      failed = 1;
      goto out;
    }
  }
  for (int c = 0; c < n; c++) {
    hcg_error err = HCG_ERROR_INIT;
    hcg_exchange *x = NULL;
    int rank = hcg_ctx_rank(ctx[c]);
    int rc =
        hcg_exchange_ids(ctx[c], set[c], HCG_EXCHANGE_RANDOM_IDS, &x, &err);
    if (rc) {
      printf("ctx %d rank %d error %d: %s\n", c, rank, rc, err.message);
      failed = 1;
      break;
    }
    for (int i = 0; i < hcg_exchange_num_groups(x); i++) {
      hcg_group_id g;
      hcg_exchange_group(x, i, &g);
      printf("ctx %d rank %d %s leader=%d id=%016llx\n", c, rank, g.key,
             g.leader, digest(g.id));
    }
    printf("ctx %d rank %d fences %lld\n", c, rank, hcg_ctx_num_fences(ctx[c]));
    hcg_exchange_free(x);
  }
out:
  for (int c = 0; c < n; c++) {
    hcg_groupset_free(set[c]);
    hcg_ctx_free(ctx[c]);
  }
  return failed;
}
