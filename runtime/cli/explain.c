/*
 * explain.c - `hcg explain`: a layout told for people (text) or programs
 * (json). Everything shown is computed by the core, rank by rank, with the
 * same functions the plugin and libhcg use.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"

/* Text mode shows at most this many groups of a field, then a count. */
enum { TEXT_GROUPS = 8, TEXT_MEMBERS = 16 };

/* ---- shared helpers ---------------------------------------------------- */

/* A group's members, compactly: runs of three or more with a constant
 * positive stride become FIRST-LAST (stride 1) or FIRST-LAST:STRIDE, e.g.
 * [0-7], [0-63:8], [0,1,8-15]. After `limit` items (0: no limit) the rest
 * is counted, never cut with "...". */
static void put_members(FILE *out, const hcg_layout *L, const hcg_group *g,
                        int limit) {
  fputc('[', out);
  int items = 0;
  for (int i = 0; i < g->size; items++) {
    if (limit && items == limit) {
      fprintf(out, " +%d more", g->size - i);
      break;
    }
    int a = hcg_group_member(L, g, i), j = i, stride = 0;
    if (i + 2 < g->size) {
      stride = hcg_group_member(L, g, i + 1) - a;
      while (stride > 0 && j + 1 < g->size &&
             hcg_group_member(L, g, j + 1) - hcg_group_member(L, g, j) ==
                 stride)
        j++;
    }
    if (items)
      fputc(',', out);
    if (j - i >= 2) {
      fprintf(out, "%d-%d", a, hcg_group_member(L, g, j));
      if (stride != 1)
        fprintf(out, ":%d", stride);
      i = j + 1;
    } else {
      fprintf(out, "%d", a);
      i++;
    }
  }
  fputc(']', out);
}

static void json_members(struct json *j, const hcg_layout *L,
                         const hcg_group *g) {
  json_begin_array(j);
  for (int i = 0; i < g->size; i++)
    json_int(j, hcg_group_member(L, g, i));
  json_end_array(j);
}

static void json_ints(struct json *j, const int *v, int n) {
  json_begin_array(j);
  for (int i = 0; i < n; i++)
    json_int(j, v[i]);
  json_end_array(j);
}

/* Bridges from every other grid to the language grid. */
static int bridge_src(const hcg_layout *L, int k) {
  int lang = hcg_layout_language(L), n = 0;
  for (int g = 0; g < hcg_layout_num_grids(L); g++)
    if (g != lang && n++ == k)
      return g;
  return -1;
}

/* ---- JSON -------------------------------------------------------------- */

struct env_json {
  struct json *j;
  int common; /* 1: only the variables every task shares; 0: the others */
};

static int is_common_var(const char *name) {
  return hcg_env_scope(name) == HCG_ENV_SHARED;
}

static int env_to_json(void *arg, const char *name, const char *value) {
  struct env_json *e = arg;
  if (e->common < 0 || is_common_var(name) == e->common) {
    json_key(e->j, name);
    json_string(e->j, value);
  }
  return 0;
}

static void json_env(struct json *j, const hcg_layout *L, int rank,
                     int common) {
  struct env_json e = {j, common};
  json_begin_object(j);
  hcg_rank_env(L, rank, env_to_json, &e);
  json_end_object(j);
}

static void json_header(struct json *j, const hcg_layout *L) {
  json_key(j, "version");
  json_int(j, HCG_ENV_VERSION);
  json_key(j, "layout");
  json_string(j, hcg_layout_text(L));
  json_key(j, "world_size");
  json_int(j, hcg_layout_world_size(L));
  json_key(j, "mode");
  json_string(j, hcg_mode_name(hcg_layout_mode(L)));
  json_key(j, "language");
  json_string(j, hcg_grid_name(L, hcg_layout_language(L)));
}

static void json_views(struct json *j, const hcg_layout *L, int g) {
  json_begin_array(j);
  for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
    json_begin_object(j);
    json_key(j, "name");
    json_string(j, hcg_view_name(L, g, v));
    json_key(j, "dims");
    json_begin_array(j);
    for (int d = 0; d < hcg_view_num_dims(L, g, v); d++) {
      json_begin_object(j);
      json_key(j, "name");
      json_string(j, hcg_dim_name(L, g, v, d));
      json_key(j, "size");
      json_int(j, hcg_dim_size(L, g, v, d));
      json_key(j, "stride");
      json_int(j, hcg_dim_stride(L, g, v, d));
      json_key(j, "shared");
      json_bool(j, hcg_dim_shared(L, g, v, d));
      json_end_object(j);
    }
    json_end_array(j);
    json_end_object(j);
  }
  json_end_array(j);
}

