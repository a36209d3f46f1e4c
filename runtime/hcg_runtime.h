/*
 * hcg_runtime.h - contexts, group sets, the PMIx id exchange and NCCL
 * communicators (libhcg only: not in the core the SPANK plugin links).
 *
 * Include hcg.h.
 */
#ifndef HCG_RUNTIME_H
#define HCG_RUNTIME_H

#include "hcg_layout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------------
 * Contexts: one process's view of the job, read from the HCG_* environment
 * (hcg_env.h) and checked against PMIx; it owns the communicators made
 * through it. Threads: calls on a const hcg_ctx * (and the hcg_comm_*
 * accessors) may run concurrently; the others (hcg_exchange_ids,
 * hcg_comm_create, hcg_comm_destroy, hcg_ctx_device, hcg_ctx_free) not
 * with any call on the same context. Exchanges and communicator creation
 * are collective: every process makes them, in the same order over all its
 * contexts; after a failed fence a context refuses further exchanges.
 * doc/runtime.md: "Timeouts and failures", "Threads".
 */
typedef struct hcg_ctx hcg_ctx;

/* Default timeout of fences, gets, NCCL initialization and finalization. */
#define HCG_DEFAULT_TIMEOUT_S 60
/* Longest timeout accepted, in seconds (one day). */
#define HCG_MAX_TIMEOUT_S 86400
/* Longest hcg_ctx_config.tag, in bytes without the NUL. */
#define HCG_MAX_TAG 64
/* Bytes of a group id: an ncclUniqueId. */
#define HCG_ID_BYTES 128

/* Whether a context uses PMIx. */
enum hcg_pmix_use {
  /* Use PMIx when the process was started with a PMIx server (PMIx's
   * PMIX_NAMESPACE is in the process environment); without one the context
   * still answers queries, and exchanges fail with HCG_EPMIX (HCG_ENOTSUP
   * in a build without PMIx). */
  HCG_PMIX_AUTO = 0,
  /* Fail in hcg_ctx_init (HCG_EPMIX, or HCG_ENOTSUP in a build without
   * PMIx) when there is no PMIx server, e.g. srun without --mpi=pmix. */
  HCG_PMIX_REQUIRE = 1,
  /* Never touch PMIx: queries only (exchanges fail with HCG_EPMIX). */
  HCG_PMIX_OFF = 2
};

/* Looks up one variable: its value, or NULL when it is not set. */
typedef const char *(*hcg_getenv_fn)(void *arg, const char *name);

/* Unset: HCG_UNSET for the int fields, NULL for the pointers (see "Config
 * structs" at the top). */
typedef struct hcg_ctx_config {
  size_t size;      /* sizeof(hcg_ctx_config), set by the INIT macro */
  unsigned version; /* HCG_CONFIG_VERSION, set by the INIT macro */
  /* Where the HCG_* variables (and SLURM_LOCALID) come from. getenv_fn, if
   * set, wins; else envp, a NULL-terminated array of "NAME=VALUE" strings
   * (the first entry of a name counts); else the process environment via
   * getenv(3), which must not be modified concurrently. Only read during
   * hcg_ctx_init. PMIx always reads the process environment. */
  hcg_getenv_fn getenv_fn;
  void *getenv_arg;
  const char *const *envp;
  /* enum hcg_pmix_use. */
  int pmix;
  /* Seconds a fence, a get or an NCCL initialization may wait for a peer
   * before failing with HCG_ETIMEOUT, in [1, HCG_MAX_TIMEOUT_S]. HCG_UNSET:
   * the HCG_TIMEOUT variable if set, else HCG_DEFAULT_TIMEOUT_S. */
  int timeout_s;
  /* CUDA device for communicators; HCG_UNSET chooses it (hcg_ctx_device). */
  int device;
  /* Namespace for the PMIx keys of this context's exchanges, at most
   * HCG_MAX_TAG characters of [A-Za-z0-9_-]; NULL or "" for none. Two
   * contexts in one process that exchange the same group keys need
   * different tags (the second leader would otherwise find its key taken
   * and fail with HCG_EEXIST). The same on every process of the job. */
  const char *tag;
  /* The exchange's fan-in bound: in a job of more than `fanin` processes,
   * no process serves more than about `fanin` gets of one group (larger
   * groups go through relays, and agree through slice heads;
   * doc/runtime.md). At least 2. HCG_UNSET: the
   * HCG_FANIN variable if set, else 512. The same on every process of the
   * job, as the number of fences depends on it. */
  int fanin;
} hcg_ctx_config;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_CTX_CONFIG_INIT                                                    \
  {sizeof(hcg_ctx_config), HCG_CONFIG_VERSION, NULL, NULL, NULL,              \
   HCG_PMIX_AUTO, HCG_UNSET, HCG_UNSET, NULL, HCG_UNSET}
