/*
 * explain_text.c - `hcg explain`: a description (describe.h) told for
 * people. Every line fits TEXT_WIDTH columns: long items wrap onto indented
 * lines. A group is written compactly and in full (see put_ranks); what is
 * left out of a big layout is counted, and --full shows it.
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"
#include "describe.h"

enum {
  TEXT_WIDTH = 100, /* columns of a line */
  TEXT_GROUPS = 8,  /* groups of a field shown, then a count (not --full) */
  TEXT_RUNS = 16,   /* runs a group is written with before its terms */
  TEXT_RANKS = 32,  /* grids up to this size get a full rank table */
  TEXT_ENDS = 4,    /* else its first and last ranks (not --full) */
};

static const char *const embedding_names[DESC_EMBEDDINGS] = {"embd",
                                                             "pos_embd"};

/* ---- lines that wrap ----------------------------------------------------- */

struct tw {
  FILE *out;
  int col;    /* of the next character */
  int indent; /* of the lines a wrap starts */
};

/* Ends the line. */
static void tw_newline(struct tw *t) {
  fputc('\n', t->out);
  t->col = 0;
}

/* Goes on with the current item on a new, indented line. */
static void tw_wrap(struct tw *t) {
  fputc('\n', t->out);
  t->col = fprintf(t->out, "%*s", t->indent, "");
}

/* Writes s unbroken, on the next line when it would pass the width; a
 * piece wider than a whole line is cut where the line ends. */
static void tw_put(struct tw *t, const char *s) {
  size_t n = strlen(s);
  if (t->col > t->indent && t->col + (int)n > TEXT_WIDTH) {
    tw_wrap(t);
    while (*s == ' ')
      s++, n--;
  }
  while (t->col + (int)n > TEXT_WIDTH) {
    size_t room = (size_t)(TEXT_WIDTH - t->col);
    fwrite(s, 1, room, t->out);
    s += room;
    n -= room;
    tw_wrap(t);
  }
  fputs(s, t->out);
  t->col += (int)n;
}

