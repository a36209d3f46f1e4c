/*
 * hcg.h - the one public header of libhcg.
 *
 * hcg computes the communication groups of Megatron-LM's HyperCommGrid (grids,
 * named views, process-group collections, MIMO roles and bridges) from a
 * layout string, and forms NCCL communicators for them through one PMIx
 * exchange.
 *
 * Conventions
 *   - Every symbol starts with hcg_ / HCG_.
 *   - Functions that can fail return an int status: HCG_OK (0) or a positive
 *     HCG_E* code; hcg_strerror() names a code. Functions that take an
 *     hcg_error * fill it with the code and a full human-readable message when
 *     they fail (the pointer may be NULL). Nothing aborts the process.
 *   - Ranks and sizes are int: world sizes are limited to 2^31-1.
 *   - Indices (grids, views, dims, fields) count from 0. View 0 of a grid is
 *     its base factorization, named "base"; named views are 1..n.
 *   - Accessors (functions that return a value rather than a status) say at
 *     their declaration what they return for a NULL object or an index out
 *     of range: -1 for an index, rank or size, 0 for a count or a 0/1
 *     answer, NULL for a string. None of them writes an error message.
 *
 * Config structs (hcg_layout_config, hcg_ctx_config, hcg_comm_options)
 *   - Start them from their *_INIT macro, then set the fields wanted. Their
 *     first two fields are `size` (sizeof the struct as the caller compiled
 *     it) and `version` (HCG_CONFIG_VERSION), both filled by the macro. A
 *     later release only appends fields, so libhcg reads what the caller's
 *     size holds: a caller built against an older hcg.h gets the defaults
 *     of the fields it does not know, one built against a newer hcg.h has
 *     the fields this library does not know ignored. A size smaller than
 *     the 1.0 struct or larger than HCG_CONFIG_MAX_SIZE, or a version of 0,
 *     is refused with HCG_EINVAL naming the struct (a struct not started
 *     from its macro). Growable structs, rather than opaque configs with
 *     setters, keep the one-line initialization C callers and ctypes
 *     bindings already use, as NCCL's ncclConfig_t does.
 *   - Each struct has ONE value meaning "unset, use the default", said at
 *     the struct: 0 (and NULL) in hcg_layout_config, whose fields are sizes
 *     and names where 0 is never meaningful; HCG_UNSET (-1) (and NULL) in
 *     hcg_ctx_config and hcg_comm_options, where 0 is a meaningful device,
 *     split_share or traffic class. Enum fields start at their default
 *     enumerator.
 *   - Output structs (hcg_error, hcg_request, hcg_group, hcg_group_id,
 *     hcg_bridge, hcg_ctx_stats) are frozen as they are: one that must grow
 *     becomes a new struct with new functions.
 *
 * One header
 *   The core (layouts, groups, collections, bridges, the task environment)
 *   and the runtime (contexts, exchanges, communicators) share this header.
 *   The core's functions are also exported by libhcg, so a program needs
 *   one header, one library and one pkg-config name; the runtime part
 *   depends on nothing at compile time (NCCL types only when asked for, see
 *   HCG_HAVE_NCCL), so the SPANK plugin, which links the core alone, can
 *   include all of it. The split is marked below ("Runtime: ...").
 *
 * Ownership and threads
 *   - An hcg_layout is immutable once hcg_layout_parse() returns it. Every
 *     function taking a const hcg_layout * only reads it, so any number of
 *     threads may query one layout at once. hcg_layout_free() must not race
 *     with readers.
 *   - Strings returned as const char * point into the layout and live as long
 *     as it does.
 *   - There is no global state: any number of layouts may exist in a process.
 */
#ifndef HCG_H
#define HCG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCG_VERSION_MAJOR 0
#define HCG_VERSION_MINOR 1
#define HCG_VERSION_PATCH 0

/* Value of HCG_VERSION in a task's environment: the version of the contract
 * between the plugin and the library, not of the package. */
#define HCG_ENV_VERSION 1

/* Value of a config struct's `version` field (see "Config structs"). */
#define HCG_CONFIG_VERSION 1
/* Largest `size` a config struct may claim, in bytes. */
#define HCG_CONFIG_MAX_SIZE 4096
/* The "unset" value of the int fields of hcg_ctx_config and
 * hcg_comm_options. */
#define HCG_UNSET (-1)

/* ---------------------------------------------------------------------------
 * Hard bounds. Hostile input beyond them is refused with HCG_ELIMIT.
 */
#define HCG_MAX_LAYOUT_BYTES 65536 /* layout text, comments included */
#define HCG_MAX_GRIDS 16           /* grids (modules) in one layout */
#define HCG_MAX_VIEWS 8            /* named views per grid, besides base */
#define HCG_MAX_DIMS 16            /* dims of one grid or view */
#define HCG_MAX_NAME 32            /* characters of a grid/view/dim name */
#define HCG_MAX_WORLD 2147483647   /* ranks in a world */
#define HCG_ERROR_MAX 1024         /* bytes of hcg_error.message */
#define HCG_KEY_MAX 640            /* bytes of a group key, NUL included */

/* ---------------------------------------------------------------------------
 * Status codes and errors
 */
enum hcg_status {
  HCG_OK = 0,
  HCG_EINVAL = 1,       /* invalid argument (NULL, index out of range) */
  HCG_ENOMEM = 2,       /* out of memory */
  HCG_ESYNTAX = 3,      /* layout text does not follow the grammar */
  HCG_ELAYOUT = 4,      /* layout parses but is not valid for this world */
  HCG_ELIMIT = 5,       /* a hard bound was exceeded */
  HCG_ENOTFOUND = 6,    /* no such grid, view, dim or file */
  HCG_ENOTMEMBER = 7,   /* the rank is not in that grid or group */
  HCG_ENOTPROVIDED = 8, /* collection field whose dims the grid lacks */
  HCG_EIO = 9,          /* reading a file failed */
  HCG_EENV = 10,        /* HCG_* environment missing or inconsistent */
  HCG_EPMIX = 11,       /* a PMIx call failed */
  HCG_ETIMEOUT = 12,    /* a peer did not arrive in time */
  HCG_ENCCL = 13,       /* an NCCL call failed */
  HCG_ECUDA = 14,       /* a CUDA runtime call failed */
  HCG_ENOTSUP = 15,     /* not supported by this build (no NCCL, no PMIx...) */
  HCG_EEXIST = 16,      /* the object already exists (same group key twice) */
  HCG_EMISMATCH = 17,   /* two sources disagree (HCG_RANK vs PMIx rank...) */
  HCG_ERANGE = 18,      /* a buffer is too small, or a value out of range */
  HCG_EBRIDGE = 19,     /* two grids cannot be bridged */
  HCG_STATUS_COUNT
};