/* One collection field: null, or key, size and either every group or (for
 * one rank) that rank's group and index. */
static void json_field(struct json *j, const hcg_layout *L, int g, int f,
                       int rank) {
  hcg_request req;
  if (hcg_collection_request(L, g, f, &req) != HCG_OK) {
    json_null(j);
    return;
  }
  char key[HCG_KEY_MAX];
  hcg_request_key(L, &req, key, sizeof key);
  json_begin_object(j);
  json_key(j, "key");
  json_string(j, key);
  if (hcg_field_alias(f) >= 0) {
    json_key(j, "same_as");
    json_string(j, hcg_field_name(hcg_field_alias(f)));
  }
  json_key(j, "size");
  json_int(j, hcg_request_group_size(L, &req));
  if (rank < 0) {
    json_key(j, "groups");
    json_begin_array(j);
    for (int o = 0; o < hcg_request_num_groups(L, &req); o++) {
      hcg_group grp;
      hcg_group_at(L, &req, o, &grp);
      json_members(j, L, &grp);
    }
    json_end_array(j);
  } else {
    hcg_group grp;
    hcg_group_of_rank(L, &req, rank, &grp);
    json_key(j, "members");
    json_members(j, L, &grp);
    json_key(j, "index");
    json_int(j, grp.index);
  }
  json_end_object(j);
}

static void json_collection(struct json *j, const hcg_layout *L, int g,
                            int rank) {
  json_begin_object(j);
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    json_key(j, hcg_field_name(f));
    json_field(j, L, g, f, rank);
  }
  json_end_object(j);
}

static void json_embedding_groups(struct json *j, const hcg_layout *L) {
  static const char *const kinds[] = {"embd", "pos_embd"};
  json_begin_object(j);
  for (int k = 0; k < 2; k++) {
    json_key(j, kinds[k]);
    json_begin_array(j);
    for (int o = 0; o < hcg_embedding_num_groups(L); o++) {
      int m[2], n;
      hcg_embedding_group_at(L, k, o, m, &n);
      json_ints(j, m, n);
    }
    json_end_array(j);
  }
  json_end_object(j);
}

static void json_rank_embedding(struct json *j, const hcg_layout *L, int rank) {
  static const char *const kinds[] = {"embd", "pos_embd"};
  json_begin_object(j);
  for (int k = 0; k < 2; k++) {
    int m[2], n;
    json_key(j, kinds[k]);
    if (hcg_embedding_group_of_rank(L, k, rank, m, &n) == HCG_OK)
      json_ints(j, m, n);
    else
      json_null(j);
  }
  json_end_object(j);
}

/* A bridge: its shape, and all its groups or leaders (rank < 0) or those
 * of one rank. */