__attribute__((format(printf, 2, 3))) static void
tw_printf(struct tw *t, const char *fmt, ...) {
  char buf[2 * HCG_KEY_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  tw_put(t, buf);
}

/* A long value (a layout, a list of names) in pieces that end after each
 * ',' or ';', so that it wraps between items. */
static void tw_text(struct tw *t, const char *s) {
  char piece[128];
  size_t n = 0;
  for (; *s; s++) {
    piece[n++] = *s;
    if (*s == ',' || *s == ';' || n == sizeof piece - 1) {
      piece[n] = 0;
      tw_put(t, piece);
      n = 0;
    }
  }
  piece[n] = 0;
  if (n)
    tw_put(t, piece);
}

/* An item of a list: unbroken when it fits a line, else cut after commas. */
static void tw_item(struct tw *t, const char *s) {
  if ((int)strlen(s) <= TEXT_WIDTH - t->indent)
    tw_put(t, s);
  else
    tw_text(t, s);
}

/* Starts a line: `indent` spaces, then wraps indented by `wrap`. */
static void tw_line(struct tw *t, FILE *out, int indent, int wrap) {
  t->out = out;
  t->col = fprintf(out, "%*s", indent, "");
  t->indent = wrap;
}

/* ---- sets of ranks ------------------------------------------------------- */

/* One progression: A (one member), A,B (two), A-B (three or more, stride
 * 1) or A-B:S. */
static int put_run(char *buf, size_t cap, int first, int count, int stride) {
  long long last = first + (long long)(count - 1) * stride;
  if (count == 1)
    return snprintf(buf, cap, "%d", first);
  if (count == 2)
    return snprintf(buf, cap, "%d,%lld", first, last);
  if (stride == 1)
    return snprintf(buf, cap, "%d-%lld", first, last);
  return snprintf(buf, cap, "%d-%lld:%d", first, last, stride);
}

/* A set of ranks, complete and compact, into buf (RANKS_BUF bytes). With
 * at most TEXT_RUNS runs it is its ascending members, runs of three or
 * more equally spaced ones written FIRST-LAST[:STRIDE]: [0-7], [0-63:8],
 * [0,1,8-15]. Otherwise it is a sum of such progressions, [A]+[B]: every
 * member of A plus every member of B, e.g. [0,2]+[0-1073741816:8] for 0,
 * 2, 8, 10, ... Either way the work and the output are bounded by the runs
 * and the terms, whatever the size. */
enum { RANKS_BUF = (TEXT_RUNS > HCG_MAX_DIMS ? TEXT_RUNS : HCG_MAX_DIMS) * 40 };
static const char *fmt_ranks(char *buf, const struct desc_ranks *s,
                             const char *after) {
  char run[80];
  size_t n = 0;
#define ADD(...) n += (size_t)snprintf(buf + n, RANKS_BUF - n, __VA_ARGS__)
  if (!s->listed) {
    ADD("[%d ranks]%s", s->size, after);
    return buf;
  }
  if (desc_num_runs(s) > TEXT_RUNS) {
    for (int k = 0; k < s->nterms; k++) {
      put_run(run, sizeof run, k ? 0 : s->first, s->term[k].count,
              s->term[k].stride);
      ADD("%s[%s]", k ? "+" : "", run);
    }
    ADD("%s", after);
    return buf;
  }
  /* Blocks of the first term: three or more members make one run, fewer
   * are written one by one (desc_num_runs). */
  int block = s->nterms ? s->term[0].count : 1;
  int stride = s->nterms ? s->term[0].stride : 1;
  int per = block >= 3 ? block : 1;
  for (int i = 0; i < s->size; i += per) {
    put_run(run, sizeof run, desc_member(s, i), per, stride);
    ADD("%s%s", i ? "," : "[", run);
  }
  ADD("]%s", after);
#undef ADD
  return buf;
}

static void put_ranks(struct tw *t, const struct desc_ranks *s,
                      const char *after) {
  char buf[RANKS_BUF];
  tw_item(t, fmt_ranks(buf, s, after));
}

/* ---- layout-wide parts --------------------------------------------------- */

static void text_header(FILE *out, const struct desc *d) {
  struct tw t;
  tw_line(&t, out, 0, 10);
  tw_put(&t, "layout    ");
  tw_text(&t, d->text);
  tw_newline(&t);
  fprintf(out, "world     %d ranks, %d grid%s, %s\n", d->world, d->ngrids,
          d->ngrids == 1 ? "" : "s", d->mode);
  fprintf(out, "language  %s (embedding groups)\n", d->grid[d->language].name);
}

static void text_grid_head(FILE *out, const struct desc_grid *grid) {
  int off = grid->offset, size = grid->size;
  fprintf(out, "\ngrid %s: ranks [%d,%d), %d rank%s\n", grid->name, off,
          off + size, size, size == 1 ? "" : "s");
  for (int v = 0; v < grid->nviews; v++) {
    const struct desc_view *view = &grid->view[v];
    struct tw t;
    tw_line(&t, out, 2, 11);
    tw_printf(&t, "%-8s", view->name);
    for (int k = 0; k < view->ndims; k++)
      tw_printf(&t, " %s=%d%s", view->dim[k].name, view->dim[k].size,
                view->dim[k].shared ? " (shared)" : "");
    tw_newline(&t);
  }
}

/* rank = OFFSET + d0 + S1*d1 + ...: how a view numbers the grid's ranks
 * (dims of size 1 are always 0 and left out). */
static void text_rank_formula(FILE *out, const struct desc_grid *grid) {
  for (int v = 0; v < grid->nviews; v++) {
    const struct desc_view *view = &grid->view[v];
    struct tw t;
    tw_line(&t, out, 2, 6);
    tw_printf(&t, "%s: rank =", v ? view->name : "ranks");
    int terms = 0;
    if (grid->offset || view->ndims == 0)
      tw_printf(&t, " %d", grid->offset), terms++;
    for (int k = 0; k < view->ndims; k++) {
      if (view->dim[k].size == 1)
        continue;
      if (view->dim[k].stride == 1)
        tw_printf(&t, "%s %s", terms ? " +" : "", view->dim[k].name);
      else
        tw_printf(&t, "%s %d*%s", terms ? " +" : "", view->dim[k].stride,
                  view->dim[k].name);
      terms++;
    }
    if (!terms)
      tw_put(&t, " 0");
    tw_newline(&t);
  }
}

static int digits(long long v) {
  int n = 1;
  while (v >= 10)
    v /= 10, n++;
  return n;
}

static const char *stage_name(const struct desc_rank_grid *rg) {
  return rg->first_stage && rg->last_stage ? "first+last"
         : rg->first_stage                 ? "first"
         : rg->last_stage                  ? "last"
                                           : "middle";
}

/* Width of a dim's column and of a view's part of a table row. */
static int dim_width(const struct desc_dim *dim) {
  int w = (int)strlen(dim->name), n = digits(dim->size - 1);
  return n > w ? n : w;
}

static int view_width(const struct desc_view *view, int v) {
  int w = 2 + (v ? (int)strlen(view->name) + 2 : 0);
  for (int k = 0; k < view->ndims; k++)
    w += 1 + dim_width(&view->dim[k]);
  return w;
}

/* A table of views [v0, v1) of grid g, and the stage when last. */
static void text_table(FILE *out, const struct desc *d, int g, int v0, int v1,
                       int last, int full, struct desc_rank *r) {
  const struct desc_grid *grid = &d->grid[g];
  int wr = digits(grid->offset + grid->size - 1);
  wr = wr < 4 ? 4 : wr;
  fprintf(out, "    %*s ", wr, "rank");
  for (int v = v0; v < v1; v++) {
    fputs("|", out);
    if (v)
      fprintf(out, " %s:", grid->view[v].name);
    for (int k = 0; k < grid->view[v].ndims; k++)
      fprintf(out, " %*s", dim_width(&grid->view[v].dim[k]),
              grid->view[v].dim[k].name);
    fputs(" ", out);
  }
  fputs(last ? "| stage\n" : "|\n", out);
  int ends = full || grid->size <= TEXT_RANKS ? grid->size : TEXT_ENDS;
  for (int i = 0; i < grid->size; i++) {
    if (i == ends && i < grid->size - ends) {
      fprintf(out, "    (%d ranks more; --full lists them all)\n",
              grid->size - 2 * ends);
      i = grid->size - ends;
    }
    int rank = grid->offset + i;
    describe_rank(d, rank, DESC_PLACE, r);
    fprintf(out, "    %*d ", wr, rank);
    for (int v = v0; v < v1; v++) {
      const struct desc_view *view = &grid->view[v];
      fputs("|", out);
      if (v)
        fprintf(out, " %*s", (int)strlen(view->name) + 1, "");
      for (int k = 0; k < view->ndims; k++)
        fprintf(out, " %*d", dim_width(&view->dim[k]), r->grid[g].coords[v][k]);
      fputs(" ", out);
    }
    if (last)
      fprintf(out, "| %s\n", stage_name(&r->grid[g]));
    else
      fputs("|\n", out);
  }
}

/* The ranks of grid g and their coordinates: views side by side while
 * they fit the width, else in several tables. */
static void text_rank_table(FILE *out, const struct desc *d, int g, int full,
                            struct desc_rank *r) {
  const struct desc_grid *grid = &d->grid[g];
  int wr = digits(grid->offset + grid->size - 1);
  int fixed = 4 + (wr < 4 ? 4 : wr) + 1 + (int)sizeof "| first+last" - 1;
  for (int v0 = 0; v0 < grid->nviews;) {
    int v1 = v0 + 1, w = fixed + view_width(&grid->view[v0], v0);
    while (v1 < grid->nviews &&
           w + view_width(&grid->view[v1], v1) <= TEXT_WIDTH)
      w += view_width(&grid->view[v1], v1), v1++;
    if (v0)
      fputc('\n', out);
    text_table(out, d, g, v0, v1, v1 == grid->nviews, full, r);
    v0 = v1;
  }
}

/* Widths of the name and key columns of a grid's provided fields. */
static void field_widths(const struct desc_grid *grid, int *wn, int *wk) {
  *wn = 8;
  *wk = 0;
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    const struct desc_field *field = &grid->field[f];
    int n = (int)strlen(field->name), k = (int)strlen(field->key);
    if (!field->provided)
      continue;
    *wn = n > *wn ? n : *wn;
    *wk = k > *wk ? k : *wk;
  }
}

