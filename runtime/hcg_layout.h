/*
 * hcg_layout.h - layouts and what they give without any process:
 * grids, views, dims, group requests and groups, the process-group
 * collection, embedding groups, MIMO stages and bridges.
 *
 * Part of the core: the SPANK plugin links it too. Include hcg.h.
 */
#ifndef HCG_LAYOUT_H
#define HCG_LAYOUT_H

#include "hcg_base.h"

#ifdef __cplusplus
extern "C" {
#endif

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
  /* HCG_LAYOUT_* flags (since libhcg.so.1.2). */
  unsigned flags;
} hcg_layout_config;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_LAYOUT_CONFIG_INIT                                                 \
  {sizeof(hcg_layout_config), HCG_CONFIG_VERSION, 0, NULL, 0, NULL, 0}
/* clang-format on */

enum hcg_layout_flag {
  /* `language` is a site's choice (plugstack.conf language=): it names the
   * language module among several grids, and a one-grid layout's only grid
   * is its language module whatever its name. */
  HCG_LAYOUT_SITE_LANGUAGE = 1
};

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

#ifdef __cplusplus
}
#endif

#endif /* HCG_LAYOUT_H */