/* clang-format on */

/* Reads and checks the environment (HCG_*, then PMIx's rank and job size)
 * and creates a context; cfg may be NULL (defaults). HCG_EENV names a
 * missing or malformed variable, HCG_EMISMATCH two sources that disagree;
 * also HCG_EPMIX, HCG_ENOTSUP, HCG_ENOMEM, HCG_EINVAL. On failure *out is
 * NULL and nothing is leaked. doc/runtime.md: "The environment a context
 * reads". */
int hcg_ctx_init(const hcg_ctx_config *cfg, hcg_ctx **out, hcg_error *err);

/* Destroys the context's remaining communicators (as hcg_comm_destroy with
 * a NULL set, errors ignored), finalizes PMIx if this context initialized
 * it, and frees everything. NULL is a no-op. */
void hcg_ctx_free(hcg_ctx *ctx);

/* The layout, owned by the context (valid until hcg_ctx_free); NULL for a
 * NULL context, like the other accessors below return -1 (rank) or 0. */
const hcg_layout *hcg_ctx_layout(const hcg_ctx *ctx);
int hcg_ctx_rank(const hcg_ctx *ctx);       /* -1 for NULL */
int hcg_ctx_world_size(const hcg_ctx *ctx); /* 0 for NULL */
/* 1 when the context is connected to PMIx. */
int hcg_ctx_has_pmix(const hcg_ctx *ctx);
/* The timeout in seconds in use (0 for NULL). */
int hcg_ctx_timeout(const hcg_ctx *ctx);

/* The grids holding this rank (HCG_GRIDS): their count (0 for NULL), and
 * the index in the layout of the i-th one, in layout order (-1 when i is
 * out of range). */
int hcg_ctx_num_grids(const hcg_ctx *ctx);
int hcg_ctx_grid(const hcg_ctx *ctx, int i);

/* This rank's coordinates in a grid's view (see hcg_rank_coords). */
int hcg_ctx_coords(const hcg_ctx *ctx, int grid, int view, int *coords,
                   int cap);
/* This rank's group for a spec "GRID[/VIEW]:DIMS" (see hcg_request_parse),
 * for a request, or for a collection field. Members: hcg_group_members with
 * hcg_ctx_layout. HCG_ENOTMEMBER when the rank is outside that grid;
 * HCG_ENOTPROVIDED for a field the grid does not provide. */
int hcg_ctx_group(const hcg_ctx *ctx, const char *spec, hcg_group *out,
                  hcg_error *err);
int hcg_ctx_group_of(const hcg_ctx *ctx, const hcg_request *req,
                     hcg_group *out);
int hcg_ctx_field_group(const hcg_ctx *ctx, int grid, enum hcg_field field,
                        hcg_group *out);
/* This rank's embedding group of a kind (enum hcg_embedding). */
int hcg_ctx_embedding_group(const hcg_ctx *ctx, enum hcg_embedding kind,
                            int out[2], int *n);
/* This rank's MIMO role in a grid (see hcg_rank_stage). */
int hcg_ctx_stage(const hcg_ctx *ctx, int grid, int *is_first, int *is_last);
/* Whether this rank's group along a dim of a grid's view lies inside one
 * node, as the plugin's placement check found (HCG_<GRID>[_<VIEW>]_<DIM>
 * _LOCAL): 1 yes, 0 it crosses nodes, -1 not known (placement=off, a dim
 * not on the site's intra_node_dims list, a shared view dim (ask the base),
 * a rank outside the grid, or NULL). */