/* Starts the line of a field (or an embedding kind): name, then key. */
static void field_head(struct tw *t, FILE *out, int wn, const char *name,
                       int wk, const char *key) {
  tw_line(t, out, 4, 8);
  tw_printf(t, "%-*s %-*s ", wn, name, wk, key);
  /* Wrapped groups line up under the first when that leaves room. */
  t->indent = t->col <= 48 ? t->col : 8;
}

static void text_not_provided(FILE *out, const struct desc_grid *grid) {
  struct tw t;
  int n = 0;
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    if (grid->field[f].provided)
      continue;
    if (!n++) {
      tw_line(&t, out, 4, 18);
      tw_put(&t, "not provided:");
    }
    tw_printf(&t, " %s", grid->field[f].name);
  }
  if (n)
    tw_newline(&t);
}

static void text_field(FILE *out, const struct desc *d, int g, int f,
                       const struct desc_rank *r, int full) {
  const struct desc_field *field = &d->grid[g].field[f];
  int wn, wk;
  struct tw t;
  field_widths(&d->grid[g], &wn, &wk);
  field_head(&t, out, wn, field->name, wk, field->key);
  if (field->same_as)
    tw_printf(&t, "(same group as %s) ", field->same_as);
  if (r) {
    const struct desc_rank_group *rg = &r->grid[g].group[f];
    put_ranks(&t, &rg->ranks, "");
    tw_printf(&t, "  index %d of %d", rg->index, rg->ranks.size);
    tw_newline(&t);
    return;
  }
  int shown = full ? field->ngroups : TEXT_GROUPS;
  tw_put(&t, "[");
  for (int o = 0; o < field->ngroups && o < shown; o++) {
    struct desc_ranks s;
    describe_group_at(d, g, f, o, &s);
    put_ranks(&t, &s, o + 1 < field->ngroups && o + 1 < shown ? "," : "]");
  }
  if (field->ngroups > shown)
    tw_printf(&t, " +%d more (%d groups of %d)", field->ngroups - shown,
              field->ngroups, field->size);
  tw_newline(&t);
}