static void json_bridge(struct json *j, const hcg_layout *L, int src,
                        int rank) {
  int dest = hcg_layout_language(L);
  hcg_bridge b;
  hcg_error err = HCG_ERROR_INIT;
  json_begin_object(j);
  json_key(j, "src");
  json_string(j, hcg_grid_name(L, src));
  json_key(j, "dest");
  json_string(j, hcg_grid_name(L, dest));
  if (hcg_bridge_make(L, src, dest, &b, &err) != HCG_OK) {
    json_key(j, "error");
    json_string(j, err.message);
    json_end_object(j);
    return;
  }
  json_key(j, "colocated");
  json_bool(j, b.colocated);
  json_key(j, "kind");
  json_string(j, hcg_bridge_kind_name(b.kind));
  json_key(j, "scale");
  json_int(j, b.scale);
  int *m = malloc(sizeof *m * (size_t)b.scale);
  int n = 0;
  if (b.colocated) {
    json_key(j, "dest_cp");
    json_int(j, b.dest_cp);
    if (rank < 0) {
      json_key(j, "groups");
      json_begin_array(j);
      for (int o = 0; m && o < hcg_bridge_num_groups(L, &b); o++)
        if (hcg_bridge_group_at(L, &b, o, m, b.scale, &n) == HCG_OK)
          json_ints(j, m, n);
      json_end_array(j);
    } else {
      json_key(j, "group");
      if (m && hcg_bridge_group_of_rank(L, &b, rank, m, b.scale, &n) == HCG_OK)
        json_ints(j, m, n);
      else
        json_null(j);
    }
  } else if (rank < 0) {
    json_key(j, "leaders");
    json_begin_array(j);
    for (int lane = 0; lane < b.src_lanes; lane++) {
      int first, count;
      hcg_bridge_targets(L, &b, lane, &first, &count);
      json_begin_object(j);
      json_key(j, "src");
      json_int(j, hcg_bridge_leader(L, &b, 0, lane));
      json_key(j, "dest");
      json_begin_array(j);
      for (int t = first; t < first + count; t++)
        json_int(j, hcg_bridge_leader(L, &b, 1, t));
      json_end_array(j);
      json_end_object(j);
    }
    json_end_array(j);
  }
  free(m);
  json_end_object(j);
}

static void json_bridges(struct json *j, const hcg_layout *L, int rank) {
  json_begin_array(j);
  for (int k = 0, src; (src = bridge_src(L, k)) >= 0; k++)
    if (rank < 0 || hcg_grid_contains(L, src, rank) ||
        hcg_grid_contains(L, hcg_layout_language(L), rank))
      json_bridge(j, L, src, rank);
  json_end_array(j);
}

/* The coordinates and stages of one rank in every grid holding it. */
static void json_rank_place(struct json *j, const hcg_layout *L, int rank) {
  json_key(j, "grids");
  json_begin_array(j);
  for (int g = 0; g < hcg_layout_num_grids(L); g++)
    if (hcg_grid_contains(L, g, rank))
      json_string(j, hcg_grid_name(L, g));
  json_end_array(j);
  json_key(j, "coords");
  json_begin_object(j);
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    if (!hcg_grid_contains(L, g, rank))
      continue;
    json_key(j, hcg_grid_name(L, g));
    json_begin_object(j);
    for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
      int c[HCG_MAX_DIMS];
      hcg_rank_coords(L, g, v, rank, c, HCG_MAX_DIMS);
      json_key(j, hcg_view_name(L, g, v));
      json_begin_object(j);
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++) {
        json_key(j, hcg_dim_name(L, g, v, d));
        json_int(j, c[d]);
      }
      json_end_object(j);
    }
    json_end_object(j);
  }
  json_end_object(j);
  json_key(j, "stages");
  json_begin_object(j);
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    int first, last;
    if (hcg_rank_stage(L, g, rank, &first, &last) != HCG_OK)
      continue;
    json_key(j, hcg_grid_name(L, g));
    json_begin_object(j);
    json_key(j, "first");
    json_bool(j, first);
    json_key(j, "last");
    json_bool(j, last);
    json_end_object(j);
  }
  json_end_object(j);
}