/* Short, constant description of a status code ("layout is not valid"). */
const char *hcg_strerror(int code);

/* The full account of a failure. Caller-owned; no allocation. `line` and
 * `column` (1-based, bytes) locate the offending layout text, or are 0 when
 * the error is not about a place in the text. `message` is the whole text to
 * show a person, without a program prefix; for layout errors it has three
 * lines: what and where, the offending line of text, and a caret:
 *
 *   layout: column 18: size of 'cp' must be a positive integer, got '0'
 *     llm:tp=2,pp=2,cp=0
 *                      ^
 */
typedef struct hcg_error {
  int code;
  int line;
  int column;
  char message[HCG_ERROR_MAX];
} hcg_error;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_ERROR_INIT {0, 0, 0, {0}}
/* clang-format on */

/* 1 when `name` is a NAME of the layout language: [a-z][a-z0-9_]*, at most
 * HCG_MAX_NAME characters; else 0 (NULL included). */
int hcg_name_valid(const char *name);

/* Package version, "0.1.0". */
const char *hcg_version(void);

/* ---------------------------------------------------------------------------
 * Layouts
 *
 * The layout language: its grammar is printed by `hcg help grammar` (kept
 * in runtime/core/parse.c) and explained in hcg-layout(5).
 */
typedef struct hcg_layout hcg_layout;

/* Unset: 0 or NULL (see "Config structs" at the top). */
typedef struct hcg_layout_config {
  size_t size;      /* sizeof(hcg_layout_config), set by the INIT macro */
  unsigned version; /* HCG_CONFIG_VERSION, set by the INIT macro */
  /* Ranks in the world (the step's task count). 0: derive it from the
   * layout, which then must not use '*' in a grid. */
  int world_size;
  /* Name of the language module's grid, or NULL for the default rule: a grid
   * named "llm" or "language", else the only grid of a one-grid layout. */
  const char *language;
  /* Longest layout text accepted, in bytes; 0 means HCG_MAX_LAYOUT_BYTES.
   * Larger values are clamped to HCG_MAX_LAYOUT_BYTES. */
  size_t max_bytes;
  /* Where the text came from, e.g. a file name, for messages ("layout
   * 'model.hcg': line 3, column 7: ..."); NULL for none. hcg_layout_load
   * sets it for "@PATH" when it is NULL. */
  const char *source_name;
} hcg_layout_config;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_LAYOUT_CONFIG_INIT                                                 \
  {sizeof(hcg_layout_config), HCG_CONFIG_VERSION, 0, NULL, 0, NULL}
/* clang-format on */

/* Parses `len` bytes of `text` (NUL bytes inside are an error), resolves
 * offsets and inferred sizes against cfg->world_size, and validates the whole
 * layout. On success *out owns a new layout; on failure *out is NULL, nothing
 * is leaked, and err says what, where and why. cfg may be NULL (defaults). */
int hcg_layout_parse(const char *text, size_t len, const hcg_layout_config *cfg,
                     hcg_layout **out, hcg_error *err);

/* Reads a layout file of at most max_bytes (0: HCG_MAX_LAYOUT_BYTES) into a
 * NUL-terminated buffer the caller frees with free(). Only regular files are
 * read. Runs with the caller's privileges: never call it for a user-named
 * file from a privileged process. */
int hcg_layout_read_file(const char *path, size_t max_bytes, char **text,
                         size_t *len, hcg_error *err);

/* Parses `arg`, which is either layout text or "@PATH" (read with
 * hcg_layout_read_file, bounded by cfg->max_bytes). */
int hcg_layout_load(const char *arg, const hcg_layout_config *cfg,
                    hcg_layout **out, hcg_error *err);

void hcg_layout_free(hcg_layout *layout);

/* The canonical text: every offset explicit, every '*' resolved, each grid
 * followed by its views, ';' between items. Parsing it with the same world
 * size gives the same layout. */
const char *hcg_layout_text(const hcg_layout *layout); /* NULL for NULL */

int hcg_layout_world_size(const hcg_layout *layout); /* 0 for NULL */

/* How the grids share the world. */
enum hcg_mode {
  HCG_MODE_SINGLE = 0,      /* one grid spanning the world */
  HCG_MODE_COLOCATED = 1,   /* several grids, all on the same ranks */
  HCG_MODE_NONCOLOCATED = 2 /* several grids on disjoint rank spans */
};
/* enum hcg_mode; -1 for NULL. */
int hcg_layout_mode(const hcg_layout *layout);
/* "single", ...; NULL if unknown. */
const char *hcg_mode_name(enum hcg_mode mode);

/* Index of the language module's grid (it alone gets embedding groups);
 * -1 for NULL. */
int hcg_layout_language(const hcg_layout *layout);

/* ---------------------------------------------------------------------------
 * Grids, views and dims (indices as described at the top). For a NULL
 * layout or an index out of range: counts are 0, indices, offsets and sizes
 * -1, names NULL, 0/1 answers 0. The find functions return -1 for an
 * unknown name too.
 */