int hcg_ctx_node_local(const hcg_ctx *ctx, int grid, int view, int dim);
/* The same for the step's NVLink domain (HCG_<GRID>[_<VIEW>]_<DIM>
 * _DOMAIN_LOCAL): 1 inside one domain, 0 crossing domains, -1 not known
 * (no topology with domains, a dim not on the site's intra_domain_dims
 * list, placement=off, and as above). */
int hcg_ctx_domain_local(const hcg_ctx *ctx, int grid, int view, int dim);

/* Counters of a context, for tests and diagnostics. */
typedef struct hcg_ctx_stats {
  long long exchanges; /* exchange calls that reached PMIx */
  long long fences;    /* PMIx_Fence calls */
  long long puts;      /* ids published (PMIx_Put) */
  long long gets;      /* ids fetched from a leader (PMIx_Get) */
  long long comms;     /* communicators alive */
  long long comms_created;
  long long comms_destroyed;
} hcg_ctx_stats;

int hcg_ctx_get_stats(const hcg_ctx *ctx, hcg_ctx_stats *out);
/* Shortcut: the number of PMIx fences this context has made (-1 for NULL). */
long long hcg_ctx_num_fences(const hcg_ctx *ctx);

/* The CUDA device of this context's communicators, chosen on the first
 * call (cfg.device, else the local rank modulo the visible devices) and
 * made current on the calling thread here and by hcg_comm_create.
 * HCG_ECUDA "no CUDA device" without one; HCG_ENOTSUP in a build without
 * CUDA or NCCL. doc/runtime.md: "Device selection". */
int hcg_ctx_device(hcg_ctx *ctx, int *device, hcg_error *err);

/* ---------------------------------------------------------------------------
 * Group sets: the groups one exchange (or one hcg_comm_create) forms.
 *
 * Each entry names the groups of a request, with communicator options; used,
 * it gives only the group holding the calling rank (nothing for a grid the
 * rank is not in). Groups are identified by key: entries of one key (a
 * shared view request and its base, alias fields, equal dim sets) form one
 * group and one communicator, and the same key with different options is
 * HCG_EINVAL. A set refers to a layout that must outlive it, and is used
 * with a context of that layout. Adding is not thread-safe; using only reads.
 */
typedef struct hcg_groupset hcg_groupset;

/* NCCL options of a group's communicator. An unset field (HCG_UNSET, NULL
 * net_name) keeps NCCL's default; only the ncclConfig_t fields of options
 * that are set are written. An option this NCCL lacks is refused with
 * HCG_ENOTSUP, never dropped (doc/runtime.md, "Options"; NCCL 2.18+). */
typedef struct hcg_comm_options {
  size_t size;      /* sizeof(hcg_comm_options), set by the INIT macro */
  unsigned version; /* HCG_CONFIG_VERSION, set by the INIT macro */
  /* 1: the communicator's CUDA stream (hcg_comm_stream) gets the highest
   * priority the device offers (Megatron's high-priority stream groups);
   * 0 or unset: the default priority. */
  int high_priority;
  /* ncclConfig_t minCTAs, maxCTAs, cgaClusterSize: at least 1. */
  int min_ctas;
  int max_ctas;
  int cga_cluster_size;
  /* ncclConfig_t splitShare, collnetEnable (0 or 1), trafficClass (>= 0). */
  int split_share;
  int collnet_enable;
  int traffic_class;
  /* ncclConfig_t netName, e.g. "IB" or "Socket" (NULL: default). Copied
   * when added to a set. */
  const char *net_name;
} hcg_comm_options;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_COMM_OPTIONS_INIT                                                  \
  {sizeof(hcg_comm_options), HCG_CONFIG_VERSION, HCG_UNSET, HCG_UNSET,        \
   HCG_UNSET, HCG_UNSET, HCG_UNSET, HCG_UNSET, HCG_UNSET, NULL}
/* clang-format on */

/* Called by hcg_comm_create once per communicator of this rank, before the
 * exchange, with the group key, the entry's options (modifiable) and the
 * ncclConfig_t about to be used (as void *). Set options then apply over
 * it and `blocking` is forced to 0; strings it sets are copied. A non-zero
 * return stops hcg_comm_create with that status (else HCG_EINVAL). */
