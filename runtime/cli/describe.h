/*
 * describe.h - one description of a layout for `hcg explain`. describe.c is
 * the only part of explain that asks the core; the printers (explain_text.c,
 * explain_json.c, and later others) render a description and ask nothing
 * else, so every fact they show is computed once, the same way.
 *
 * The layout-wide facts (grids, views, dims, collection fields, bridges) are
 * filled in by describe_layout. What grows with the world (the groups of a
 * field, the ranks) is given on demand, one item at a time in O(dims), so a
 * description costs the same at 8 ranks as at 2^30.
 */
#ifndef HCG_CLI_DESCRIBE_H
#define HCG_CLI_DESCRIBE_H

#include "hcg.h"

enum { DESC_EMBEDDINGS = 2 }; /* embd, pos_embd */

/* A set of ranks: first plus, for each term, one of 0, stride, ...,
 * (count-1)*stride. Strides grow with the terms and each is at least the
 * span of the terms before it, so members enumerate in ascending order,
 * the first term fastest: the order of the core's hcg_group_member, in
 * which a member's position is its index in the group. Terms of count 1
 * are left out; a term whose stride continues the one before is merged
 * into it. listed is 0 for a set too large to be described (only size). */
struct desc_term {
  int count, stride;
};
struct desc_ranks {
  int first, size, nterms, listed;
  struct desc_term term[HCG_MAX_DIMS];
};

/* The i-th member (0 <= i < size) of a listed set, O(terms). */
int desc_member(const struct desc_ranks *s, int i);

/* Runs of the ascending member list: maximal stretches of three or more
 * members with one stride, and single members. The count is computed from
 * the terms, without listing them. */
long long desc_num_runs(const struct desc_ranks *s);

struct desc_dim {
  const char *name;
  int size, stride, shared;
};

struct desc_view {
  const char *name;
  int ndims;
  struct desc_dim dim[HCG_MAX_DIMS];
};

/* One field of a grid's process-group collection. */
struct desc_field {
  const char *name;
  int provided;        /* 0: the grid has none of its dims */
  const char *same_as; /* the field whose group object it is, or NULL */
  char key[HCG_KEY_MAX];
  int size, ngroups;
  hcg_request req; /* describe.c's own */
};

struct desc_grid {
  const char *name;
  int offset, size, language;
  int nviews; /* base included */
  struct desc_view view[1 + HCG_MAX_VIEWS];
  struct desc_field field[HCG_FIELD_COUNT];
};

/* The bridge from a grid to the language grid. */
struct desc_bridge {
  int src, dest; /* grid indices */
  const char *src_name, *dest_name;
  int ok; /* 0: refused, with the reason in error */
  char error[HCG_ERROR_MAX];
  int colocated, scale;
  int fan_in, fan_out; /* the kind, for sentences */
  const char *kind;
  int dest_cp;   /* colocated */
  int ngroups;   /* colocated: gather groups */
  int src_lanes; /* non-colocated: one leader per lane */
  hcg_bridge b;  /* describe.c's own */
};

/* One placement check (describe_placement): a listed dim of a grid's
 * view, over all its groups, at the node or the domain level. */
struct desc_check {
  hcg_placement_verdict example; /* the first group crossing */
  int groups, crossing;          /* groups of the dim, those crossing */
  int node[2];                   /* nodes (domains) of example.apart */
  char message[HCG_ERROR_MAX];   /* hcg_placement_message, if crossing */
};

struct desc_placement {
  int set; /* 0: no --nodes/--tasks-per-node; nothing below is set */
  hcg_placement p;
  int nchecks;
  struct desc_check *check; /* owned; the node level */
  /* --domain-size: domains of domain_size consecutive nodes, the dims of
   * the domain list checked against them (and left off the node level),
   * and hcg_placement_suggest's answer when something crosses. */
  int domain_size, ndomains; /* 0: no domains */
  int ndomain_checks;
  struct desc_check *domain_check; /* owned */
  int suggested;                   /* 1 a suggestion, 0 none, < 0 not made */
  char suggestion[HCG_ERROR_MAX];
};