int hcg_layout_num_grids(const hcg_layout *layout);                   /* 0 */
int hcg_layout_find_grid(const hcg_layout *layout, const char *name); /* -1 */
const char *hcg_grid_name(const hcg_layout *layout, int grid);        /* NULL */
int hcg_grid_offset(const hcg_layout *layout, int grid);              /* -1 */
int hcg_grid_size(const hcg_layout *layout, int grid);                /* -1 */
/* 1 when the grid's span [offset, offset+size) contains rank, else 0. */
int hcg_grid_contains(const hcg_layout *layout, int grid, int rank);

/* Views, base included (0 for a bad grid). */
int hcg_grid_num_views(const hcg_layout *layout, int grid);
int hcg_grid_find_view(const hcg_layout *layout, int grid,
                       const char *name); /* -1 */
const char *hcg_view_name(const hcg_layout *layout, int grid,
                          int view); /* NULL */

int hcg_view_num_dims(const hcg_layout *layout, int grid, int view); /* 0 */
int hcg_view_find_dim(const hcg_layout *layout, int grid, int view,
                      const char *name); /* -1 when absent */
/* NULL, and -1, for a bad index. */
const char *hcg_dim_name(const hcg_layout *layout, int grid, int view, int dim);
int hcg_dim_size(const hcg_layout *layout, int grid, int view, int dim);
/* Distance in ranks between neighbours along the dim (product of the sizes
 * of the dims before it); -1 for a bad index. */
int hcg_dim_stride(const hcg_layout *layout, int grid, int view, int dim);
/* 1 for a view dim shared with the base (same name, same enumeration); 0
 * otherwise, and for a bad index. */
int hcg_dim_shared(const hcg_layout *layout, int grid, int view, int dim);

/* Coordinates of `rank` in a grid's view, fastest dim first, into
 * coords[0 .. hcg_view_num_dims-1]. O(dims). HCG_ENOTMEMBER when the rank is
 * outside the grid; HCG_ERANGE when cap is smaller than the dim count. */
int hcg_rank_coords(const hcg_layout *layout, int grid, int view, int rank,
                    int *coords, int cap);

/* ---------------------------------------------------------------------------
 * Group requests and groups
 *
 * A request names a set of dims of one grid's view. Requests are resolved:
 * a request in a view whose dims are all shared with the base becomes the
 * base request, so both name the same groups and the same key. The dims set
 * is a bit mask over the (resolved) view's dims; the order in which dims are
 * named never matters.
 */
typedef struct hcg_request {
  int grid;
  int view;      /* 0: base */
  uint32_t dims; /* bit d set: dim d of the view is in the set */
} hcg_request;

/* Resolves dims (names) of grid/view into a request. */
int hcg_request_make(const hcg_layout *layout, int grid, int view,
                     const char *const *dims, int ndims, hcg_request *out,
                     hcg_error *err);

/* Parses "GRID[/VIEW]:DIM[,DIM...]" (an empty dim list means singletons).
 * With a one-grid layout, "DIM[,DIM...]" alone names dims of that grid.
 * Dims may also be joined with '-', so every group key is a spec too. */
int hcg_request_parse(const hcg_layout *layout, const char *spec,
                      hcg_request *out, hcg_error *err);

/* The group key: "GRID:" for the base or "GRID/VIEW:" for a view, then the
 * dims ordered by descending position in the view and joined with '-', as
 * Megatron-LM's HyperCommGrid keys its groups ("llm:cp-tp",
 * "llm/expert:ep-expt_tp"; "llm:" for singletons). Equal keys name the same
 * groups. Writes at most cap bytes, NUL included; HCG_ERANGE if it does not
 * fit (HCG_KEY_MAX always does). */
int hcg_request_key(const hcg_layout *layout, const hcg_request *req, char *buf,
                    size_t cap);

/* Members per group and groups of a request; -1 for a NULL layout or an
 * invalid request. */
int hcg_request_group_size(const hcg_layout *layout, const hcg_request *req);
int hcg_request_num_groups(const hcg_layout *layout, const hcg_request *req);

/* One group of a request, described in O(1) space. Members are ascending;
 * the canonical enumeration of a request is its groups for ordinal
 * 0 .. num_groups-1, which are sorted by their first member. */
typedef struct hcg_group {
  hcg_request req;
  int ordinal; /* which group of the request, 0 .. num_groups-1 */
  int first;   /* smallest member */
  int size;    /* member count */
  int index;   /* position of the asked rank, or -1 (hcg_group_at) */
} hcg_group;

/* The group of `rank`, computed from its coordinates in O(dims), without
 * looking at any other group. HCG_ENOTMEMBER when rank is outside the grid. */
int hcg_group_of_rank(const hcg_layout *layout, const hcg_request *req,
                      int rank, hcg_group *out);

/* The ordinal-th group of the request (index is -1). O(dims). */
int hcg_group_at(const hcg_layout *layout, const hcg_request *req, int ordinal,
                 hcg_group *out);

/* The i-th member of a group, O(dims); -1 when i is out of range. */
int hcg_group_member(const hcg_layout *layout, const hcg_group *group, int i);

/* All members into out[0 .. size-1], O(size). HCG_ERANGE if cap < size. */
int hcg_group_members(const hcg_layout *layout, const hcg_group *group,
                      int *out, int cap);

/* ---------------------------------------------------------------------------
 * The process-group collection of a grid (Megatron's ProcessGroupCollection).
 *
 * Each field names dims of the base or of the view named "expert". A field is
 * provided when the grid (or its expert view) has at least one of its dims;
 * absent dims count as size 1 and are left out. A field whose dims are all
 * absent is not provided (HCG_ENOTPROVIDED), like Python's None.
 */
