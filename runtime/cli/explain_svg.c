/*
 * explain_svg.c - `hcg explain --format svg`: a picture of a description
 * (describe.h), one plain SVG file with no external assets. Each node is a
 * box holding its ranks (one box, "ranks", without --nodes); under each
 * rank, every grid (module) holding it is a coloured band, labelled with
 * the rank's pipeline stage; consecutive ranks of one tp group share an
 * outlined box on the band. With --rank R, R is outlined in red, and the
 * members of R's groups are tinted: its tp group strongly, the others
 * lightly. With --domain-size, each domain is a frame around its nodes,
 * and each group of a domain-list dim that crosses domains marks its
 * members with a dot of its own colour. Like the other printers it asks
 * the core nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "describe.h"

enum {
  SVG_MAX_RANKS = 4096, /* a picture of more ranks is not readable */
  ROW_CELLS = 16,       /* ranks per row inside a node box */
  CELL_W = 46,
  CELL_H = 26,
  BAND_H = 16,
  GAP = 6,
  LABEL_W = 84, /* the node's name on the left */
  PAD = 12,
  HEAD_H = 54,   /* title and legend */
  DOMAIN_W = 22, /* the domain's frame and name, left of its nodes */
  DOTS = 3,      /* crossing groups marked on one rank */
  DOT_R = 4,
};

static const char *const palette[] = {"#4e79a7", "#f28e2b", "#59a14f",
                                      "#b07aa1", "#76b7b2", "#edc948",
                                      "#e15759", "#9c755f"};
#define NCOLORS (sizeof palette / sizeof *palette)

/* One colour per group crossing domains (cycled). */
static const char *const cross_palette[] = {"#9467bd", "#17becf", "#e377c2",
                                            "#bcbd22", "#8c564b", "#1f77b4",
                                            "#ff7f0e", "#7f7f7f"};
#define NCROSS (sizeof cross_palette / sizeof *cross_palette)

static void put_escaped(FILE *out, const char *s) {
  for (; *s; s++) {
    if (*s == '&')
      fputs("&amp;", out);
    else if (*s == '<')
      fputs("&lt;", out);
    else if (*s == '>')
      fputs("&gt;", out);
    else if (*s == '"')
      fputs("&quot;", out);
    else
      fputc(*s, out);
  }
}

static int find_dim(const struct desc_view *v, const char *name) {
  for (int k = 0; k < v->ndims; k++)
    if (!strcmp(v->dim[k].name, name))
      return k;
  return -1;
}

/* What a rank's cell shows, from describe_rank. */
struct cell {
  int node, x, y;
  int tp_first[HCG_MAX_GRIDS]; /* first member of its tp group, or -1 */
  int stage[HCG_MAX_GRIDS];    /* pp coordinate, -1: none, -2: not in grid */
  char mark;                   /* 2: in R's tp group, 1: another group of R */
  unsigned cross;              /* bit g: this rank's tp group of grid g,
                                  when it is the group's first, has a
                                  member on another node */
  int ndots;                   /* groups crossing domains holding it */
  int dot[DOTS];               /* their colours (cross_palette) */
  int dot_group[DOTS];         /* and their first members */
};

/* Marks the members of each group crossing domains (describe.h). */
struct dotting {
  struct cell *cells;
  int world, next;
};

static void dot_group(void *arg, const int *members, int n) {
  struct dotting *t = arg;
  int color = t->next++ % (int)NCROSS;
  for (int i = 0; i < n; i++) {
    if (members[i] < 0 || members[i] >= t->world)
      continue;
    struct cell *c = &t->cells[members[i]];
    if (c->ndots < DOTS) {
      c->dot[c->ndots] = color;
      c->dot_group[c->ndots++] = members[0];
    }
  }
}

static void fill_cell(const struct desc *d, const struct desc_rank *r,
                      struct cell *c) {
  for (int g = 0; g < d->ngrids; g++) {
    const struct desc_view *base = &d->grid[g].view[0];
    c->tp_first[g] = -1;
    c->stage[g] = -2;
    if (!r->grid[g].member)
      continue;
    int tp = find_dim(base, "tp"), pp = find_dim(base, "pp");
    c->stage[g] = pp >= 0 ? r->grid[g].coords[0][pp] : -1;
    if (tp >= 0)
      c->tp_first[g] =
          r->rank - r->grid[g].coords[0][tp] * base->dim[tp].stride;
  }
}