typedef int (*hcg_comm_config_fn)(void *arg, const char *key,
                                  hcg_comm_options *opts, void *nccl_config);

int hcg_groupset_create(const hcg_layout *layout, hcg_groupset **out,
                        hcg_error *err);
void hcg_groupset_free(hcg_groupset *set);

/* Adds the groups of a spec "GRID[/VIEW]:DIMS" (hcg_request_parse) or of a
 * request. opts may be NULL (defaults). */
int hcg_groupset_add(hcg_groupset *set, const char *spec,
                     const hcg_comm_options *opts, hcg_error *err);
int hcg_groupset_add_request(hcg_groupset *set, const hcg_request *req,
                             const hcg_comm_options *opts, hcg_error *err);
/* Adds the whole process-group collection of a grid: every provided field
 * (alias fields are the same groups), and for the language grid also its
 * embedding groups "GRID#embd" and "GRID#pos_embd". */
int hcg_groupset_add_collection(hcg_groupset *set, int grid,
                                const hcg_comm_options *opts, hcg_error *err);
/* Adds the language grid's embedding groups of a kind (enum
 * hcg_embedding), keyed "GRID#embd" or "GRID#pos_embd". */
int hcg_groupset_add_embedding(hcg_groupset *set, enum hcg_embedding kind,
                               const hcg_comm_options *opts, hcg_error *err);
/* The callback for hcg_comm_create (NULL: none). */
int hcg_groupset_set_config_fn(hcg_groupset *set, hcg_comm_config_fn fn,
                               void *arg);
/* Number of entries added (before deduplication). */
int hcg_groupset_num_entries(const hcg_groupset *set); /* 0 for NULL */

/* ---------------------------------------------------------------------------
 * The id exchange: ONE PMIx fence for a whole set.
 *
 * The leader (first member) of each of this rank's groups publishes an id
 * (ncclGetUniqueId, or random bytes), one fence over the job orders that,
 * and each member fetches its leaders' ids; a group of one needs no PMIx.
 * Every process of the job calls it; fence and gets time out after
 * hcg_ctx_timeout seconds (HCG_ETIMEOUT). An ncclUniqueId keeps a bootstrap
 * listener in the leader's process until a communicator is made from it:
 * pass HCG_EXCHANGE_RANDOM_IDS for ids not meant for NCCL.
 * doc/runtime.md: "One exchange for many groups".
 */
enum hcg_exchange_flags {
  /* 1 is reserved: it was a benchmark-only mode, removed; still accepted
   * and ignored, so that programs built against libhcg 1.0-1.2 run
   * unchanged. */
  /* Random ids (getrandom) instead of ncclGetUniqueId. */
  HCG_EXCHANGE_RANDOM_IDS = 2
};

typedef struct hcg_exchange hcg_exchange;

/* One of this rank's groups in an exchange. */
typedef struct hcg_group_id {
  const char *key; /* group key; valid while the exchange lives */
  int embedding;   /* -1 for request groups, else enum hcg_embedding */
  hcg_group group; /* request groups: hcg_group_of_rank; embedding
                      groups: first, size and index, req.grid the
                      language grid (view 0, dims 0), ordinal -1         */
  int leader;      /* first member, who published the id */
  unsigned char id[HCG_ID_BYTES];
} hcg_group_id;

int hcg_exchange_ids(hcg_ctx *ctx, const hcg_groupset *set, int flags,
                     hcg_exchange **out, hcg_error *err);
/* This rank's groups, deduplicated, in the order their keys first appeared
 * in the set. */
int hcg_exchange_num_groups(const hcg_exchange *x); /* 0 for NULL */
int hcg_exchange_group(const hcg_exchange *x, int i, hcg_group_id *out);
/* Members of the i-th group, ascending, into out[0 .. size-1]. */
int hcg_exchange_members(const hcg_exchange *x, int i, int *out, int cap);
/* Frees an exchange; it refers to its context's layout, so free it before
 * the context. NULL is a no-op. */
void hcg_exchange_free(hcg_exchange *x);