enum hcg_field {
  HCG_FIELD_TP,                       /* tp */
  HCG_FIELD_CP,                       /* cp */
  HCG_FIELD_PP,                       /* pp */
  HCG_FIELD_DP,                       /* dp */
  HCG_FIELD_DP_CP,                    /* dp,cp */
  HCG_FIELD_TP_CP,                    /* tp,cp */
  HCG_FIELD_MP,                       /* tp,gtp_remat,pp */
  HCG_FIELD_TP_DP,                    /* tp,gtp_remat,dp */
  HCG_FIELD_TP_DP_CP,                 /* tp,gtp_remat,dp,cp */
  HCG_FIELD_DP_CP_GTP_REMAT,          /* gtp_remat,dp,cp */
  HCG_FIELD_EP,                       /* expert: ep */
  HCG_FIELD_EXPT_TP,                  /* expert: expt_tp */
  HCG_FIELD_EXPT_DP,                  /* expert: expt_dp */
  HCG_FIELD_TP_EP,                    /* expert: expt_tp,ep */
  HCG_FIELD_TP_EP_PP,                 /* expert: expt_tp,ep,pp */
  HCG_FIELD_EXPT_DP_GTP_REMAT,        /* expert: expt_gtp_remat,expt_dp */
  HCG_FIELD_TP_EP_PP_WITH_EGTP_REMAT, /* expert: expt_tp,ep,expt_gtp_remat,pp */
  HCG_FIELD_INTRA_DP_CP,              /* the same group as dp_cp */
  HCG_FIELD_INTRA_EXPT_DP,            /* the same group as expt_dp */
  HCG_FIELD_INTRA_DIST_OPT,           /* all base dims */
  HCG_FIELD_COUNT
};

/* "tp_ep_pp"; NULL if out of range. */
const char *hcg_field_name(enum hcg_field field);
/* -1 when unknown. */
int hcg_field_find(const char *name);
/* For an alias field, the field whose group object it is; else -1 (also
 * for a field out of range). */
int hcg_field_alias(enum hcg_field field);

int hcg_collection_request(const hcg_layout *layout, int grid,
                           enum hcg_field field, hcg_request *out);

/* ---------------------------------------------------------------------------
 * Embedding groups (language module only). For every pp group P of the
 * language grid: embd = [P[0], P[-1]] ([P[0]] when pp is 1), pos_embd =
 * [P[0]]. A grid without a pp dim has pp 1.
 */
enum hcg_embedding { HCG_EMBD = 0, HCG_POS_EMBD = 1 };

int hcg_embedding_num_groups(const hcg_layout *layout); /* 0 for NULL */
/* The ordinal-th group of a kind: members (1 or 2) into out[0..*n-1]. */
int hcg_embedding_group_at(const hcg_layout *layout, enum hcg_embedding kind,
                           int ordinal, int out[2], int *n);
/* The group of that kind holding rank: HCG_ENOTMEMBER when it holds none. */
int hcg_embedding_group_of_rank(const hcg_layout *layout,
                                enum hcg_embedding kind, int rank, int out[2],
                                int *n);

/* ---------------------------------------------------------------------------
 * MIMO rank roles. For a rank inside a grid: whether it holds the first and
 * the last pipeline stage of that module. Colocated layouts treat pp as 1
 * (both are 1); otherwise first iff the pp coordinate is 0, last iff it is
 * pp-1 (a grid without pp has one stage). HCG_ENOTMEMBER outside the grid.
 */
int hcg_rank_stage(const hcg_layout *layout, int grid, int rank, int *is_first,
                   int *is_last);

/* ---------------------------------------------------------------------------
 * Bridges between an encoder grid (src) and the language grid (dest).
 */
enum hcg_bridge_kind {
  HCG_BRIDGE_PASSTHROUGH = 0, /* equal dp: ranks map one to one, no group */
  HCG_BRIDGE_FAN_IN = 1,      /* src dp > dest dp */
  HCG_BRIDGE_FAN_OUT = 2      /* src dp < dest dp */
};
const char *hcg_bridge_kind_name(enum hcg_bridge_kind kind); /* "fan-in", ... */

typedef struct hcg_bridge {
  int src, dest; /* grid indices */
  int colocated; /* 1: same ranks, 0: disjoint (doc/semantics.md 7, 8) */
  int kind;      /* enum hcg_bridge_kind */
  int scale;     /* larger dp (or leader count) / smaller; 1 passthrough */
  /* colocated: */
  int dest_cp; /* dest cp size (cp > 1 adds a backward cp all-reduce) */
  /* non-colocated: */
  int src_lanes, dest_lanes; /* (dp, gtp_remat) lanes on each side */
} hcg_bridge;

/* Checks that src and dest can be bridged and describes how. Colocated: both
 * grids have tp and dp, same span, src pp = cp = 1, dest pp = 1, dest cp (if
 * > 1) listed before dp, and one dp divides the other. Non-colocated: the
 * lane counts divide. HCG_EBRIDGE with a message naming the values if not. */
int hcg_bridge_make(const hcg_layout *layout, int src, int dest,
                    hcg_bridge *out, hcg_error *err);

/* Colocated gather groups: count, the ordinal-th group, and the group of a
 * rank (members ascending, out needs bridge->scale entries). Passthrough
 * bridges have no groups (count 0, HCG_ENOTMEMBER). */
int hcg_bridge_num_groups(const hcg_layout *layout, const hcg_bridge *bridge);
int hcg_bridge_group_at(const hcg_layout *layout, const hcg_bridge *bridge,
                        int ordinal, int *out, int cap, int *n);
int hcg_bridge_group_of_rank(const hcg_layout *layout, const hcg_bridge *bridge,
                             int rank, int *out, int cap, int *n);

/* Colocated: the slice of a batch of `batch` samples a rank holds on the
 * larger-dp side: (slot*batch/scale, batch/scale), slot = dp index % scale.
 * HCG_EBRIDGE when batch is not divisible by scale. */
int hcg_bridge_batch_slice(const hcg_layout *layout, const hcg_bridge *bridge,
                           int rank, long long batch, long long *start,
                           long long *len, hcg_error *err);

/* Non-colocated: the leader of a lane (src: the lane's last rank, dest: its
 * first), lanes in canonical order. side 0 = src, 1 = dest. -1 for a
 * colocated bridge, a bad side or lane, or NULL. */
int hcg_bridge_leader(const hcg_layout *layout, const hcg_bridge *bridge,
                      int side, int lane);
/* Non-colocated: the dest lanes [*first, *first + *count) a src lane sends
 * to (fan-out gives scale lanes, fan-in and passthrough one). */