/* Tints the members of rank R's groups. */
static void mark_groups(const struct desc *d, struct desc_rank *r, int R,
                        struct cell *cells) {
  describe_rank(d, R, DESC_GROUPS, r);
  int tp = hcg_field_find("tp");
  for (int g = 0; g < d->ngrids; g++)
    for (int f = 0; r->grid[g].member && f < HCG_FIELD_COUNT; f++) {
      const struct desc_rank_group *rg = &r->grid[g].group[f];
      if (!rg->provided || !rg->ranks.listed || rg->ranks.size > d->world)
        continue;
      for (int i = 0; i < rg->ranks.size; i++) {
        int m = desc_member(&rg->ranks, i);
        char want = f == tp ? 2 : 1;
        if (m >= 0 && m < d->world && cells[m].mark < want)
          cells[m].mark = want;
      }
    }
}

static void svg_cell(FILE *out, const struct desc *d, const struct cell *cells,
                     int rank, int highlight) {
  const struct cell *c = &cells[rank];
  const char *fill = c->mark == 2   ? "#ffd54f"
                     : c->mark == 1 ? "#fff3c4"
                                    : "#ffffff";
  fprintf(out, "<g><title>rank %d", rank);
  if (c->node >= 0)
    fprintf(out, ", node %d", c->node);
  fputs("</title>", out);
  fprintf(out,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
          "stroke=\"%s\" stroke-width=\"%d\"/>",
          c->x, c->y, CELL_W - 4, CELL_H, fill,
          rank == highlight ? "#d62728" : "#555555", rank == highlight ? 3 : 1);
  fprintf(out,
          "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">%d"
          "</text>",
          c->x + (CELL_W - 4) / 2, c->y + CELL_H - 8, rank);
  for (int g = 0; g < d->ngrids; g++) {
    if (c->stage[g] == -2)
      continue;
    int y = c->y + CELL_H + 2 + g * BAND_H;
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\" "
            "opacity=\"0.85\"/>",
            c->x - 2, y, CELL_W, BAND_H - 2, palette[g % NCOLORS]);
    if (c->stage[g] >= 0)
      fprintf(out,
              "<text x=\"%d\" y=\"%d\" font-size=\"10\" fill=\"#ffffff\" "
              "text-anchor=\"middle\">pp%d</text>",
              c->x + (CELL_W - 4) / 2, y + BAND_H - 5, c->stage[g]);
  }
  fputs("</g>\n", out);
  for (int k = 0; k < c->ndots; k++)
    fprintf(out,
            "<circle cx=\"%d\" cy=\"%d\" r=\"%d\" fill=\"%s\"><title>rank "
            "%d: its group of first member %d crosses domains</title>"
            "</circle>\n",
            c->x + CELL_W - 8 - k * (2 * DOT_R + 1), c->y + DOT_R + 2, DOT_R,
            cross_palette[c->dot[k]], rank, c->dot_group[k]);
}

/* One outlined box per stretch of consecutive cells of a row that share a
 * tp group in grid g. */
static void svg_tp_boxes(FILE *out, const struct desc *d,
                         const struct cell *cells, const int *order, int n) {
  for (int g = 0; g < d->ngrids; g++)
    for (int i = 0; i < n;) {
      const struct cell *a = &cells[order[i]];
      int j = i + 1;
      while (j < n && a->tp_first[g] >= 0 &&
             cells[order[j]].tp_first[g] == a->tp_first[g] &&
             cells[order[j]].y == a->y)
        j++;
      if (a->tp_first[g] >= 0) {
        const struct cell *b = &cells[order[j - 1]];
        int cross = (cells[a->tp_first[g]].cross >> g) & 1;
        fprintf(out,
                "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
                "fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
                "rx=\"3\"><title>%s tp group of rank %d%s</title></rect>\n",
                a->x - 3, a->y + CELL_H + 1 + g * BAND_H,
                b->x - a->x + CELL_W + 2, BAND_H, cross ? "#d62728" : "#222222",
                cross ? " stroke-dasharray=\"5 3\"" : "", d->grid[g].name,
                a->tp_first[g], cross ? ", across nodes" : "");
      }
      i = j;
    }
}

/* The picture's frame: ranks sorted by node, and where everything goes. */
struct picture {
  struct cell *cells; /* by rank */
  int *order;         /* ranks grouped by node, ascending inside a node */
  int *count;         /* count[k]: where node k's ranks end in order */
  int nodes, bsize;   /* nodes, and nodes per domain (0: no domains) */
  int left;           /* where node boxes start */
  int cols, row_h;    /* ranks per row, and a row's height */
  int width, height;
};