static void text_groups(FILE *out, const struct desc *d, int g,
                        const struct desc_rank *r, int full) {
  for (int f = 0; f < HCG_FIELD_COUNT; f++)
    if (d->grid[g].field[f].provided)
      text_field(out, d, g, f, r, full);
  text_not_provided(out, &d->grid[g]);
}

static void text_embedding(FILE *out, const struct desc *d,
                           const struct desc_rank *r, int full) {
  int wn, wk;
  field_widths(&d->grid[d->language], &wn, &wk);
  for (int k = 0; k < DESC_EMBEDDINGS; k++) {
    struct tw t;
    int m[2], n;
    field_head(&t, out, wn, embedding_names[k], wk, "");
    if (r) {
      const int *e = r->embedding[k];
      if (!r->embedding_ok[k])
        tw_put(&t, "none (not a first or last pipeline stage)");
      else if (r->embedding_n[k] == 2)
        tw_printf(&t, "[%d,%d]", e[0], e[1]);
      else
        tw_printf(&t, "[%d]", e[0]);
      tw_newline(&t);
      continue;
    }
    int shown = full ? d->nembedding : TEXT_GROUPS;
    tw_put(&t, "[");
    for (int o = 0; o < d->nembedding && o < shown; o++) {
      const char *sep = o + 1 < d->nembedding && o + 1 < shown ? "," : "]";
      describe_embedding_at(d, k, o, m, &n);
      if (n == 2)
        tw_printf(&t, "[%d,%d]%s", m[0], m[1], sep);
      else
        tw_printf(&t, "[%d]%s", m[0], sep);
    }
    if (!d->nembedding)
      tw_put(&t, "]");
    if (d->nembedding > shown)
      tw_printf(&t, " +%d more", d->nembedding - shown);
    tw_newline(&t);
  }
}