int hcg_bridge_targets(const hcg_layout *layout, const hcg_bridge *bridge,
                       int src_lane, int *first, int *count);

/* ---------------------------------------------------------------------------
 * The environment of a task (what the SPANK plugin exports):
 *   HCG_VERSION, HCG_LAYOUT, HCG_RANK, HCG_WORLD_SIZE, HCG_GRIDS,
 *   HCG_LANGUAGE, HCG_<GRID>_<DIM>_RANK/_SIZE, HCG_<GRID>_<VIEW>_<DIM>_...
 * Calls fn once per variable in that order, O(dims) calls; a non-zero return
 * from fn stops the walk and is returned. HCG_ENOTMEMBER for a rank outside
 * [0, world).
 */
typedef int (*hcg_env_fn)(void *arg, const char *name, const char *value);
int hcg_rank_env(const hcg_layout *layout, int rank, hcg_env_fn fn, void *arg);

/* Who shares a variable of hcg_rank_env: every task of the step
 * (HCG_VERSION, HCG_LAYOUT, HCG_WORLD_SIZE, HCG_LANGUAGE), one rank
 * (HCG_RANK, HCG_GRIDS), or one dim of one rank (HCG_<GRID>_..._RANK and
 * _SIZE, which the plugin's export_dims=no leaves out). */
enum hcg_env_scope {
  HCG_ENV_SHARED = 1,
  HCG_ENV_PER_RANK = 2,
  HCG_ENV_PER_DIM = 3,
  /* HCG_<GRID>_..._LOCAL: set by the plugin's placement check (see
   * hcg_rank_placement_env), not by hcg_rank_env. */
  HCG_ENV_PLACEMENT = 4
};
/* The scope of a variable name; 0 for a name hcg_rank_env never gives. */
int hcg_env_scope(const char *name);

/* ---------------------------------------------------------------------------
 * Placement: which node each rank runs on, and whether a rank's group along
 * a dim lies inside one node (NVLink) or crosses nodes (the network).
 *
 * The check is one function, hcg_rank_placement, given "the node of a
 * rank" as a callback: the SPANK plugin answers it in slurmstepd from
 * Slurm's local task ids (this node or not), `hcg check/explain --nodes`
 * from a modelled distribution (hcg_placement_node). Both therefore give
 * the same verdicts for the same task placement.
 */

/* The dims checked by default: Megatron's groups that want NVLink. */
#define HCG_PLACEMENT_DEFAULT_DIMS "tp,cp,ep,expt_tp"

/* Slurm's task distributions over nodes (srun --distribution). */
enum hcg_distribution {
  HCG_DIST_BLOCK = 0,  /* consecutive ranks fill a node, then the next */
  HCG_DIST_CYCLIC = 1, /* rank r on node r mod nodes */
  HCG_DIST_PLANE = 2   /* blocks of `plane` ranks dealt round-robin */
};

/* A modelled placement of `world` ranks on `nodes` nodes. */
typedef struct hcg_placement {
  int world, nodes;
  int tasks_per_node; /* 0: Slurm's even spread over `nodes` (block puts
                         the extra ranks on the first nodes); else nodes
                         are filled with this many (block) */
  int distribution;   /* enum hcg_distribution */
  int plane;          /* HCG_DIST_PLANE: ranks per block */
} hcg_placement;

/* Builds a placement from the CLI's words: exactly one of nodes and
 * tasks_per_node > 0 (the other 0), distribution "block", "cyclic",
 * "plane=P" or NULL (block). HCG_EINVAL with a message otherwise. */
int hcg_placement_make(int world, int nodes, int tasks_per_node,
                       const char *distribution, hcg_placement *out,
                       hcg_error *err);
/* The node (0 .. nodes-1) of a rank, O(1); -1 for a rank outside. */
int hcg_placement_node(const hcg_placement *p, int rank);

/* 1 when `name` is in the comma-separated list `dims` (NULL: the default
 * list). hcg_placement_dims_valid checks a list: names, no empty item. */
int hcg_placement_dim_listed(const char *dims, const char *name);
int hcg_placement_dims_valid(const char *dims);

/* The node of a rank as the caller knows it: a node id >= 0, or -1 for
 * "not on the node I am checking" (slurmstepd knows only its own node). */
typedef int (*hcg_node_fn)(void *arg, int rank);

/* One verdict: the rank's group along one dim, and whether its members
 * all answer the same node >= 0 (local 1) or not (local 0, with two
 * members on different nodes, or off the checked node, in `apart`). */
typedef struct hcg_placement_verdict {
  int grid, view, dim;
  int local;
  hcg_group group;
  int apart[2];
} hcg_placement_verdict;
typedef int (*hcg_placement_fn)(void *arg, const hcg_placement_verdict *v);

/* For every grid holding `rank`, every view, and every dim of it listed
 * in `dims` (NULL: the default; dims a view shares with its base are
 * checked once, in the base), calls fn with the verdict on the rank's group
 * along that dim. O(listed dims x group size) calls of node. A non-zero
 * return from fn stops the walk and is returned. */
int hcg_rank_placement(const hcg_layout *layout, int rank, const char *dims,
                       hcg_node_fn node, void *node_arg, hcg_placement_fn fn,
                       void *arg);

/* Whether all members of a group answer one node >= 0 (1) or not (0;
 * apart, if not NULL, gets two members that differ). O(group size). */
int hcg_group_on_one_node(const hcg_layout *layout, const hcg_group *group,
                          hcg_node_fn node, void *node_arg, int apart[2]);

/* The sentence of a verdict that is not local, the same in srun's warning
 * and in `hcg check`: "grid 'llm', dim 'tp': group [0,1,2,3] spans
 * NODE_A (rank 1) and NODE_B (rank 2)". node_a and node_b name the nodes
 * of apart[0] and apart[1]. Writes at most cap bytes, NUL included. */
void hcg_placement_message(const hcg_layout *layout,
                           const hcg_placement_verdict *v, const char *node_a,
                           const char *node_b, char *buf, size_t cap);

