/*
 * rt.h - libhcg's private runtime structures: contexts, group sets, the
 * per-rank plan of an exchange, and the PMIx and NCCL back ends.
 *
 * Internal symbols are named hcgrt_ so that the library's export filter
 * (^hcg_) keeps them private.
 */
#ifndef HCG_RT_H
#define HCG_RT_H

#include <stddef.h>
#include <stdint.h>

#include "core/fail.h"
#include "hcg.h"

/* ---- errors ------------------------------------------------------------ */

/* Prefixes err->message with a formatted context ("HCG_LAYOUT: "). */
void hcgrt_prefix(hcg_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- the PMIx back end (pmix.c; pmix_abi.h says how PMIx is reached) --- */

struct hcgrt_pmix; /* opaque: a connection to the PMIx server */

/* 1 when the process environment says a PMIx server started us. */
int hcgrt_pmix_present(void);
/* HCG_OK when this process can call PMIx; else HCG_ENOTSUP and why: a
 * build without PMIx, or (PMIx loaded at run time) no loadable
 * libpmix.so.2. */
int hcgrt_pmix_usable(hcg_error *err);
/* Initializes PMIx (reference-counted by PMIx) and reads rank and job size.
 * HCG_EPMIX with PMIx's words on failure; HCG_ENOTSUP without PMIx (as
 * hcgrt_pmix_usable). */
int hcgrt_pmix_open(struct hcgrt_pmix **out, int *rank, long long *job_size,
                    hcg_error *err);
void hcgrt_pmix_close(struct hcgrt_pmix *px);
/* PMIX_LOCAL_RANK of this process, or -1. */
int hcgrt_pmix_local_rank(struct hcgrt_pmix *px);
/* 1 when this process already published `key` (a context collision). */
int hcgrt_pmix_have_own(struct hcgrt_pmix *px, const char *key);
int hcgrt_pmix_put(struct hcgrt_pmix *px, const char *key,
                   const unsigned char *data, size_t len, hcg_error *err);
int hcgrt_pmix_commit(struct hcgrt_pmix *px, hcg_error *err);
/* One fence over all processes of the namespace, no data collection.
 * `what` names it in messages ("the group exchange"). */
int hcgrt_pmix_fence(struct hcgrt_pmix *px, int timeout_s, const char *what,
                     hcg_error *err);

/* Fetches `n` values of `len` bytes: key[i] from rank[i], into out[i].
 * One batch under one deadline of timeout_s (pmix.c says why the gets
 * run one after another). */
struct hcgrt_get {
  int rank;
  const char *key;
  unsigned char *out;
  const char *group; /* for messages */
  int publication;   /* 1: a fetch of what `rank` published (hcg_ctx_fetch),
                        named so in messages; 0: a group's id */
  size_t len;        /* its own length; 0: the batch's `len` */
  /* Instead of out: a value of any size (up to HCGRT_GET_DYN_MAX) into a
   * new buffer *dyn (the caller frees it) of *dyn_len bytes. */
  unsigned char **dyn;
  size_t *dyn_len;
};
#define HCGRT_GET_DYN_MAX (1 << 24)
int hcgrt_pmix_get_all(struct hcgrt_pmix *px, struct hcgrt_get *gets, int n,
                       size_t len, int timeout_s, hcg_error *err);
/* The same, each outcome into rcs[i] (HCG_OK, HCG_ETIMEOUT or HCG_EPMIX)
 * instead of an error: fails only for lack of memory. */
int hcgrt_pmix_get_each(struct hcgrt_pmix *px, struct hcgrt_get *gets, int n,
                        size_t len, int timeout_s, int *rcs, hcg_error *err);
/* NULL in libhcg; a test program sets it before main to see each batch of
 * gets that rank `by` makes (runtime/testing/requests.c). */
extern void (*hcgrt_pmix_gets_seen)(int by, const struct hcgrt_get *gets,
                                    int n);

/* ---- contexts (ctx.c) -------------------------------------------------- */

struct hcgrt_comm_list {
  struct hcg_comm **v;
  int n, cap;
};

/* Requests one publisher answers per group and exchange, at most (beyond
 * it a group's members fetch its id from relays: exchange.c). Chosen from
 * bench_exchange's cost per get: doc/scaling.md. */
#define HCGRT_DEFAULT_FANIN 512

struct hcg_ctx {
  hcg_layout *layout;
  int rank;
  int world;
  int timeout_s;
  int fanin;      /* HCG_FANIN, or HCGRT_DEFAULT_FANIN         */
  int device;     /* chosen CUDA device, -1 until chosen       */
  int device_cfg; /* hcg_ctx_config.device                     */
  int local_rank; /* SLURM_LOCALID, or -1                      */
  int broken;     /* an exchange timed out: refuse new ones    */
  char tag[HCG_MAX_TAG + 1];
  int grids[HCG_MAX_GRIDS]; /* grids holding the rank            */
  /* HCG_<GRID>[_<VIEW>]_<DIM>_LOCAL: 1, 0, or -1 when not set. */
  signed char node_local[HCG_MAX_GRIDS][1 + HCG_MAX_VIEWS][HCG_MAX_DIMS];
  /* HCG_<GRID>[_<VIEW>]_<DIM>_DOMAIN_LOCAL: the same for NVLink domains. */
  signed char domain_local[HCG_MAX_GRIDS][1 + HCG_MAX_VIEWS][HCG_MAX_DIMS];
  int ngrids;
  struct hcgrt_pmix *pmix; /* NULL without PMIx                   */
  long long epoch;         /* exchanges started (PMIx key epoch)  */
  hcg_ctx_stats stats;
  struct hcgrt_comm_list comms;
};

/* ---- group sets and plans (groupset.c) --------------------------------- */

enum hcgrt_entry_kind { HCGRT_REQUEST, HCGRT_COLLECTION, HCGRT_EMBEDDING };

struct hcgrt_entry {
  int kind;
  hcg_request req; /* HCGRT_REQUEST                  */
  int grid;        /* HCGRT_COLLECTION               */
  int embedding;   /* HCGRT_EMBEDDING: enum hcg_embedding */
  hcg_comm_options opts;
  char *net_name; /* owned copy of opts.net_name */
};

struct hcg_groupset {
  const hcg_layout *layout;
  struct hcgrt_entry *entries;
  int n, cap;
  hcg_comm_config_fn config_fn;
  void *config_arg;
};

/* One group of a plan: a group key and, when the rank is a member, its
 * group. */
struct hcgrt_item {
  char key[HCG_KEY_MAX];
  int member;    /* 1 when this rank is in the group            */
  int embedding; /* -1, or enum hcg_embedding                    */
  hcg_group group;
  int emb[2]; /* embedding members */
  int leader;
  const struct hcgrt_entry *entry; /* first entry naming it      */
  unsigned char id[HCG_ID_BYTES];
  /* NCCL ids beyond the first (ncclCommInitRankScalable): nids - 1 of
   * HCG_ID_BYTES each, owned by the plan; NULL when nids is 1. */
  int nids;
  unsigned char *more;
};

/* The groups a set names for one rank, deduplicated by key. With
 * all_keys, groups the rank is not in are kept too (member = 0), so that
 * every process lists the same keys in the same order: for the naive
 * exchange of bench/exchange_naive.c only (a benchmark); libhcg's own
 * calls pass 0. */
struct hcgrt_plan {
  struct hcgrt_item *items;
  int n, cap;
  /* 1 when a sliced group (exchange.c) gets one NCCL id per slice, for
   * ncclCommInitRankScalable: set by hcg_comm_create where NCCL has it. */
  int scalable;
};

int hcgrt_plan_build(const hcg_groupset *set, int rank, int all_keys,
                     struct hcgrt_plan *plan, hcg_error *err);
void hcgrt_plan_free(struct hcgrt_plan *plan);
/* The checks every call taking a context and a set makes first: both given,
 * and the set made for the context's layout. fn names the caller. */
int hcgrt_check_set(const hcg_ctx *ctx, const hcg_groupset *set, const char *fn,
                    hcg_error *err);
/* Key of an embedding kind: "GRID#embd" / "GRID#pos_embd". */
int hcgrt_embedding_key(const hcg_layout *L, int kind, char *buf, size_t cap);
/* Members of an item into out (cap >= group size). */
int hcgrt_item_members(const hcg_layout *L, const struct hcgrt_item *it,
                       int *out, int cap);
int hcgrt_options_equal(const hcg_comm_options *a, const hcg_comm_options *b);
/* HCG_EINVAL, with a message, for options out of range. */
int hcgrt_check_options(const hcg_comm_options *o, hcg_error *err);

/* ---- PMIx keys (keys.c) ------------------------------------------------ */

/* PMIx's PMIX_MAX_KEYLEN (checked against pmix.h in pmix.c). */
#define HCGRT_PMIX_MAX_KEYLEN 511

/* The spelling itself is public, hcg_exchange_pmix_key (hcg_runtime.h):
 * applications print it in diagnostics. Every round spells its keys so. */

/* HCG_EEXIST when this process already published pkey: `group`'s id,
 * whose own key is gkey (pkey itself, or its leader's bundle). */
int hcgrt_unclaimed(hcg_ctx *ctx, const char *pkey, const char *gkey,
                    const char *group, hcg_error *err);

/* ---- the exchange (exchange.c) ----------------------------------------- */

/* Bit 1 of hcg_exchange_ids' flags, once HCG_EXCHANGE_NAIVE (libhcg 1.0 to
 * 1.2): accepted and ignored (hcg_runtime.h), the naive exchange being now
 * a benchmark (bench/exchange_naive.c). */
#define HCGRT_EXCHANGE_RESERVED 1

/* Runs the exchange of a plan: fills item->id for every member item. */
int hcgrt_exchange_plan(hcg_ctx *ctx, struct hcgrt_plan *plan, int flags,
                        hcg_error *err);

/* A way of exchanging a set's ids: hcg_exchange_ids' (one fence), or the
 * naive exchange of bench/exchange_naive.c (a benchmark, not part of
 * libhcg's API). */
struct hcgrt_exchange_way {
  const char *fn; /* the call, in messages */
  int flags;      /* the flags it takes; all but HCG_EXCHANGE_RANDOM_IDS
                     are then ignored */
  int all_keys;   /* its plan lists every key of the set (hcgrt_plan_build) */
  /* Once the arguments are checked and the context found usable: starts
   * the exchange (hcgrt_exchange_begin) and fills item->id for every
   * member item of the plan (hcgrt_exchange_plan). */
  int (*run)(hcg_ctx *ctx, struct hcgrt_plan *plan, int flags, hcg_error *err);
};
/* hcg_exchange_ids the given way: its arguments checked (out, then ctx and
 * set, then flags), the context's PMIx, this rank's plan, way->run, and
 * this rank's groups, in plan order, into a new *out. */
int hcgrt_exchange_set(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                       const struct hcgrt_exchange_way *way, hcg_exchange **out,
                       hcg_error *err);
/* HCG_EPMIX/HCG_ENOTSUP when the context cannot fence at all. */
int hcgrt_exchange_usable(hcg_ctx *ctx, hcg_error *err);
/* Counts the exchange and returns its epoch (PMIx key space). */
long long hcgrt_exchange_begin(hcg_ctx *ctx);
/* Commit and one fence; a failed fence marks the context broken. */
int hcgrt_exchange_fence(hcg_ctx *ctx, int timeout_s, const char *what,
                         hcg_error *err);

/* The exchange's steps in a round (round.h), for HCGRT_ROUND_IDS and
 * hcg_comm_create's HCGRT_ROUND_READY; each does nothing once the round
 * holds a failure of this rank, and records its own there:
 *  - publish, before the ids fence: the ids of the groups this rank leads;
 *  - fetch, after it: the ids of the groups it does not lead (but skip[i];
 *    skip may be NULL) from their leaders or, in a relayed job, their
 *    relays' sources; a relay then publishes its copies;
 *  - fetch_relayed, after the relay fence: the ids from the relays. */
struct hcgrt_round;
void hcgrt_ids_publish(struct hcgrt_round *r, struct hcgrt_plan *plan,
                       long long epoch, int flags);
void hcgrt_ids_fetch(struct hcgrt_round *r, struct hcgrt_plan *plan,
                     long long epoch, const int *skip);
void hcgrt_ids_fetch_relayed(struct hcgrt_round *r, struct hcgrt_plan *plan,
                             long long epoch, const int *skip);
/* Steps of the naive exchange, a benchmark (bench/exchange_naive.c: one
 * fence per group key, every process walking a plan of every key), not
 * part of libhcg's API; its fences are hcgrt_exchange_fence's:
 *  - put: publishes the id of an item this rank leads under the group's
 *    own key (no bundle, one id);
 *  - get: fetches the ids of the member items of items[from, to) this rank
 *    does not lead from their leaders (no relays, no bundles). */
int hcgrt_ids_put(hcg_ctx *ctx, struct hcgrt_item *it, long long epoch,
                  int flags, hcg_error *err);
int hcgrt_ids_get(hcg_ctx *ctx, struct hcgrt_item *items, int from, int to,
                  long long epoch, hcg_error *err);
/* After the exchange's fence of `epoch` timed out (err says so): probes,
 * one second each, the processes this rank would fetch ids from, and adds
 * to err the first that never published them (it never reached the
 * exchange). Costs at most one second beyond quick lookups; leaves err as
 * it is when every one of them published, or err is NULL. */
void hcgrt_exchange_blame(hcg_ctx *ctx, const struct hcgrt_plan *plan,
                          long long epoch, hcg_error *err);
/* 128 random bytes (getrandom). */
int hcgrt_random_id(unsigned char *id, hcg_error *err);
/* 64-bit FNV-1a of a byte string, with a seed mixed in. */
uint64_t hcgrt_hash64(const void *data, size_t len, uint64_t seed);

/* ---- the agreement of hcg_comm_create (agree.c) ----------------------- */

enum { HCGRT_AGREE_READY = 0, HCGRT_AGREE_DONE = 1 };
#define HCGRT_VERDICT_NAMED 8 /* failed ranks a message names */

/* What the other members of one group reported. */
struct hcgrt_verdict {
  int status; /* HCG_OK, or the status of the first failed member */
  int nbad;   /* members that failed (or could not be read)        */
  int bad[HCGRT_VERDICT_NAMED]; /* the first of them, ascending    */
};

/* One phase of the agreement in a round: before the phase's own fence
 * (HCGRT_FENCE_IDS for READY, HCGRT_FENCE_DONE for DONE) this rank
 * publishes its status, also a failed one; after it v[i] gets the verdict
 * of each member item of the plan with two or more members and skip[i] ==
 * 0 (skip may be NULL), a member that cannot be read counting as failed.
 * A group of at most ctx->fanin members: one get per distinct other
 * member. A sliced group (relayed jobs): a tree over its slices, around
 * the round's HCGRT_FENCE_SLICES and HCGRT_FENCE_GROUPS (agree.c). A rank
 * that failed reads only what its slices need from it. */
struct hcgrt_agreement {
  const struct hcgrt_plan *plan;
  const int *skip;
  long long epoch;
  int phase;
  struct hcgrt_verdict *v;     /* the caller's, plan->n of them     */
  struct hcgrt_verdict *slice; /* of the slices this rank heads     */
  int *ranks;                  /* the heads of a sliced group       */
};
void hcgrt_agree_begin(struct hcgrt_round *r, struct hcgrt_agreement *a,
                       const struct hcgrt_plan *plan, const int *skip,
                       long long epoch, int phase, struct hcgrt_verdict *v);
/* The agreement's parts, each a step of its caller's round (round.h):
 * before the round's own fence (the ids' for READY, DONE's) this rank's
 * status, after it the statuses it needs; in a relayed job, before the
 * slice and group fences the verdicts of the slices and groups this rank
 * heads, after the group fence its heads' verdicts. */
void hcgrt_agree_put_status(struct hcgrt_round *r, struct hcgrt_agreement *a);
void hcgrt_agree_read_statuses(struct hcgrt_round *r,
                               struct hcgrt_agreement *a);
void hcgrt_agree_put_slices(struct hcgrt_round *r, struct hcgrt_agreement *a);
void hcgrt_agree_put_groups(struct hcgrt_round *r, struct hcgrt_agreement *a);
void hcgrt_agree_read_heads(struct hcgrt_round *r, struct hcgrt_agreement *a);
void hcgrt_agree_end(struct hcgrt_agreement *a);
/* "rank 3", "ranks 3, 5" or "ranks 0, ..., 7 and 9 more" for messages. */
void hcgrt_verdict_text(const struct hcgrt_verdict *v, char *buf, size_t cap);

/* ---- environment (ctx.c) ----------------------------------------------- */

/* Strict decimal integer in [lo, hi]: digits only, no sign, no spaces. */
int hcgrt_parse_int(const char *s, long long lo, long long hi, long long *out);

/* ---- communicators (comm.c) -------------------------------------------- */

/* Frees every communicator of the context (hcg_ctx_free). */
void hcgrt_comms_free_all(hcg_ctx *ctx);

#endif /* HCG_RT_H */