static void text_bridge_groups(struct tw *t, const struct desc *d, int k,
                               const struct desc_rank *r, int full) {
  const struct desc_bridge *b = &d->bridge[k];
  tw_put(t, "gather groups: ");
  if (r) {
    if (r->bridge_ok[k])
      put_ranks(t, &r->bridge_group[k], "");
    else
      tw_put(t, "none");
    return;
  }
  int shown = full ? b->ngroups : TEXT_GROUPS;
  tw_put(t, "[");
  for (int o = 0; o < b->ngroups && o < shown; o++) {
    struct desc_ranks s;
    describe_bridge_group_at(d, k, o, &s);
    put_ranks(t, &s, o + 1 < b->ngroups && o + 1 < shown ? "," : "]");
  }
  if (!b->ngroups)
    tw_put(t, "]");
  if (b->ngroups > shown)
    tw_printf(t, " +%d more", b->ngroups - shown);
}

static void text_bridge_leaders(struct tw *t, const struct desc *d, int k,
                                int full) {
  const struct desc_bridge *b = &d->bridge[k];
  int shown = full ? b->src_lanes : TEXT_GROUPS;
  tw_put(t, "leaders (src -> dest):");
  for (int lane = 0; lane < b->src_lanes && lane < shown; lane++) {
    char buf[256];
    int first, count, n;
    describe_bridge_targets(d, k, lane, &first, &count);
    n = snprintf(buf, sizeof buf, " %d->[",
                 describe_bridge_src_leader(d, k, lane));
    for (int i = first; i < first + count && n < 200; i++)
      n += snprintf(buf + n, sizeof buf - (size_t)n, i > first ? ",%d" : "%d",
                    describe_bridge_dest_leader(d, k, i));
    snprintf(buf + n, sizeof buf - (size_t)n, "]");
    tw_put(t, buf);
  }
  if (b->src_lanes > shown)
    tw_printf(t, " +%d more", b->src_lanes - shown);
}

static void text_bridge(FILE *out, const struct desc *d, int k,
                        const struct desc_rank *r, int full) {
  const struct desc_bridge *b = &d->bridge[k];
  struct tw t;
  tw_line(&t, out, 2, 4);
  tw_printf(&t, "%s -> %s: ", b->src_name, b->dest_name);
  if (!b->ok) {
    tw_put(&t, "no bridge: ");
    tw_text(&t, b->error);
    tw_newline(&t);
    return;
  }
  tw_printf(&t, "%s, %s, scale %d",
            b->colocated ? "colocated" : "non-colocated", b->kind, b->scale);
  if (b->colocated && b->dest_cp > 1)
    tw_printf(&t, "; dest cp=%d: backward all-reduces over dest cp first",
              b->dest_cp);
  tw_newline(&t);
  tw_line(&t, out, 4, 6);
  if (b->colocated && b->fan_in) {
    tw_put(&t, "forward all-gathers the batch in each group, backward narrows");
    tw_newline(&t);
    tw_line(&t, out, 4, 6);
  } else if (b->colocated && b->fan_out) {
    tw_put(&t, "forward narrows the batch, backward all-gathers in each group");
    tw_newline(&t);
    tw_line(&t, out, 4, 6);
  }
  if (b->colocated)
    text_bridge_groups(&t, d, k, r, full);
  else
    text_bridge_leaders(&t, d, k, full);
  tw_newline(&t);
}

static void text_bridges(FILE *out, const struct desc *d,
                         const struct desc_rank *r, int full) {
  if (d->ngrids < 2)
    return;
  fputs("\nbridges\n", out);
  for (int k = 0; k < d->nbridges; k++)
    text_bridge(out, d, k, r, full);
}

/* ---- one rank ------------------------------------------------------------ */

static void print_env_line(void *arg, const char *name, const char *value,
                           int scope) {
  struct tw t;
  (void)scope;
  tw_line(&t, arg, 4, 6);
  tw_printf(&t, "%s=", name);
  tw_text(&t, value);
  tw_newline(&t);
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
      struct tw t;
      tw_line(&t, out, 2, 6);
      tw_printf(&t, "%s coordinates:", grid->view[v].name);
      for (int k = 0; k < grid->view[v].ndims; k++)
        tw_printf(&t, " %s=%d", grid->view[v].dim[k].name, rg->coords[v][k]);
      tw_newline(&t);
    }
    fprintf(out, "  pipeline stage: %s\n", stage_name(rg));
    fputs("  process groups:\n", out);
    text_groups(out, d, g, r, 0);
    if (grid->language) {
      fputs("  embedding groups:\n", out);
      text_embedding(out, d, r, 0);
    }
  }
  text_bridges(out, d, r, 0);
  fputs("\nenvironment\n", out);
  describe_env(d, r->rank, print_env_line, out);
}