/* The variable of a verdict: HCG_<GRID>[_<VIEW>]_<DIM>_LOCAL, value 1 or
 * 0 (scope HCG_ENV_PLACEMENT). Calls fn once per verdict of
 * hcg_rank_placement, in its order. */
int hcg_rank_placement_env(const hcg_layout *layout, int rank, const char *dims,
                           hcg_node_fn node, void *node_arg, hcg_env_fn fn,
                           void *arg);

/* ---------------------------------------------------------------------------
 * Domains above the node: sets of nodes that share one fast fabric (an
 * NVLink domain: a GB200 NVL72 rack, a topology/block block, a leaf switch
 * of topology/tree). The check is hcg_rank_placement again, asked with "the
 * domain of a rank" in place of its node; a partition of the step's nodes
 * into domains is all it needs.
 *
 * Two lists say what is checked where: the node list (intra_node_dims) and
 * the domain list (intra_domain_dims, default below). Where the domains are
 * known, a dim on the domain list is judged at the domain level only: its
 * groups may leave the node as long as they stay in the domain (the node
 * verdict, HCG_..._LOCAL, is still given). Where they are not known,
 * nothing changes.
 */

/* The dims checked against domains by default: the expert all-to-all. A
 * site with NVL72 tensor parallelism adds tp. */
#define HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS "ep,expt_tp"

/* The modelled domain of a rank when every domain_size consecutive nodes
 * form a domain (the last may hold fewer): node / domain_size. -1 for a
 * rank outside the world or domain_size < 1. O(1). */
int hcg_placement_domain(const hcg_placement *p, int domain_size, int rank);

/* The dims judged at the node level when domains are known: the names of
 * node_dims (NULL: HCG_PLACEMENT_DEFAULT_DIMS) not in domain_dims (NULL:
 * HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS), comma-separated, into out ("" when
 * none is left; an empty list checks nothing). HCG_ELIMIT when cap is too
 * small, HCG_EINVAL for a NULL out. */
int hcg_placement_node_level_dims(const char *node_dims,
                                  const char *domain_dims, char *out,
                                  size_t cap);

/* The variable of a domain verdict: HCG_<GRID>[_<VIEW>]_<DIM>_DOMAIN_LOCAL,
 * 1 when the rank's group along the dim lies inside one domain, 0 when it
 * crosses domains (scope HCG_ENV_PLACEMENT). Calls fn once per verdict of
 * hcg_rank_placement(dims, domain) (dims NULL: the domain default). */
int hcg_rank_domain_env(const hcg_layout *layout, int rank, const char *dims,
                        hcg_node_fn domain, void *domain_arg, hcg_env_fn fn,
                        void *arg);

/* Every group of one dim of a grid's view, checked with `where` (a node or
 * a domain of a rank): the number of groups, how many are not inside one
 * (*crossing, may be NULL) and the first of those (*example, may be NULL;
 * its `local` is 1 when none crosses). O(grid size) calls of where.
 * Returns the number of groups, or -HCG_EINVAL for a bad argument. */
int hcg_dim_placement(const hcg_layout *layout, int grid, int view, int dim,
                      hcg_node_fn where, void *where_arg, int *crossing,
                      hcg_placement_verdict *example);

/* Where every rank runs: its node and, when domain is not NULL, its
 * domain. */
typedef struct hcg_placement_where {
  hcg_node_fn node;
  void *node_arg;
  hcg_node_fn domain; /* NULL: no domains; only nodes are checked */
  void *domain_arg;
} hcg_placement_where;

/* Another task placement the caller can offer, e.g. "--distribution=cyclic"
 * and where the ranks would then run. */
typedef struct hcg_placement_alt {
  const char *name;
  hcg_placement_where where;
} hcg_placement_alt;

/* A suggestion for a layout whose groups cross their level (a node for the
 * node list, a domain for the domain list, as described above) under the
 * placement `now`: computed by checking every group of every listed dim,
 * first with one crossing dim moved earlier in its grid's or view's order
 * (faster varying, so that its groups take consecutive ranks; the layout is
 * parsed again with that order), then with each of `alts`. Writes one
 * clause into buf, e.g. "put ep before dp, as in 'tp=2,ep=4,dp=2'; or
 * --distribution=cyclic", naming the first order and the first
 * alternative that keep every group inside. Returns 1 with a suggestion,
 * 0 when nothing crosses or nothing tried keeps every group inside (buf
 * then says so), HCG_ELIMIT when the search would take more than about
 * 2^25 lookups of where (buf says so), HCG_ENOMEM, HCG_EINVAL. */
int hcg_placement_suggest(const hcg_layout *layout, const char *node_dims,
                          const char *domain_dims,
                          const hcg_placement_where *now,
                          const hcg_placement_alt *alts, int nalts, char *buf,
                          size_t cap);

/* ===========================================================================
 * Runtime: contexts and communicators (libhcg only; not in the core that the
 * SPANK plugin links). Declared below this line.
 * ===========================================================================
 */

