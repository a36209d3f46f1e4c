/*
 * hcg-hello - the libhcg example: read the task's HCG_* environment, form
 * the whole process-group collection of each grid holding this rank with
 * one PMIx exchange, create the NCCL communicators when a GPU is there and
 * all-reduce on each, and print one line per group.
 *
 *   srun -n 8 --mpi=pmix --hcg-layout='llm:tp=2,pp=2,dp=*' hcg-hello
 *
 * Output (stdout), one line each, fields separated by spaces:
 *   rank R world W grids G1,G2 mode MODE pmix yes|no
 *   group R KEY members=A,B,.. index=I leader=L id=DIGEST
 *   comm R KEY size=S rank=I allreduce=ok|FAILED
 *   comms R skipped: WHY
 *   fences R F exchanges E
 * Errors go to stderr as "hcg-hello: rank R: HCG_E...: message", exit 1.
 * It is also the test helper of tests/runtime (see --help).
 */
#include "config.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"

#if defined(HCG_HAVE_NCCL) && defined(HCG_HAVE_CUDA)
#define HELLO_GPU 1
#include <cuda_runtime_api.h>
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop
#include <time.h>
#endif

static const char *const code_names[HCG_STATUS_COUNT] = {
    "HCG_OK",           "HCG_EINVAL",    "HCG_ENOMEM",    "HCG_ESYNTAX",
    "HCG_ELAYOUT",      "HCG_ELIMIT",    "HCG_ENOTFOUND", "HCG_ENOTMEMBER",
    "HCG_ENOTPROVIDED", "HCG_EIO",       "HCG_EENV",      "HCG_EPMIX",
    "HCG_ETIMEOUT",     "HCG_ENCCL",     "HCG_ECUDA",     "HCG_ENOTSUP",
    "HCG_EEXIST",       "HCG_EMISMATCH", "HCG_ERANGE",    "HCG_EBRIDGE"};

static const char *code_name(int rc) {
  return rc >= 0 && rc < HCG_STATUS_COUNT ? code_names[rc] : "HCG_E?";
}

static int die(int rank, int rc, const hcg_error *err) {
  fprintf(stderr, "hcg-hello: rank %d: %s: %s\n", rank, code_name(rc),
          err->message[0] ? err->message : hcg_strerror(rc));
  return 1;
}

static void usage(FILE *f) {
  fputs("usage: hcg-hello [options]\n"
        "Forms the groups of this task (from the HCG_* environment of srun\n"
        "--hcg-layout) with one PMIx exchange and prints one line per group.\n"
        "  --spec SPEC        the groups of GRID[/VIEW]:DIMS (repeatable)\n"
        "  --collection GRID  the whole collection of GRID (repeatable)\n"
        "                     default: every grid's collection (each rank\n"
        "                     forms the groups of its own grids)\n"
        "  --random-ids       random ids instead of ncclGetUniqueId\n"
        "  --no-comm          exchange ids only; create no communicator\n"
        "  --force-comm       call hcg_comm_create even without a device\n"
        "  --comm-option NAME=VALUE\n"
        "                     an hcg_comm_options field for every group:\n"
        "                     high_priority, min_ctas, max_ctas,\n"
        "                     cga_cluster_size, split_share, collnet_enable,\n"
        "                     traffic_class (integers), net_name (repeatable)\n"
        "  --exchanges N      run the exchange N times (default 1)\n"
        "  --timeout S        seconds before a missing peer is an error\n"
        "  --pmix MODE        require (default), auto or off\n"
        "  --tag TAG          namespace of the PMIx keys\n"
        "  --quiet            no group lines\n"
        "  -h, --help         this text\n",
        f);
}

/* 64-bit FNV-1a of an id, as 16 hex digits. */
static void digest(const unsigned char *id, char out[17]) {
  unsigned long long h = 0xcbf29ce484222325ull;
  for (int i = 0; i < HCG_ID_BYTES; i++) {
    h ^= id[i];
    h *= 0x100000001b3ull;
  }
  snprintf(out, 17, "%016llx", h);
}