static void explain_json(FILE *out, const hcg_layout *L, int rank) {
  struct json j;
  json_init(&j, out);
  json_begin_object(&j);
  json_header(&j, L);
  int lang = hcg_layout_language(L);

  if (rank >= 0) {
    json_key(&j, "rank");
    json_int(&j, rank);
    json_rank_place(&j, L, rank);
    json_key(&j, "groups");
    json_begin_object(&j);
    for (int g = 0; g < hcg_layout_num_grids(L); g++)
      if (hcg_grid_contains(L, g, rank)) {
        json_key(&j, hcg_grid_name(L, g));
        json_collection(&j, L, g, rank);
      }
    json_end_object(&j);
    json_key(&j, "embedding");
    if (hcg_grid_contains(L, lang, rank))
      json_rank_embedding(&j, L, rank);
    else
      json_null(&j);
    json_key(&j, "bridges");
    json_bridges(&j, L, rank);
    json_key(&j, "env");
    json_env(&j, L, rank, -1);
    json_end_object(&j);
    fputc('\n', out);
    return;
  }

  json_key(&j, "env");
  json_env(&j, L, 0, 1);
  json_key(&j, "grids");
  json_begin_array(&j);
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    json_begin_object(&j);
    json_key(&j, "name");
    json_string(&j, hcg_grid_name(L, g));
    json_key(&j, "offset");
    json_int(&j, hcg_grid_offset(L, g));
    json_key(&j, "size");
    json_int(&j, hcg_grid_size(L, g));
    json_key(&j, "language");
    json_bool(&j, g == lang);
    json_key(&j, "views");
    json_views(&j, L, g);
    json_key(&j, "collection");
    json_collection(&j, L, g, -1);
    if (g == lang) {
      json_key(&j, "embedding");
      json_embedding_groups(&j, L);
    }
    json_end_object(&j);
  }
  json_end_array(&j);
  json_key(&j, "bridges");
  json_bridges(&j, L, -1);
  json_key(&j, "ranks");
  json_begin_array(&j);
  for (int r = 0; r < hcg_layout_world_size(L); r++) {
    json_begin_object(&j);
    json_key(&j, "rank");
    json_int(&j, r);
    json_rank_place(&j, L, r);
    json_key(&j, "env");
    json_env(&j, L, r, 0);
    json_end_object(&j);
  }
  json_end_array(&j);
  json_end_object(&j);
  fputc('\n', out);
}

/* ---- text -------------------------------------------------------------- */

static void text_dims(FILE *out, const hcg_layout *L, int g, int v) {
  for (int d = 0; d < hcg_view_num_dims(L, g, v); d++)
    fprintf(out, "%s%s=%d%s", d ? " " : "", hcg_dim_name(L, g, v, d),
            hcg_dim_size(L, g, v, d),
            hcg_dim_shared(L, g, v, d) ? " (shared)" : "");
}

static void text_stage(FILE *out, const hcg_layout *L, int g, int rank) {
  int first, last;
  if (hcg_rank_stage(L, g, rank, &first, &last) != HCG_OK)
    return;
  fputs(first && last ? "first+last"
        : first       ? "first"
        : last        ? "last"
                      : "middle",
        out);
}

/* One line per rank: its coordinates in each view of grid g. */
static void text_rank_table(FILE *out, const hcg_layout *L, int g) {
  int nv = hcg_grid_num_views(L, g);
  fputs("    rank ", out);
  for (int v = 0; v < nv; v++) {
    fputs("|", out);
    if (v)
      fprintf(out, " %s:", hcg_view_name(L, g, v));
    for (int d = 0; d < hcg_view_num_dims(L, g, v); d++)
      fprintf(out, " %s", hcg_dim_name(L, g, v, d));
    fputs(" ", out);
  }
  fputs("| stage\n", out);
  int off = hcg_grid_offset(L, g), size = hcg_grid_size(L, g);
  for (int r = off; r < off + size; r++) {
    fprintf(out, "    %4d ", r);
    for (int v = 0; v < nv; v++) {
      int c[HCG_MAX_DIMS];
      hcg_rank_coords(L, g, v, r, c, HCG_MAX_DIMS);
      fputs("|", out);
      if (v)
        fprintf(out, " %*s", (int)strlen(hcg_view_name(L, g, v)) + 1, "");
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++)
        fprintf(out, " %*d", (int)strlen(hcg_dim_name(L, g, v, d)), c[d]);
      fputs(" ", out);
    }
    fputs("| ", out);
    text_stage(out, L, g, r);
    fputs("\n", out);
  }
}

static void text_field(FILE *out, const hcg_layout *L, int g, int f, int rank) {
  hcg_request req;
  fprintf(out, "    %-26s ", hcg_field_name(f));
  if (hcg_collection_request(L, g, f, &req) != HCG_OK) {
    fputs("not provided\n", out);
    return;
  }
  char key[HCG_KEY_MAX];
  hcg_request_key(L, &req, key, sizeof key);
  fprintf(out, "%-24s ", key);
  if (hcg_field_alias(f) >= 0)
    fprintf(out, "(same group as %s) ", hcg_field_name(hcg_field_alias(f)));
  hcg_group grp;
  if (rank >= 0) {
    hcg_group_of_rank(L, &req, rank, &grp);
    put_members(out, L, &grp, 0);
    fprintf(out, "  index %d of %d\n", grp.index, grp.size);
    return;
  }
  int n = hcg_request_num_groups(L, &req);
  fputc('[', out);
  for (int o = 0; o < n && o < TEXT_GROUPS; o++) {
    hcg_group_at(L, &req, o, &grp);
    if (o)
      fputc(',', out);
    put_members(out, L, &grp, TEXT_MEMBERS);
  }
  fputc(']', out);
  if (n > TEXT_GROUPS)
    fprintf(out, " +%d more (%d groups of %d)", n - TEXT_GROUPS, n,
            hcg_request_group_size(L, &req));
  fputc('\n', out);
}