/* Copies `len` bytes (1 to HCG_BROADCAST_MAX) from the root's buf into every
 * other process's: a put, one fence over the job, a get, sharing one
 * deadline of hcg_ctx_timeout seconds (a root that never calls costs it
 * once: HCG_ETIMEOUT). Every process calls it with the same root and len.
 * hcg.torch publishes its rendezvous address with it. */
#define HCG_BROADCAST_MAX 4096
int hcg_ctx_broadcast(hcg_ctx *ctx, int root, void *buf, size_t len,
                      hcg_error *err);

/* Every process of the job publishes `len` bytes of its own (1 to
 * HCG_PUBLISH_MAX, the same len everywhere): a put and one fence that
 * carries no data; *epoch names the publication for hcg_ctx_fetch. Every
 * process must call it; one that fails before the fence leaves without it. */
#define HCG_PUBLISH_MAX 4096
int hcg_ctx_publish(hcg_ctx *ctx, const void *buf, size_t len, long long *epoch,
                    hcg_error *err);
/* The `len` bytes `rank` published in publication `epoch`, into buf: one
 * get, answered by that process's PMIx server, within hcg_ctx_timeout
 * seconds. Not collective; the caller bounds who asks whom. */
int hcg_ctx_fetch(hcg_ctx *ctx, long long epoch, int rank, void *buf,
                  size_t len, hcg_error *err);

/* The PMIx key of `key`'s id in exchange `epoch` (0, 1, ... per context):
 * "hcg." TAG "." EPOCH "." KEY, with KEY hashed past PMIx's 511 characters
 * (doc/runtime.md, "Keys"). For diagnostics. HCG_ERANGE when cap is too
 * small (512 always suffices). */
int hcg_exchange_pmix_key(const char *tag, long long epoch, const char *key,
                          char *buf, size_t cap);

/* ---------------------------------------------------------------------------
 * The slices of the bounded fan-in: who relays for whom, for libhcg's
 * exchange and agreement and for hcg.torch's stores alike
 * (doc/architecture.md, "Slices, and how a failure travels"). Pure
 * arithmetic over a group's members by their index in it (0: its leader).
 *
 * A group of `count` members is cut into slices of `slice` consecutive
 * members, the first of each its head (level 1); while the heads of a
 * level are more than `slice`, they are cut the same way (level 2: the
 * heads of every slice^2 members, ...). libhcg's exchange and agreement
 * use level 1 with slice = the fan-in; hcg.torch goes up every level with
 * a slice its stores can serve. Each returns -1 for count < 1, slice < 2,
 * an index outside [0, count) or, for hcg_slice_route, cap < 0 or a NULL
 * out with cap > 0.
 */

/* The levels of slices over a group: 0 when count <= slice. */
int hcg_slice_levels(int count, int slice);
/* The members, by index, that index's requests for the group go through
 * on their way to the leader: its slice's head (itself where it heads
 * one), that head's head a level up, ..., 0 last, each once ([0] alone
 * when count <= slice). Writes the first cap of them into out and returns
 * how many there are (at most hcg_slice_levels + 1); with cap 1, out[0]
 * is index's slice's head. */
int hcg_slice_route(int count, int slice, int index, int *out, int cap);
/* How many members' routes pass through index, itself included: count
 * for the leader, 1 for a member that heads no slice, else the members
 * of the largest part it heads (slice^k, cut at the group's end). */
int hcg_slice_reach(int count, int slice, int index);

/* ---------------------------------------------------------------------------
 * NCCL communicators
 *
 * hcg_comm_create forms every communicator of a set for this rank with one
 * exchange and all NCCL initializations in one group, non-blocking and
 * bounded by the timeout, then an agreement: every member of a group with a
 * failed member leaves it uninitialized or aborts it, and returns
 * HCG_ENCCL (HCG_ETIMEOUT) naming the group and the failed ranks at once.
 * Communicators of groups whose members all succeeded are kept. Two PMIx
 * fences per call in a job of at most hcg_ctx_config.fanin processes,
 * seven in a larger one. The context owns the communicators, one per group
 * key (HCG_EEXIST for a key that has one). HCG_ENOTSUP without NCCL (or
 * one older than 2.18), HCG_ECUDA "no CUDA device" without a GPU.
 * doc/runtime.md: "NCCL communicators", "Agreement on failure".
 */