struct opts {
  const char *specs[64];
  int nspecs;
  const char *collections[HCG_MAX_GRIDS];
  int ncollections;
  int random_ids, no_comm, force_comm, quiet, exchanges, timeout, pmix;
  const char *tag;
  hcg_comm_options comm; /* --comm-option, for every entry */
};

/* NAME=VALUE into an hcg_comm_options field; -1 when unknown or not an
 * integer (libhcg checks the ranges). */
static int comm_option(hcg_comm_options *c, const char *arg) {
  static const struct {
    const char *name;
    size_t off;
  } fields[] = {
      {"high_priority", offsetof(hcg_comm_options, high_priority)},
      {"min_ctas", offsetof(hcg_comm_options, min_ctas)},
      {"max_ctas", offsetof(hcg_comm_options, max_ctas)},
      {"cga_cluster_size", offsetof(hcg_comm_options, cga_cluster_size)},
      {"split_share", offsetof(hcg_comm_options, split_share)},
      {"collnet_enable", offsetof(hcg_comm_options, collnet_enable)},
      {"traffic_class", offsetof(hcg_comm_options, traffic_class)},
  };
  const char *eq = strchr(arg, '=');
  if (!eq)
    return -1;
  size_t len = (size_t)(eq - arg);
  if (len == strlen("net_name") && !strncmp(arg, "net_name", len)) {
    c->net_name = eq + 1;
    return 0;
  }
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    if (strlen(fields[i].name) != len || strncmp(arg, fields[i].name, len))
      continue;
    char *end;
    long v = strtol(eq + 1, &end, 10);
    if (!eq[1] || *end || v < INT_MIN || v > INT_MAX)
      return -1;
    *(int *)((char *)c + fields[i].off) = (int)v;
    return 0;
  }
  return -1;
}

static int parse_args(int argc, char **argv, struct opts *o) {
  memset(o, 0, sizeof *o);
  o->comm = (hcg_comm_options)HCG_COMM_OPTIONS_INIT;
  o->exchanges = 1;
  o->pmix = HCG_PMIX_REQUIRE;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
      usage(stdout);
      exit(0);
    } else if (!strcmp(a, "--random-ids")) {
      o->random_ids = 1;
    } else if (!strcmp(a, "--no-comm")) {
      o->no_comm = 1;
    } else if (!strcmp(a, "--force-comm")) {
      o->force_comm = 1;
    } else if (!strcmp(a, "--quiet")) {
      o->quiet = 1;
    } else if (v && !strcmp(a, "--spec") && o->nspecs < 64) {
      o->specs[o->nspecs++] = v;
      i++;
    } else if (v && !strcmp(a, "--collection") &&
               o->ncollections < HCG_MAX_GRIDS) {
      o->collections[o->ncollections++] = v;
      i++;
    } else if (v && !strcmp(a, "--exchanges")) {
      o->exchanges = atoi(v);
      i++;
    } else if (v && !strcmp(a, "--timeout")) {
      o->timeout = atoi(v);
      i++;
    } else if (v && !strcmp(a, "--comm-option")) {
      if (comm_option(&o->comm, v))
        return -1;
      i++;
    } else if (v && !strcmp(a, "--tag")) {
      o->tag = v;
      i++;
    } else if (v && !strcmp(a, "--pmix")) {
      if (!strcmp(v, "require"))
        o->pmix = HCG_PMIX_REQUIRE;
      else if (!strcmp(v, "auto"))
        o->pmix = HCG_PMIX_AUTO;
      else if (!strcmp(v, "off"))
        o->pmix = HCG_PMIX_OFF;
      else
        return -1;
      i++;
    } else {
      return -1;
    }
  }
  return o->exchanges >= 1 && o->timeout >= 0 ? 0 : -1;
}