static void text_bridge(FILE *out, const hcg_layout *L, int src, int rank) {
  int dest = hcg_layout_language(L);
  hcg_bridge b;
  hcg_error err = HCG_ERROR_INIT;
  fprintf(out, "  %s -> %s: ", hcg_grid_name(L, src), hcg_grid_name(L, dest));
  if (hcg_bridge_make(L, src, dest, &b, &err) != HCG_OK) {
    fprintf(out, "no bridge: %s\n", err.message);
    return;
  }
  fprintf(out, "%s, %s, scale %d", b.colocated ? "colocated" : "non-colocated",
          hcg_bridge_kind_name(b.kind), b.scale);
  int *m = malloc(sizeof *m * (size_t)b.scale);
  int n;
  if (!m) {
    fputs("\n", out);
    return;
  }
  if (b.colocated) {
    if (b.dest_cp > 1)
      fprintf(out, "; dest cp=%d: backward all-reduces over dest cp first",
              b.dest_cp);
    if (b.kind == HCG_BRIDGE_FAN_IN)
      fputs("\n    forward all-gathers the batch in each group, backward "
            "narrows",
            out);
    else if (b.kind == HCG_BRIDGE_FAN_OUT)
      fputs("\n    forward narrows the batch, backward all-gathers in each "
            "group",
            out);
    fputs("\n    gather groups: ", out);
    if (rank >= 0) {
      if (hcg_bridge_group_of_rank(L, &b, rank, m, b.scale, &n) == HCG_OK) {
        fputc('[', out);
        for (int i = 0; i < n; i++)
          fprintf(out, i ? ",%d" : "%d", m[i]);
        fputc(']', out);
      } else {
        fputs("none", out);
      }
    } else {
      int ng = hcg_bridge_num_groups(L, &b);
      fputc('[', out);
      for (int o = 0; o < ng && o < TEXT_GROUPS; o++) {
        hcg_bridge_group_at(L, &b, o, m, b.scale, &n);
        fputs(o ? ",[" : "[", out);
        for (int i = 0; i < n; i++)
          fprintf(out, i ? ",%d" : "%d", m[i]);
        fputc(']', out);
      }
      fputc(']', out);
      if (ng > TEXT_GROUPS)
        fprintf(out, " +%d more", ng - TEXT_GROUPS);
    }
  } else {
    fputs("\n    leaders (src -> dest):", out);
    for (int lane = 0; lane < b.src_lanes && lane < TEXT_GROUPS; lane++) {
      int first, count;
      hcg_bridge_targets(L, &b, lane, &first, &count);
      fprintf(out, " %d->[", hcg_bridge_leader(L, &b, 0, lane));
      for (int t = first; t < first + count; t++)
        fprintf(out, t > first ? ",%d" : "%d", hcg_bridge_leader(L, &b, 1, t));
      fputc(']', out);
    }
    if (b.src_lanes > TEXT_GROUPS)
      fprintf(out, " +%d more", b.src_lanes - TEXT_GROUPS);
  }
  free(m);
  fputc('\n', out);
}

static void text_header(FILE *out, const hcg_layout *L) {
  int ng = hcg_layout_num_grids(L);
  fprintf(out, "layout    %s\n", hcg_layout_text(L));
  fprintf(out, "world     %d ranks, %d grid%s, %s\n", hcg_layout_world_size(L),
          ng, ng == 1 ? "" : "s", hcg_mode_name(hcg_layout_mode(L)));
  fprintf(out, "language  %s (embedding groups)\n",
          hcg_grid_name(L, hcg_layout_language(L)));
}