struct desc {
  struct desc_placement placement;
  int version; /* of the environment (HCG_VERSION) */
  const char *text, *mode;
  int world, ngrids, language;
  struct desc_grid grid[HCG_MAX_GRIDS];
  int nbridges;
  struct desc_bridge bridge[HCG_MAX_GRIDS];
  int nembedding;           /* embedding groups of each kind */
  const hcg_layout *layout; /* describe.c's own */
};

/* A description of L, which must outlive it; NULL when out of memory. */
struct desc *describe_layout(const hcg_layout *L);
void describe_free(struct desc *d);

/* Places the ranks on nodes and checks every group of each dim listed in
 * `dims` (NULL: the default list) with the core's check, the plugin's.
 * With domain_size > 0, every domain_size nodes form a domain and the dims
 * of domain_dims (NULL: the default list) are checked against domains
 * instead. O(world x listed dims), and a suggestion when a group crosses
 * (hcg_placement_suggest). HCG_ENOMEM, or HCG_OK. */
int describe_placement(struct desc *d, const hcg_placement *p, const char *dims,
                       int domain_size, const char *domain_dims);
/* The node, and the domain, of a rank once placed (-1 before). */
int describe_node(const struct desc *d, int rank);
int describe_domain(const struct desc *d, int rank);
/* Calls fn with the members of each group of domain check i that crosses
 * domains, in group order. O(groups of its dim x group size). */
typedef void (*desc_group_fn)(void *arg, const int *members, int n);
int describe_crossing_groups(const struct desc *d, int i, desc_group_fn fn,
                             void *arg);

/* ---- what grows with the world: one item at a time ---------------------- */

/* Group `ordinal` of a provided field, 0 <= ordinal < ngroups. */
void describe_group_at(const struct desc *d, int grid, int field, int ordinal,
                       struct desc_ranks *out);

/* Embedding group `ordinal` of a kind: members[0 .. *n-1], n is 1 or 2. */
void describe_embedding_at(const struct desc *d, int kind, int ordinal,
                           int members[2], int *n);

/* Colocated bridge k: gather group `ordinal`. */
void describe_bridge_group_at(const struct desc *d, int k, int ordinal,
                              struct desc_ranks *out);
/* Non-colocated bridge k: the leader of a src lane and the dest leaders it
 * sends to (first .. first+count-1, as describe_bridge_dest_leader). */
int describe_bridge_src_leader(const struct desc *d, int k, int lane);
void describe_bridge_targets(const struct desc *d, int k, int lane, int *first,
                             int *count);
int describe_bridge_dest_leader(const struct desc *d, int k, int lane);

/* ---- one rank ----------------------------------------------------------- */

struct desc_rank_group {
  int provided;
  struct desc_ranks ranks;
  int index; /* of the rank in its group */
};

struct desc_rank_grid {
  int member; /* 0: the rank is not in this grid; nothing below is set */
  int coords[1 + HCG_MAX_VIEWS][HCG_MAX_DIMS];
  int first_stage, last_stage;
  struct desc_rank_group group[HCG_FIELD_COUNT]; /* with DESC_GROUPS */
};

struct desc_rank {
  int rank;
  struct desc_rank_grid grid[HCG_MAX_GRIDS];
  /* With DESC_GROUPS: */
  int in_language;                   /* embedding is set */
  int embedding_ok[DESC_EMBEDDINGS]; /* 0: a middle stage holds none */
  int embedding[DESC_EMBEDDINGS][2], embedding_n[DESC_EMBEDDINGS];
  int bridge_shown[HCG_MAX_GRIDS]; /* the rank is on one side of it */
  int bridge_ok[HCG_MAX_GRIDS];    /* colocated: it has a gather group */
  struct desc_ranks bridge_group[HCG_MAX_GRIDS];
};

enum {
  DESC_PLACE = 0,  /* grids, coordinates, stages: O(dims) */
  DESC_GROUPS = 1, /* and every group of the rank: O(fields x dims) */
};

/* What rank (0 <= rank < world) holds. */
void describe_rank(const struct desc *d, int rank, int what,
                   struct desc_rank *out);

/* The variables the plugin exports to a rank, in its order, with their
 * scope (enum hcg_env_scope, from the core). */
typedef void (*desc_env_fn)(void *arg, const char *name, const char *value,
                            int scope);
void describe_env(const struct desc *d, int rank, desc_env_fn fn, void *arg);

#endif