static int build_set(hcg_ctx *ctx, const struct opts *o, hcg_groupset **out,
                     hcg_error *err) {
  const hcg_layout *L = hcg_ctx_layout(ctx);
  hcg_groupset *set;
  int rc = hcg_groupset_create(L, &set, err);
  if (rc)
    return rc;
  for (int i = 0; i < o->nspecs && !rc; i++)
    rc = hcg_groupset_add(set, o->specs[i], &o->comm, err);
  for (int i = 0; i < o->ncollections && !rc; i++) {
    int g = hcg_layout_find_grid(L, o->collections[i]);
    if (g < 0) {
      snprintf(err->message, sizeof err->message, "no grid named '%s'",
               o->collections[i]);
      rc = HCG_ENOTFOUND;
    } else {
      rc = hcg_groupset_add_collection(set, g, &o->comm, err);
    }
  }
  /* By default every grid's collection: a rank forms only the groups it
   * is in (its own grids'), and every rank passes the same set, which the
   * naive exchange of bench/hcg-hello-naive needs. */
  if (!o->nspecs && !o->ncollections)
    for (int g = 0; g < hcg_layout_num_grids(L) && !rc; g++)
      rc = hcg_groupset_add_collection(set, g, &o->comm, err);
  if (rc) {
    hcg_groupset_free(set);
    return rc;
  }
  *out = set;
  return HCG_OK;
}

static void print_groups(const hcg_ctx *ctx, const hcg_exchange *x) {
  int rank = hcg_ctx_rank(ctx);
  for (int i = 0; i < hcg_exchange_num_groups(x); i++) {
    hcg_group_id g;
    hcg_exchange_group(x, i, &g);
    int *m = malloc((size_t)g.group.size * sizeof *m);
    if (!m || hcg_exchange_members(x, i, m, g.group.size)) {
      free(m);
      continue;
    }
    char d[17];
    digest(g.id, d);
    /* A line can be long for big groups: print it in one write. */
    size_t cap = 128 + strlen(g.key) + 12 * (size_t)g.group.size;
    char *line = malloc(cap);
    if (line) {
      size_t n =
          (size_t)snprintf(line, cap, "group %d %s members=", rank, g.key);
      for (int k = 0; k < g.group.size; k++)
        n += (size_t)snprintf(line + n, cap - n, "%s%d", k ? "," : "", m[k]);
      snprintf(line + n, cap - n, " index=%d leader=%d id=%s\n", g.group.index,
               g.leader, d);
      fputs(line, stdout);
      free(line);
    }
    free(m);
  }
}

#ifdef HELLO_GPU
/* Sums rank+1 over each communicator and checks the result against its
 * members; returns 0 when every sum is right. */
static int allreduce_all(const hcg_ctx *ctx, const hcg_exchange *x) {
  int bad = 0, rank = hcg_ctx_rank(ctx);
  for (int i = 0; i < hcg_exchange_num_groups(x); i++) {
    hcg_group_id g;
    hcg_comm *c;
    hcg_exchange_group(x, i, &g);
    if (hcg_comm_find_key(ctx, g.key, &c))
      continue;
    int *m = malloc((size_t)g.group.size * sizeof *m);
    long long want = 0;
    if (!m || hcg_exchange_members(x, i, m, g.group.size)) {
      free(m);
      bad = 1;
      continue;
    }
    for (int k = 0; k < g.group.size; k++)
      want += m[k] + 1;
    free(m);
    double *buf = NULL;
    double v = rank + 1, got = -1;
    cudaStream_t s = hcg_comm_stream(c);
    ncclComm_t nc = hcg_comm_nccl(c);
    int ok =
        cudaMalloc((void **)&buf, sizeof v) == cudaSuccess &&
        cudaMemcpy(buf, &v, sizeof v, cudaMemcpyHostToDevice) == cudaSuccess;
    if (ok) {
      ncclResult_t r = ncclAllReduce(buf, buf, 1, ncclDouble, ncclSum, nc, s);
      /* A non-blocking communicator: "in progress" is accepted, not
       * failed; wait before the next call on it. */
      hcg_error werr = HCG_ERROR_INIT;
      if (r == ncclInProgress && hcg_comm_wait(c, &werr) == HCG_OK)
        r = ncclSuccess;
      else if (r == ncclInProgress)
        fprintf(stderr, "hcg-hello: rank %d: %s\n", rank, werr.message);
      ok = r == ncclSuccess && cudaStreamSynchronize(s) == cudaSuccess &&
           cudaMemcpy(&got, buf, sizeof got, cudaMemcpyDeviceToHost) ==
               cudaSuccess;
    }
    cudaFree(buf);
    ok = ok && got == (double)want;
    printf("comm %d %s size=%d rank=%d allreduce=%s sum=%.0f want=%lld\n", rank,
           g.key, hcg_comm_size(c), hcg_comm_rank(c), ok ? "ok" : "FAILED", got,
           want);
    bad |= !ok;
  }
  return bad;
}
#endif