static void text_grid_head(FILE *out, const hcg_layout *L, int g) {
  int off = hcg_grid_offset(L, g), size = hcg_grid_size(L, g);
  fprintf(out, "\ngrid %s: ranks [%d,%d), %d rank%s\n", hcg_grid_name(L, g),
          off, off + size, size, size == 1 ? "" : "s");
  for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
    fprintf(out, "  %-8s ", hcg_view_name(L, g, v));
    text_dims(out, L, g, v);
    fputc('\n', out);
  }
}

static void text_embedding(FILE *out, const hcg_layout *L, int rank) {
  static const char *const kinds[] = {"embd", "pos_embd"};
  for (int k = 0; k < 2; k++) {
    int m[2], n;
    fprintf(out, "    %-26s ", kinds[k]);
    if (rank >= 0) {
      if (hcg_embedding_group_of_rank(L, k, rank, m, &n) != HCG_OK) {
        fputs("none (not a first or last pipeline stage)\n", out);
        continue;
      }
      fprintf(out, n == 2 ? "[%d,%d]\n" : "[%d]\n", m[0], m[1]);
      continue;
    }
    int ng = hcg_embedding_num_groups(L);
    fputc('[', out);
    for (int o = 0; o < ng && o < TEXT_GROUPS; o++) {
      hcg_embedding_group_at(L, k, o, m, &n);
      fprintf(out, n == 2 ? "%s[%d,%d]" : "%s[%d]", o ? "," : "", m[0], m[1]);
    }
    fputc(']', out);
    if (ng > TEXT_GROUPS)
      fprintf(out, " +%d more", ng - TEXT_GROUPS);
    fputc('\n', out);
  }
}

static int print_env_line(void *arg, const char *name, const char *value) {
  fprintf(arg, "    %s=%s\n", name, value);
  return 0;
}

static void explain_text_rank(FILE *out, const hcg_layout *L, int rank) {
  text_header(out, L);
  int lang = hcg_layout_language(L);
  fprintf(out, "\nrank %d of %d\n", rank, hcg_layout_world_size(L));
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    if (!hcg_grid_contains(L, g, rank))
      continue;
    text_grid_head(out, L, g);
    for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
      int c[HCG_MAX_DIMS];
      hcg_rank_coords(L, g, v, rank, c, HCG_MAX_DIMS);
      fprintf(out, "  %s coordinates:", hcg_view_name(L, g, v));
      for (int d = 0; d < hcg_view_num_dims(L, g, v); d++)
        fprintf(out, " %s=%d", hcg_dim_name(L, g, v, d), c[d]);
      fputc('\n', out);
    }
    fputs("  pipeline stage: ", out);
    text_stage(out, L, g, rank);
    fputs("\n  process groups:\n", out);
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      text_field(out, L, g, f, rank);
    if (g == lang) {
      fputs("  embedding groups:\n", out);
      text_embedding(out, L, rank);
    }
  }
  if (hcg_layout_num_grids(L) > 1) {
    fputs("\nbridges\n", out);
    for (int k = 0, src; (src = bridge_src(L, k)) >= 0; k++)
      text_bridge(out, L, src, rank);
  }
  fputs("\nenvironment\n", out);
  hcg_rank_env(L, rank, print_env_line, out);
}

static void explain_text(FILE *out, const hcg_layout *L) {
  text_header(out, L);
  int lang = hcg_layout_language(L);
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    text_grid_head(out, L, g);
    fputs("\n  ranks:\n", out);
    text_rank_table(out, L, g);
    fputs("\n  process groups:\n", out);
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      text_field(out, L, g, f, -1);
    if (g == lang) {
      fputs("\n  embedding groups:\n", out);
      text_embedding(out, L, -1);
    }
  }
  if (hcg_layout_num_grids(L) > 1) {
    fputs("\nbridges\n", out);
    for (int k = 0, src; (src = bridge_src(L, k)) >= 0; k++)
      text_bridge(out, L, src, -1);
  }
}

int hcg_cli_explain(FILE *out, const hcg_layout *L,
                    const struct explain_opts *opts) {
  if (opts->json)
    explain_json(out, L, opts->rank);
  else if (opts->rank >= 0)
    explain_text_rank(out, L, opts->rank);
  else
    explain_text(out, L);
  return 0;
}