/* ---- the whole world ----------------------------------------------------- */

static void explain_text_world(FILE *out, const struct desc *d, int full,
                               struct desc_rank *r) {
  text_header(out, d);
  for (int g = 0; g < d->ngrids; g++) {
    text_grid_head(out, &d->grid[g]);
    fputc('\n', out);
    text_rank_formula(out, &d->grid[g]);
    text_rank_table(out, d, g, full, r);
    fputs("\n  process groups:\n", out);
    text_groups(out, d, g, NULL, full);
    if (d->grid[g].language) {
      fputs("\n  embedding groups:\n", out);
      text_embedding(out, d, NULL, full);
    }
  }
  text_bridges(out, d, NULL, full);
}

/* ---- placement ----------------------------------------------------------- */

static const char *const distribution_names[] = {"block", "cyclic", "plane"};

static void text_checks(FILE *out, const struct desc *d,
                        const struct desc_check *c, int n, const char *level) {
  for (int i = 0; i < n; i++, c++) {
    const hcg_placement_verdict *v = &c->example;
    const struct desc_grid *g = &d->grid[v->grid];
    struct tw t;
    tw_line(&t, out, 2, 6);
    tw_printf(&t, "%s%s%s:%s ", g->name, v->view ? "/" : "",
              v->view ? g->view[v->view].name : "",
              g->view[v->view].dim[v->dim].name);
    if (!c->crossing)
      tw_printf(&t, "every group inside a %s (%d groups)", level, c->groups);
    else {
      tw_printf(&t, "%d of %d groups cross %ss; ", c->crossing, c->groups,
                level);
      tw_text(&t, c->message);
    }
    tw_newline(&t);
  }
}

static void text_placement(FILE *out, const struct desc *d, int rank) {
  const struct desc_placement *pl = &d->placement;
  if (!pl->set)
    return;
  fprintf(out, "\nplacement: %d nodes, distribution %s", pl->p.nodes,
          distribution_names[pl->p.distribution]);
  if (pl->p.distribution == HCG_DIST_PLANE)
    fprintf(out, "=%d", pl->p.plane);
  if (pl->p.tasks_per_node)
    fprintf(out, ", %d tasks per node", pl->p.tasks_per_node);
  if (pl->domain_size)
    fprintf(out, ", %d domain%s of %d nodes", pl->ndomains,
            pl->ndomains == 1 ? "" : "s", pl->domain_size);
  fputc('\n', out);
  if (rank >= 0 && pl->domain_size)
    fprintf(out, "  rank %d is on node %d, domain %d\n", rank,
            describe_node(d, rank), describe_domain(d, rank));
  else if (rank >= 0)
    fprintf(out, "  rank %d is on node %d\n", rank, describe_node(d, rank));
  if (!pl->nchecks && !pl->ndomain_checks)
    fputs("  no dim of the layout is on the intra-node list\n", out);
  text_checks(out, d, pl->check, pl->nchecks, "node");
  text_checks(out, d, pl->domain_check, pl->ndomain_checks, "domain");
  if (pl->domain_size && pl->suggestion[0]) {
    struct tw t;
    tw_line(&t, out, 2, 6);
    tw_printf(&t, "%s", pl->suggested > 0 ? "suggestion: " : "");
    tw_text(&t, pl->suggestion);
    tw_newline(&t);
  }
}

int explain_text(FILE *out, const struct desc *d,
                 const struct explain_opts *opts, struct desc_rank *r) {
  if (opts->rank >= 0) {
    describe_rank(d, opts->rank, DESC_GROUPS, r);
    explain_text_rank(out, d, r);
  } else {
    explain_text_world(out, d, opts->full, r);
  }
  text_placement(out, d, opts->rank);
  return 0;
}