/* Ranks of node k (count[k - 1] to count[k] in order) fill rows of cols. */
static int node_rows(const struct picture *pic, int k) {
  int n = pic->count[k] - (k ? pic->count[k - 1] : 0);
  return n ? (n + pic->cols - 1) / pic->cols : 1;
}

/* Sorts the ranks by node and places every cell: rows as wide as the
 * fullest node, up to ROW_CELLS ranks, domains a gap apart. */
static void lay_out(const struct desc *d, struct picture *pic) {
  int nodes = pic->nodes, *count = pic->count;
  for (int rank = 0; rank < d->world; rank++) {
    pic->cells[rank].node = d->placement.set ? describe_node(d, rank) : -1;
    count[(pic->cells[rank].node < 0 ? 0 : pic->cells[rank].node) + 1]++;
  }
  for (int k = 1; k <= nodes; k++)
    count[k] += count[k - 1];
  for (int rank = 0; rank < d->world; rank++) {
    int k = pic->cells[rank].node < 0 ? 0 : pic->cells[rank].node;
    pic->order[count[k]++] = rank; /* count[k] now ends node k */
  }
  pic->cols = 1;
  for (int k = 0, prev = 0; k < nodes; prev = count[k++])
    if (count[k] - prev > pic->cols)
      pic->cols = count[k] - prev < ROW_CELLS ? count[k] - prev : ROW_CELLS;
  pic->row_h = CELL_H + d->ngrids * BAND_H + 2 * GAP;
  int bsize = pic->bsize;
  pic->width =
      2 * PAD + (bsize ? DOMAIN_W : 0) + LABEL_W + pic->cols * CELL_W + 2 * GAP;
  if (pic->width < (bsize ? 760 : 560))
    pic->width = bsize ? 760 : 560; /* room for the title and the legend */
  int y = HEAD_H;
  for (int k = 0; k < nodes; k++) {
    int first = k ? count[k - 1] : 0, n = count[k] - first;
    for (int i = 0; i < n; i++) {
      struct cell *c = &pic->cells[pic->order[first + i]];
      c->x = pic->left + LABEL_W + (i % pic->cols) * CELL_W + GAP;
      c->y = y + GAP + (i / pic->cols) * pic->row_h;
    }
    y += node_rows(pic, k) * pic->row_h + GAP;
    if (bsize && (k + 1) % bsize == 0)
      y += GAP; /* between domains */
  }
  pic->height = y + PAD;
}

/* What each cell shows: bands and stages, tp groups across nodes, the
 * groups of --rank, the dots of groups across domains. Returns how many
 * groups got a dot. */
static int fill_cells(const struct desc *d, const struct explain_opts *opts,
                      struct desc_rank *r, struct picture *pic) {
  struct cell *cells = pic->cells;
  for (int rank = 0; rank < d->world; rank++) {
    describe_rank(d, rank, DESC_PLACE, r);
    fill_cell(d, r, &cells[rank]);
  }
  /* A tp group crosses nodes when a member is not on its first's node. */
  for (int rank = 0; rank < d->world; rank++)
    for (int g = 0; g < d->ngrids; g++) {
      int f = cells[rank].tp_first[g];
      if (f >= 0 && cells[rank].node != cells[f].node)
        cells[f].cross |= 1u << g;
    }
  if (opts->rank >= 0)
    mark_groups(d, r, opts->rank, cells);
  struct dotting dotting = {cells, d->world, 0};
  for (int i = 0; pic->bsize && i < d->placement.ndomain_checks; i++)
    if (d->placement.domain_check[i].crossing)
      describe_crossing_groups(d, i, dot_group, &dotting);
  return dotting.next;
}

/* The document's start: its title and the legend line. */
static void svg_head(FILE *out, const struct desc *d, const struct picture *pic,
                     int dotted) {
  int width = pic->width, height = pic->height;
  fprintf(out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\">\n",
          width, height, width, height);
  fputs("<title>hcg layout: ", out);
  put_escaped(out, d->text);
  fputs("</title>\n", out);
  fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", width,
          height);
  fprintf(out, "<text x=\"%d\" y=\"20\" font-size=\"14\">", PAD);
  put_escaped(out, d->text);
  fprintf(out, " (%d ranks", d->world);
  if (d->placement.set)
    fprintf(out, " on %d nodes", pic->nodes);
  if (pic->bsize)
    fprintf(out, " in %d domains of %d", d->placement.ndomains, pic->bsize);
  fputs(")</text>\n", out);
  int lx = PAD;
  for (int g = 0; g < d->ngrids; g++) {
    fprintf(out,
            "<rect x=\"%d\" y=\"30\" width=\"14\" height=\"12\" "
            "fill=\"%s\"/><text x=\"%d\" y=\"41\" font-size=\"12\">%s</text>\n",
            lx, palette[g % NCOLORS], lx + 18, d->grid[g].name);
    lx += 30 + 8 * (int)strlen(d->grid[g].name);
  }
  fprintf(out,
          "<text x=\"%d\" y=\"41\" font-size=\"12\">boxes: tp groups "
          "(red dashed: across nodes); ppN: pipeline stage%s</text>\n",
          lx + 10, dotted ? "; dots: groups across domains" : "");
}