typedef struct hcg_comm hcg_comm;

/* The NCCL communicator and CUDA stream types of hcg_comm_nccl and
 * hcg_comm_stream. Define HCG_HAVE_NCCL before including hcg.h (with CUDA's
 * and NCCL's headers on the include path) to get ncclComm_t and
 * cudaStream_t; without it they are void *, so that a program that does not
 * use NCCL needs neither header. Both are pointers either way: the ABI is
 * the same, and a program may cast the void * itself. libhcg's own sources
 * see HCG_HAVE_NCCL from its configure when it was built with NCCL. */
#ifdef HCG_HAVE_NCCL
#include <cuda_runtime_api.h>
#ifdef __GNUC__ /* nccl.h declares some functions without prototypes */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#endif
#include <nccl.h>
#ifdef __GNUC__
#pragma GCC diagnostic pop
#endif
typedef ncclComm_t hcg_nccl_comm;
typedef cudaStream_t hcg_cuda_stream;
#else
typedef void *hcg_nccl_comm;
typedef void *hcg_cuda_stream;
#endif

int hcg_comm_create(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err);

/* Destroys this rank's communicators for the groups of a set (NULL: all of
 * the context's), each once, however many entries name it; keys without a
 * communicator are skipped. Each is finalized (ncclCommFinalize, polled up
 * to the timeout; the other members must destroy it too), then destroyed,
 * or aborted after an error or timeout (the status says so; the
 * communicator is freed either way). Handles of destroyed communicators are
 * invalid. */
int hcg_comm_destroy(hcg_ctx *ctx, const hcg_groupset *set, hcg_error *err);

/* This rank's communicator for a spec, a request, a collection field or an
 * embedding kind. HCG_ENOTMEMBER when the rank is not in that grid or group,
 * HCG_ENOTPROVIDED for a field the grid lacks, HCG_ENOTFOUND when it was
 * not created. The handle lives until it is destroyed. */
int hcg_comm_find(const hcg_ctx *ctx, const char *spec, hcg_comm **out,
                  hcg_error *err);
int hcg_comm_find_request(const hcg_ctx *ctx, const hcg_request *req,
                          hcg_comm **out);
int hcg_comm_find_field(const hcg_ctx *ctx, int grid, enum hcg_field field,
                        hcg_comm **out);
int hcg_comm_find_embedding(const hcg_ctx *ctx, enum hcg_embedding kind,
                            hcg_comm **out);
/* By group key ("llm:cp-tp", "llm#embd"; see hcg_group_id.key):
 * HCG_ENOTFOUND when this context holds no communicator of that key. */
int hcg_comm_find_key(const hcg_ctx *ctx, const char *key, hcg_comm **out);
/* Number of communicators the context holds (0 for NULL). */
int hcg_ctx_num_comms(const hcg_ctx *ctx);

/* For a NULL handle: NULL, 0, -1, NULL, NULL. */
const char *hcg_comm_key(const hcg_comm *comm);
int hcg_comm_size(const hcg_comm *comm); /* members */
int hcg_comm_rank(const hcg_comm *comm); /* this rank's index in them */
/* The ncclComm_t and the communicator's cudaStream_t (typed with
 * HCG_HAVE_NCCL, see hcg_nccl_comm); both are destroyed with the
 * communicator. The ncclComm_t is NON-BLOCKING (see hcg_comm_wait). */
hcg_nccl_comm hcg_comm_nccl(const hcg_comm *comm);
hcg_cuda_stream hcg_comm_stream(const hcg_comm *comm);

/* Waits until the communicator has no NCCL operation in progress: HCG_OK,
 * HCG_ENCCL when NCCL reports an error on it (destroy it), or HCG_ETIMEOUT
 * after the context's timeout. The communicators are non-blocking: an NCCL
 * call on hcg_comm_nccl() may return ncclInProgress ("accepted"), and the
 * caller waits here before the next call on it. Same thread rules as NCCL
 * calls on the communicator. doc/runtime.md: "Non-blocking communicators". */
int hcg_comm_wait(hcg_comm *comm, hcg_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HCG_RUNTIME_H */