/* ---------------------------------------------------------------------------
 * Contexts
 *
 * A context is one process's view of the job: the layout, rank and world
 * size read from the HCG_* environment the SPANK plugin exports (see
 * hcg_rank_env), checked for consistency and, under PMIx, against PMIx's own
 * rank and job size; plus the communicators created through it.
 *
 * There is no global state: any number of contexts may exist in a process.
 * PMIx_Init is reference-counted by PMIx, and each context that initialized
 * PMIx finalizes it once in hcg_ctx_free.
 *
 * Threads. Queries (every function taking a const hcg_ctx *, and the
 * hcg_comm_* accessors) only read the context; any number of threads may
 * run them at once. Calls taking a non-const hcg_ctx * (hcg_exchange_ids,
 * hcg_comm_create, hcg_comm_destroy, hcg_ctx_device, hcg_ctx_free) change
 * it: they must not run concurrently with any other call on the same
 * context. Distinct contexts are independent, but exchanges and communicator
 * creation are collective over the whole job: every process must make them
 * in the same order, counting all of its contexts.
 *
 * Collective failures. The exchange and communicator calls are collective:
 * every process of the job calls them. A process whose hcg_exchange_ids
 * fails before the fence (a bad argument, a key taken) returns at once; the
 * others then fail with HCG_ETIMEOUT after the context's timeout (or at
 * once with HCG_EPMIX when the process that left had connected to PMIx).
 * hcg_comm_create instead takes part in its fences whatever fails after
 * its argument checks, so that the members of its groups learn of it at
 * once (see hcg_comm_create).
 * After a failed fence the context refuses further exchanges (its fences
 * would no longer pair with the other processes'); the job should end.
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

/* Reads and checks the environment and creates a context. cfg may be NULL
 * (defaults). Checks, in order: HCG_VERSION equals HCG_ENV_VERSION;
 * HCG_WORLD_SIZE and HCG_RANK are integers with 0 <= rank < world;
 * HCG_LAYOUT parses for that world with HCG_LANGUAGE as the language module;
 * HCG_TIMEOUT (if used) is a positive integer; every other HCG_* variable of
 * hcg_rank_env that is set has the value the layout gives this rank
 * (per-dim variables may be absent). Then, under PMIx: PMIx's rank equals
 * HCG_RANK and PMIX_JOB_SIZE equals HCG_WORLD_SIZE. Errors: HCG_EENV
 * (missing or malformed variable; the message names it), HCG_EMISMATCH
 * (two sources disagree; the message names both values), HCG_EPMIX,
 * HCG_ENOTSUP, HCG_ENOMEM, HCG_EINVAL. On failure *out is NULL and nothing
 * is leaked. */
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

/* The CUDA device this context's communicators use, chosen on the first
 * call and made current on the calling thread (cudaSetDevice) by this call
 * and by hcg_comm_create: hcg_ctx_config.device when >= 0, else the local
 * rank (SLURM_LOCALID, else PMIx's PMIX_LOCAL_RANK, else 0) modulo the
 * number of visible devices. With one GPU per task (CUDA_VISIBLE_DEVICES
 * set by Slurm) that is device 0. HCG_ECUDA "no CUDA device" when CUDA sees
 * none; HCG_ENOTSUP in a build without CUDA or NCCL. */
int hcg_ctx_device(hcg_ctx *ctx, int *device, hcg_error *err);

/* ---------------------------------------------------------------------------
 * Group sets: the groups one exchange (or one hcg_comm_create) forms.
 *
 * A set holds entries; each names groups by request (every group of the
 * request) and may carry communicator options. When a set is used, each
 * entry contributes only the group holding the calling rank (entries of
 * grids the rank is not in contribute nothing), and groups are identified
 * by key: entries resolving to the same key (an all-shared view request and
 * its base request, alias fields, equal dim sets) form one group and one
 * communicator. Two entries with the same key and different options are an
 * error (HCG_EINVAL) when the set is used.
 *
 * A set refers to a layout (it must outlive the set) and is used with a
 * context whose hcg_ctx_layout is that layout. Not thread-safe for
 * concurrent mutation; using a set only reads it.
 */
typedef struct hcg_groupset hcg_groupset;

/* NCCL options of a group's communicator. Fields left unset (HCG_UNSET, or
 * NULL for net_name: what HCG_COMM_OPTIONS_INIT gives) keep NCCL's defaults
 * (or NCCL_* variables): only the ncclConfig_t fields of options that are
 * set are written.
 * - min_ctas without max_ctas: maxCTAs gets NCCL's default, its channel
 *   limit (32 before NCCL 2.25, 64 from 2.25), since NCCL would compare
 *   minCTAs with an unset maxCTAs and refuse it; a min_ctas above that
 *   limit is refused with HCG_EINVAL.
 * - traffic_class needs NCCL 2.26, collnet_enable NCCL 2.27 (in nccl.h at
 *   build time and in the library at run time): with an older NCCL they
 *   are refused with HCG_ENOTSUP naming the option and both versions,
 *   never dropped. libhcg needs NCCL 2.18.0 or newer. */
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

/* Called once per communicator of this rank by hcg_comm_create, before the
 * device check and the exchange, with the group's key, the entry's options
 * (modifiable) and the ncclConfig_t about to be used (as void *: an
 * NCCL_CONFIG_INITIALIZER with commName pointing to the key where NCCL has
 * it, 2.27+). The callback
 * may set any of its fields; afterwards hcg applies the options that are
 * not at their defaults over it and forces `blocking` to 0. Strings it puts
 * there (commName, netName) are copied. A non-zero return stops
 * hcg_comm_create with that status (an hcg status code, else HCG_EINVAL). */
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
 * For each group of the set holding this rank, its leader (first member)
 * makes an id (ncclGetUniqueId, or 128 random bytes in a build without NCCL
 * or with HCG_EXCHANGE_RANDOM_IDS) and publishes it with PMIx_Put under a
 * key derived from the tag, the context's exchange count and the group key
 * (hashed when longer than PMIx allows); then one PMIx_Commit, one
 * PMIx_Fence over every process of the job without data collection, and
 * each member fetches its leaders' ids with PMIx_Get. Groups of one member
 * need no PMIx traffic. Fence and gets time out after hcg_ctx_timeout
 * seconds (HCG_ETIMEOUT, naming what was awaited). Work per rank: O(dims)
 * per entry and one get per group it does not lead.
 *
 * Every process of the job must call it (with the same set in naive mode;
 * other sets may differ between processes). An ncclUniqueId made by
 * ncclGetUniqueId holds a listening bootstrap socket and thread in the
 * leader's process until a communicator is created from it; use
 * HCG_EXCHANGE_RANDOM_IDS when the ids are not meant for NCCL.
 */