/* The frame of the domain that starts with node k, at height y. */
static void svg_domain(FILE *out, const struct picture *pic, int k, int y) {
  int last = k + pic->bsize < pic->nodes ? k + pic->bsize : pic->nodes, h = 0;
  for (int j = k; j < last; j++)
    h += node_rows(pic, j) * pic->row_h + GAP;
  fprintf(out,
          "<g><title>domain %d: nodes %d-%d</title><rect x=\"%d\" "
          "y=\"%d\" width=\"%d\" height=\"%d\" rx=\"8\" fill=\"none\" "
          "stroke=\"#445566\" stroke-width=\"2\"/><text x=\"%d\" "
          "y=\"%d\" font-size=\"12\" transform=\"rotate(-90 %d %d)\">"
          "domain %d</text></g>\n",
          k / pic->bsize, k, last - 1, PAD, y - GAP / 2, pic->width - 2 * PAD,
          h, PAD + 15, y + h / 2 + 24, PAD + 15, y + h / 2 + 24,
          k / pic->bsize);
}

/* Every node's box with its ranks, in the domains' frames. */
static void svg_nodes(FILE *out, const struct desc *d,
                      const struct picture *pic, int mark_rank) {
  int y = HEAD_H, bsize = pic->bsize;
  for (int k = 0; k < pic->nodes; k++) {
    int at = k ? pic->count[k - 1] : 0, n = pic->count[k] - at;
    int rows = node_rows(pic, k);
    if (bsize && k % bsize == 0)
      svg_domain(out, pic, k, y);
    fprintf(out,
            "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" "
            "fill=\"#eef1f5\" stroke=\"#8899aa\"/>\n",
            pic->left, y, pic->width - PAD - pic->left - (bsize ? GAP : 0),
            rows * pic->row_h);
    if (d->placement.set)
      fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"13\">node %d</text>\n",
              pic->left + 8, y + 20, k);
    else
      fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"13\">ranks</text>\n",
              pic->left + 8, y + 20);
    for (int i = 0; i < n; i++)
      svg_cell(out, d, pic->cells, pic->order[at + i], mark_rank);
    svg_tp_boxes(out, d, pic->cells, pic->order + at, n);
    y += rows * pic->row_h + GAP;
    if (bsize && (k + 1) % bsize == 0)
      y += GAP;
  }
}

int explain_svg(FILE *out, const struct desc *d,
                const struct explain_opts *opts, struct desc_rank *r) {
  if (d->world > SVG_MAX_RANKS) {
    fprintf(stderr,
            "hcg: --format svg draws at most %d ranks; this layout has %d\n",
            SVG_MAX_RANKS, d->world);
    return EXIT_OTHER;
  }
  struct picture pic = {0};
  pic.nodes = d->placement.set ? d->placement.p.nodes : 1;
  pic.bsize = d->placement.set ? d->placement.domain_size : 0;
  pic.left = PAD + (pic.bsize ? DOMAIN_W : 0);
  pic.cells = calloc((size_t)d->world, sizeof *pic.cells);
  pic.order = malloc(sizeof *pic.order * (size_t)d->world);
  pic.count = calloc((size_t)pic.nodes + 1, sizeof *pic.count);
  if (!pic.cells || !pic.order || !pic.count) {
    free(pic.cells), free(pic.order), free(pic.count);
    fputs("hcg: out of memory\n", stderr);
    return EXIT_OTHER;
  }
  lay_out(d, &pic);
  int dotted = fill_cells(d, opts, r, &pic);
  svg_head(out, d, &pic, dotted);
  svg_nodes(out, d, &pic, opts->rank);
  fputs("</svg>\n", out);
  free(pic.cells);
  free(pic.order);
  free(pic.count);
  return 0;
}