/* The first line: this rank, the world, its grids, the mode, PMIx. */
static void print_hello(hcg_ctx *ctx) {
  const hcg_layout *L = hcg_ctx_layout(ctx);
  char grids[HCG_MAX_GRIDS * (HCG_MAX_NAME + 1) + 1] = "";
  for (int i = 0; i < hcg_ctx_num_grids(ctx); i++) {
    strcat(grids, i ? "," : "");
    strcat(grids, hcg_grid_name(L, hcg_ctx_grid(ctx, i)));
  }
  printf("rank %d world %d grids %s mode %s pmix %s\n", hcg_ctx_rank(ctx),
         hcg_ctx_world_size(ctx), grids, hcg_mode_name(hcg_layout_mode(L)),
         hcg_ctx_has_pmix(ctx) ? "yes" : "no");
}

/* Communicators only where there is a device to put them on (or when
 * --force-comm wants hcg_comm_create's error). */
static int comm_wanted(hcg_ctx *ctx, const struct opts *o) {
  if (o->no_comm)
    return 0;
  int dev;
  hcg_error derr = HCG_ERROR_INIT;
  int drc = hcg_ctx_device(ctx, &dev, &derr);
  if (drc && !o->force_comm) {
    printf("comms %d skipped: %s: %s\n", hcg_ctx_rank(ctx), code_name(drc),
           derr.message);
    return 0;
  }
  return 1;
}

int main(int argc, char **argv) {
  struct opts o;
  if (parse_args(argc, argv, &o)) {
    usage(stderr);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  hcg_error err = HCG_ERROR_INIT;
  hcg_ctx_config cfg = HCG_CTX_CONFIG_INIT;
  cfg.pmix = o.pmix;
  cfg.timeout_s = o.timeout > 0 ? o.timeout : HCG_UNSET; /* 0: default */
  cfg.tag = o.tag;
  hcg_ctx *ctx = NULL;
  const char *env_rank = getenv("HCG_RANK");
  int rc = hcg_ctx_init(&cfg, &ctx, &err);
  if (rc)
    return die(env_rank ? atoi(env_rank) : -1, rc, &err);
  int rank = hcg_ctx_rank(ctx);
  print_hello(ctx);

  hcg_groupset *set = NULL;
  hcg_exchange *x = NULL;
  int status = 0;
  if ((rc = build_set(ctx, &o, &set, &err)))
    goto fail;

  int want_comm = comm_wanted(ctx, &o);

  int flags = o.random_ids || want_comm ? HCG_EXCHANGE_RANDOM_IDS : 0;
  for (int e = 0; e < o.exchanges; e++) {
    hcg_exchange_free(x);
    x = NULL;
    if ((rc = hcg_exchange_ids(ctx, set, flags, &x, &err)))
      goto fail;
  }
  if (!o.quiet)
    print_groups(ctx, x);

  if (want_comm) {
    if ((rc = hcg_comm_create(ctx, set, &err))) {
      printf("comms %d failed kept %d fences %lld\n", rank,
             hcg_ctx_num_comms(ctx), hcg_ctx_num_fences(ctx));
      goto fail;
    }
#ifdef HELLO_GPU
    status = allreduce_all(ctx, x);
#endif
    if ((rc = hcg_comm_destroy(ctx, set, &err)))
      goto fail;
  }

  hcg_ctx_stats st;
  hcg_ctx_get_stats(ctx, &st);
  printf("fences %d %lld exchanges %lld\n", rank, st.fences, st.exchanges);
  hcg_exchange_free(x);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
  return status;

fail:
  die(rank, rc, &err);
  hcg_exchange_free(x);
  hcg_groupset_free(set);
  hcg_ctx_free(ctx);
  return 1;
}
