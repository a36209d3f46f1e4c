/*
 * explain_text.c - `hcg explain`: a description (describe.h) told for
 * people.
 */
#include <string.h>

#include "cli.h"
#include "describe.h"

/* Text mode shows at most this many groups of a field, then a count. */
enum { TEXT_GROUPS = 8, TEXT_MEMBERS = 16 };

static const char *const embedding_names[DESC_EMBEDDINGS] = {"embd",
                                                             "pos_embd"};

/* A set's members, compactly: runs of three or more with a constant
 * positive stride become FIRST-LAST (stride 1) or FIRST-LAST:STRIDE, e.g.
 * [0-7], [0-63:8], [0,1,8-15]. After `limit` items (0: no limit) the rest
 * is counted, never cut with "...". */
static void put_members(FILE *out, const struct desc_ranks *s, int limit) {
  fputc('[', out);
  int items = 0;
  for (int i = 0; i < s->size; items++) {
    if (limit && items == limit) {
      fprintf(out, " +%d more", s->size - i);
      break;
    }
    int a = desc_member(s, i), j = i, stride = 0;
    if (i + 2 < s->size) {
      stride = desc_member(s, i + 1) - a;
      while (stride > 0 && j + 1 < s->size &&
             desc_member(s, j + 1) - desc_member(s, j) == stride)
        j++;
    }
    if (items)
      fputc(',', out);
    if (j - i >= 2) {
      fprintf(out, "%d-%d", a, desc_member(s, j));
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

static void put_list(FILE *out, const struct desc_ranks *s) {
  fputc('[', out);
  for (int i = 0; i < s->size; i++)
    fprintf(out, i ? ",%d" : "%d", desc_member(s, i));
  fputc(']', out);
}

static void text_dims(FILE *out, const struct desc_view *v) {
  for (int k = 0; k < v->ndims; k++)
    fprintf(out, "%s%s=%d%s", k ? " " : "", v->dim[k].name, v->dim[k].size,
            v->dim[k].shared ? " (shared)" : "");
}

static const char *stage_name(const struct desc_rank_grid *rg) {
  return rg->first_stage && rg->last_stage ? "first+last"
         : rg->first_stage                 ? "first"
         : rg->last_stage                  ? "last"
                                           : "middle";
}

/* One line per rank: its coordinates in each view of grid g. */
static void text_rank_table(FILE *out, const struct desc *d, int g,
                            struct desc_rank *r) {
  const struct desc_grid *grid = &d->grid[g];
  fputs("    rank ", out);
  for (int v = 0; v < grid->nviews; v++) {
    fputs("|", out);
    if (v)
      fprintf(out, " %s:", grid->view[v].name);
    for (int k = 0; k < grid->view[v].ndims; k++)
      fprintf(out, " %s", grid->view[v].dim[k].name);
    fputs(" ", out);
  }
  fputs("| stage\n", out);
  for (int rank = grid->offset; rank < grid->offset + grid->size; rank++) {
    describe_rank(d, rank, DESC_PLACE, r);
    fprintf(out, "    %4d ", rank);
    for (int v = 0; v < grid->nviews; v++) {
      const struct desc_view *view = &grid->view[v];
      fputs("|", out);
      if (v)
        fprintf(out, " %*s", (int)strlen(view->name) + 1, "");
      for (int k = 0; k < view->ndims; k++)
        fprintf(out, " %*d", (int)strlen(view->dim[k].name),
                r->grid[g].coords[v][k]);
      fputs(" ", out);
    }
    fprintf(out, "| %s\n", stage_name(&r->grid[g]));
  }
}

static void text_field(FILE *out, const struct desc *d, int g, int f,
                       const struct desc_rank *r) {
  const struct desc_field *field = &d->grid[g].field[f];
  fprintf(out, "    %-26s ", field->name);
  if (!field->provided) {
    fputs("not provided\n", out);
    return;
  }
  fprintf(out, "%-24s ", field->key);
  if (field->same_as)
    fprintf(out, "(same group as %s) ", field->same_as);
  if (r) {
    const struct desc_rank_group *rg = &r->grid[g].group[f];
    put_members(out, &rg->ranks, 0);
    fprintf(out, "  index %d of %d\n", rg->index, rg->ranks.size);
    return;
  }
  fputc('[', out);
  for (int o = 0; o < field->ngroups && o < TEXT_GROUPS; o++) {
    struct desc_ranks s;
    describe_group_at(d, g, f, o, &s);
    if (o)
      fputc(',', out);
    put_members(out, &s, TEXT_MEMBERS);
  }
  fputc(']', out);
  if (field->ngroups > TEXT_GROUPS)
    fprintf(out, " +%d more (%d groups of %d)", field->ngroups - TEXT_GROUPS,
            field->ngroups, field->size);
  fputc('\n', out);
}

static void text_bridge(FILE *out, const struct desc *d, int k,
                        const struct desc_rank *r) {
  const struct desc_bridge *b = &d->bridge[k];
  fprintf(out, "  %s -> %s: ", b->src_name, b->dest_name);
  if (!b->ok) {
    fprintf(out, "no bridge: %s\n", b->error);
    return;
  }
  fprintf(out, "%s, %s, scale %d", b->colocated ? "colocated" : "non-colocated",
          b->kind, b->scale);
  if (b->colocated) {
    if (b->dest_cp > 1)
      fprintf(out, "; dest cp=%d: backward all-reduces over dest cp first",
              b->dest_cp);
    if (b->fan_in)
      fputs("\n    forward all-gathers the batch in each group, backward "
            "narrows",
            out);
    else if (b->fan_out)
      fputs("\n    forward narrows the batch, backward all-gathers in each "
            "group",
            out);
    fputs("\n    gather groups: ", out);
    if (r) {
      if (r->bridge_ok[k])
        put_list(out, &r->bridge_group[k]);
      else
        fputs("none", out);
    } else {
      fputc('[', out);
      for (int o = 0; o < b->ngroups && o < TEXT_GROUPS; o++) {
        struct desc_ranks s;
        describe_bridge_group_at(d, k, o, &s);
        if (o)
          fputc(',', out);
        put_list(out, &s);
      }
      fputc(']', out);
      if (b->ngroups > TEXT_GROUPS)
        fprintf(out, " +%d more", b->ngroups - TEXT_GROUPS);
    }
  } else {
    fputs("\n    leaders (src -> dest):", out);
    for (int lane = 0; lane < b->src_lanes && lane < TEXT_GROUPS; lane++) {
      int first, count;
      describe_bridge_targets(d, k, lane, &first, &count);
      fprintf(out, " %d->[", describe_bridge_src_leader(d, k, lane));
      for (int t = first; t < first + count; t++)
        fprintf(out, t > first ? ",%d" : "%d",
                describe_bridge_dest_leader(d, k, t));
      fputc(']', out);
    }
    if (b->src_lanes > TEXT_GROUPS)
      fprintf(out, " +%d more", b->src_lanes - TEXT_GROUPS);
  }
  fputc('\n', out);
}

static void text_header(FILE *out, const struct desc *d) {
  fprintf(out, "layout    %s\n", d->text);
  fprintf(out, "world     %d ranks, %d grid%s, %s\n", d->world, d->ngrids,
          d->ngrids == 1 ? "" : "s", d->mode);
  fprintf(out, "language  %s (embedding groups)\n", d->grid[d->language].name);
}

static void text_grid_head(FILE *out, const struct desc_grid *grid) {
  int off = grid->offset, size = grid->size;
  fprintf(out, "\ngrid %s: ranks [%d,%d), %d rank%s\n", grid->name, off,
          off + size, size, size == 1 ? "" : "s");
  for (int v = 0; v < grid->nviews; v++) {
    fprintf(out, "  %-8s ", grid->view[v].name);
    text_dims(out, &grid->view[v]);
    fputc('\n', out);
  }
}

static void text_embedding(FILE *out, const struct desc *d,
                           const struct desc_rank *r) {
  for (int k = 0; k < DESC_EMBEDDINGS; k++) {
    int m[2], n;
    fprintf(out, "    %-26s ", embedding_names[k]);
    if (r) {
      if (!r->embedding_ok[k]) {
        fputs("none (not a first or last pipeline stage)\n", out);
        continue;
      }
      const int *e = r->embedding[k];
      fprintf(out, r->embedding_n[k] == 2 ? "[%d,%d]\n" : "[%d]\n", e[0], e[1]);
      continue;
    }
    fputc('[', out);
    for (int o = 0; o < d->nembedding && o < TEXT_GROUPS; o++) {
      describe_embedding_at(d, k, o, m, &n);
      fprintf(out, n == 2 ? "%s[%d,%d]" : "%s[%d]", o ? "," : "", m[0], m[1]);
    }
    fputc(']', out);
    if (d->nembedding > TEXT_GROUPS)
      fprintf(out, " +%d more", d->nembedding - TEXT_GROUPS);
    fputc('\n', out);
  }
}

static void print_env_line(void *arg, const char *name, const char *value,
                           int scope) {
  (void)scope;
  fprintf(arg, "    %s=%s\n", name, value);
}

static void explain_text_rank(FILE *out, const struct desc *d,
                              struct desc_rank *r) {
  text_header(out, d);
  fprintf(out, "\nrank %d of %d\n", r->rank, d->world);
  for (int g = 0; g < d->ngrids; g++) {
    const struct desc_grid *grid = &d->grid[g];
    const struct desc_rank_grid *rg = &r->grid[g];
    if (!rg->member)
      continue;
    text_grid_head(out, grid);
    for (int v = 0; v < grid->nviews; v++) {
      fprintf(out, "  %s coordinates:", grid->view[v].name);
      for (int k = 0; k < grid->view[v].ndims; k++)
        fprintf(out, " %s=%d", grid->view[v].dim[k].name, rg->coords[v][k]);
      fputc('\n', out);
    }
    fprintf(out, "  pipeline stage: %s\n", stage_name(rg));
    fputs("  process groups:\n", out);
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      text_field(out, d, g, f, r);
    if (grid->language) {
      fputs("  embedding groups:\n", out);
      text_embedding(out, d, r);
    }
  }
  if (d->ngrids > 1) {
    fputs("\nbridges\n", out);
    for (int k = 0; k < d->nbridges; k++)
      text_bridge(out, d, k, r);
  }
  fputs("\nenvironment\n", out);
  describe_env(d, r->rank, print_env_line, out);
}

static void explain_text_world(FILE *out, const struct desc *d,
                               struct desc_rank *r) {
  text_header(out, d);
  for (int g = 0; g < d->ngrids; g++) {
    text_grid_head(out, &d->grid[g]);
    fputs("\n  ranks:\n", out);
    text_rank_table(out, d, g, r);
    fputs("\n  process groups:\n", out);
    for (int f = 0; f < HCG_FIELD_COUNT; f++)
      text_field(out, d, g, f, NULL);
    if (d->grid[g].language) {
      fputs("\n  embedding groups:\n", out);
      text_embedding(out, d, NULL);
    }
  }
  if (d->ngrids > 1) {
    fputs("\nbridges\n", out);
    for (int k = 0; k < d->nbridges; k++)
      text_bridge(out, d, k, NULL);
  }
}

int explain_text(FILE *out, const struct desc *d,
                 const struct explain_opts *opts, struct desc_rank *r) {
  if (opts->rank >= 0) {
    describe_rank(d, opts->rank, DESC_GROUPS, r);
    explain_text_rank(out, d, r);
  } else {
    explain_text_world(out, d, r);
  }
  return 0;
}