enum hcg_exchange_flags {
  /* One fence per group key of the set instead of one in all (every process
   * takes part in every fence, member or not): the cost of forming groups
   * one collective at a time, for comparison. */
  HCG_EXCHANGE_NAIVE = 1,
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

/* Copies `len` bytes (1 to HCG_BROADCAST_MAX) from the root's buf into
 * every other process's buf: the root publishes them with PMIx_Put, one
 * PMIx_Fence over the job orders that before the reads, and every other
 * process fetches them with one PMIx_Get. Every process of the job must
 * call it with the same root and length. Used to publish a rendezvous
 * address (hcg.torch.init) without any other rendezvous service. The fence
 * and the get share one deadline of hcg_ctx_timeout seconds from the call
 * (the get has what the fence left, at least one second): a root that
 * never calls costs the timeout once (HCG_ETIMEOUT). The fence counts in
 * the context's stats like an exchange's. */
#define HCG_BROADCAST_MAX 4096
int hcg_ctx_broadcast(hcg_ctx *ctx, int root, void *buf, size_t len,
                      hcg_error *err);

/* Every process of the job publishes `len` bytes of its own (1 to
 * HCG_PUBLISH_MAX, the same len everywhere) with PMIx_Put, and one
 * PMIx_Fence, which carries no data, orders them before any read. *epoch
 * then names the publication for hcg_ctx_fetch. Every process must call
 * it. A process that fails before the fence leaves without it (its peers
 * time out). Used by hcg.torch to make each store's address known to the
 * members of the groups it serves, and to them only. */
#define HCG_PUBLISH_MAX 4096
int hcg_ctx_publish(hcg_ctx *ctx, const void *buf, size_t len, long long *epoch,
                    hcg_error *err);
/* The `len` bytes `rank` published in publication `epoch` into buf: one
 * PMIx_Get, answered by that process's PMIx server, waiting at most
 * hcg_ctx_timeout seconds. Any process may fetch any rank's, any number of
 * times; it is the caller who keeps the requests each process answers
 * bounded. Not collective. */
int hcg_ctx_fetch(hcg_ctx *ctx, long long epoch, int rank, void *buf,
                  size_t len, hcg_error *err);

/* The PMIx key under which the leader of `key` publishes its id for the
 * exchange numbered `epoch` (0, 1, ... per context) with a tag: "hcg." TAG
 * "." EPOCH "." KEY, or, when that would exceed PMIx's 511 characters,
 * "hcg." TAG "." EPOCH ".#" and 32 hex digits of a hash of KEY. (In a job
 * of at most HCG_FANIN processes a leader's ids travel together, under the
 * KEY "*".) Exposed for diagnostics. HCG_ERANGE when cap is too small (512
 * always suffices). */
int hcg_exchange_pmix_key(const char *tag, long long epoch, const char *key,
                          char *buf, size_t cap);

/* ---------------------------------------------------------------------------
 * NCCL communicators
 *
 * hcg_comm_create forms every communicator of a set for this rank: options
 * and callbacks, device check (hcg_ctx_device), one exchange (one fence),
 * then all ncclCommInitRankConfig calls inside one ncclGroupStart/End with
 * non-blocking configs, polled with ncclCommGetAsyncError until done (on
 * an error or after the timeout all of this rank's communicators of the
 * call are aborted), a non-blocking CUDA stream per communicator, and an
 * agreement: TWO PMIx fences per call in all (one per hcg_exchange_ids)
 * in a job of at most hcg_ctx_config.fanin processes; in a larger one
 * seven (two per hcg_exchange_ids): the exchange's relay fence and two
 * per agreement phase.
 *
 * Agreement on failure. Each rank publishes whether it got ready for NCCL
 * initialization (into the exchange's fence) and whether its
 * initialization succeeded (into one more fence), and reads those of the
 * other members of its groups; a group of more than `fanin` members agrees
 * through the heads of its slices, so no rank reads or serves more than
 * about `fanin` + size / `fanin` gets per group (doc/runtime.md). Every member
 * of a group reaches the same verdict: a group with a failed member is not
 * initialized, or is aborted, by all of its members, which return
 * HCG_ENCCL (HCG_ETIMEOUT when that member timed out) naming the group key
 * and the failed ranks, at once rather than after a timeout. A rank that
 * failed itself returns its own error and keeps nothing of the call;
 * communicators of groups whose members all succeeded are kept on every
 * member even when the call fails for another group (destroy them with
 * hcg_comm_destroy). HCG_TEST_COMM_FAIL is a hook of test builds only
 * (doc/runtime.md); libhcg ignores it.
 *
 * The context owns the communicators; a group key has at most one
 * communicator per context, so a view request that resolves to its base
 * group finds the base group's communicator. HCG_EEXIST when a key of the
 * set already has one (the message names it). In a build without NCCL:
 * HCG_ENOTSUP; on a machine without GPU: HCG_ECUDA "no CUDA device"; with
 * an NCCL library older than 2.18: HCG_ENOTSUP.
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

/* Waits until the communicator has no NCCL operation in progress:
 * HCG_OK, HCG_ENCCL when NCCL reports an error on it (ncclGetErrorString
 * of the code; destroy it, hcg_comm_destroy then aborts it), or
 * HCG_ETIMEOUT after the context's timeout.
 *
 * The communicators are non-blocking (ncclConfig_t.blocking = 0): that is
 * what lets hcg_comm_create bound NCCL initialization with a deadline and
 * abort a communicator whose peer failed, where a blocking initialization
 * would wait forever for a member that never comes. The price: any NCCL
 * call on hcg_comm_nccl() (a collective, ncclGroupEnd, ncclCommSplit...)
 * may return ncclInProgress, which means "accepted, still being set up",
 * not an error. The caller must then wait (this function, or its own loop
 * on ncclCommGetAsyncError) before the next call on that communicator,
 * and must treat ncclInProgress as success when checking results.
 * Megatron-style callers issue collectives from one thread and expect each
 * call to be accepted or fail, as with a blocking communicator: wrap the
 * NCCL calls so that ncclInProgress is followed by hcg_comm_wait and that
 * is what they get, with a bounded wait instead of a hang. Same thread
 * rules as NCCL calls on the communicator. */
int hcg_comm_wait(hcg_comm *comm, hcg_error *err);

#ifdef __cplusplus
}
#endif

#endif /* HCG_H */
