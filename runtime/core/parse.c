/*
 * parse.c - the layout language's syntax: its grammar (hcg__layout_grammar,
 * printed by `hcg help grammar`, the one the docs are checked against) and
 * the parser that reads it.
 *
 * A hand-written scanner over bytes: every token is checked where it starts,
 * so each error can point at its column. Nothing here knows the world size;
 * sizes written '*' and offsets left out are resolved later.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "reference.h"

/* NAME's bound is HCG_MAX_NAME (tests/cli/facts.bats tries 32 and 33
 * characters). Lines short enough for a man page's 80 columns. */
const char hcg__layout_grammar[] =
    "LAYOUT := ITEM ( SEP ITEM )*            SEP := ';' or newline\n"
    "ITEM   := [ NAME [ '@' INT ] ':' ] DIMS  a grid (module)\n"
    "        | NAME '/' NAME ':' DIMS         a view on an earlier grid\n"
    "DIMS   := DIM ( ',' DIM )*               fastest-varying first\n"
    "DIM    := NAME '=' SIZE                  the size of a dim\n"
    "        | NAME                           in a view: shared with the base\n"
    "SIZE   := positive integer | '*'         '*' inferred, once per "
    "grid/view\n"
    "INT    := non-negative integer           the grid's first rank\n"
    "NAME   := [a-z][a-z0-9_]{0,31}\n";

struct parser {
  struct hcg_layout *L;
  const struct hcg_source *src;
  hcg_error *err;
  size_t i;
  int unnamed_grid; /* index of an unnamed grid, or -1 */
};

static int peek(const struct parser *p) {
  return p->i < p->src->len ? (unsigned char)p->src->text[p->i] : -1;
}

/* Skips blanks and comments; a newline ends an item, so it is skipped only
 * when `newlines` is set (between items, and after ',' to continue a long
 * dim list on the next line). */
static void skip_space(struct parser *p, int newlines) {
  for (;;) {
    int c = peek(p);
    if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
      p->i++;
    } else if (c == '#') {
      while (p->i < p->src->len && p->src->text[p->i] != '\n')
        p->i++;
    } else {
      return;
    }
  }
}

/* The run of characters that plausibly forms one token, for quoting what was
 * found in a message ("got 'abc'"). */
static void quote_token(const struct parser *p, size_t at, char *out,
                        size_t cap) {
  size_t n = 0;
  for (size_t i = at; i < p->src->len && n + 4 < cap; i++) {
    unsigned char c = (unsigned char)p->src->text[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == ',' ||
        c == ';' || c == '#' || c == ':' || c == '=' || c == '/' || c == '@')
      break;
    out[n++] = (c >= 0x21 && c < 0x7f) ? (char)c : '?';
  }
  if (n + 4 >= cap && cap > 4) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  out[n] = '\0';
}

/* Describes the character at the cursor for "expected X, got Y" messages. */
static void describe_here(const struct parser *p, char *out, size_t cap) {
  int c = peek(p);
  struct hcg_buf b;
  hcg__buf_init(&b, out, cap);
  if (c < 0)
    hcg__buf_puts(&b, "the end of the layout");
  else if (c == '\n')
    hcg__buf_puts(&b, "a new line");
  else if (c >= 0x21 && c < 0x7f)
    hcg__buf_printf(&b, "'%c'", c);
  else
    hcg__buf_printf(&b, "byte 0x%02x", (unsigned)c);
}

static int expected(struct parser *p, const char *what) {
  char got[32];
  describe_here(p, got, sizeof got);
  return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, p->i, "expected %s, got %s",
                      what, got);
}

/* NAME := [a-z][a-z0-9_]{0,31} */
static int parse_name(struct parser *p, const char *what, char *out) {
  size_t start = p->i;
  int c = peek(p);
  if (!hcg__is_name_start(c)) {
    if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') {
      char tok[48];
      quote_token(p, start, tok, sizeof tok);
      return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, start,
                          "%s '%s' must start with a lower-case letter "
                          "(names are [a-z][a-z0-9_]*)",
                          what, tok);
    }
    char buf[40];
    snprintf(buf, sizeof buf, "a %s", what);
    return expected(p, buf);
  }
  while (hcg__is_name_char(peek(p)))
    p->i++;
  c = peek(p);
  if ((c >= 'A' && c <= 'Z') || c == '-') {
    char tok[48];
    quote_token(p, start, tok, sizeof tok);
    return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, p->i,
                        "%s '%s' may hold only lower-case letters, digits and "
                        "'_'",
                        what, tok);
  }
  size_t n = p->i - start;
  if (n > HCG_MAX_NAME) {
    char tok[48];
    quote_token(p, start, tok, sizeof tok);
    return hcg__fail_at(p->err, HCG_ELIMIT, p->src, start,
                        "%s '%s' is %zu characters long; the limit is %d", what,
                        tok, n, HCG_MAX_NAME);
  }
  memcpy(out, p->src->text + start, n);
  out[n] = '\0';
  return HCG_OK;
}

/* A decimal integer in [min, HCG_MAX_WORLD]. `what` names it in messages. */
static int parse_int(struct parser *p, long long min, const char *what,
                     int *out) {
  size_t start = p->i;
  long long v = 0;
  int digits = 0, overflow = 0;
  while (peek(p) >= '0' && peek(p) <= '9') {
    v = v * 10 + (peek(p) - '0');
    if (v > HCG_MAX_WORLD) {
      overflow = 1;
      v = HCG_MAX_WORLD + 1LL;
    }
    digits++;
    p->i++;
  }
  char tok[48];
  quote_token(p, start, tok, sizeof tok);
  int c = peek(p);
  int ends = c < 0 || c == ' ' || c == '\t' || c == '\r' || c == '\n' ||
             c == ',' || c == ';' || c == '#' || c == ':';
  if (!digits || !ends) {
    const char *kind = min > 0 ? "positive" : "non-negative";
    return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, start,
                        "%s must be a %s integer%s, got '%s'", what, kind,
                        min > 0 ? " or '*'" : "", tok);
  }
  if (overflow)
    return hcg__fail_at(p->err, HCG_ELIMIT, p->src, start,
                        "%s is %s, larger than the limit %d", what, tok,
                        HCG_MAX_WORLD);
  if (v < min)
    return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, start,
                        "%s must be a positive integer, got '%s'", what, tok);
  *out = (int)v;
  return HCG_OK;
}

static const char *item_kind(int is_view) { return is_view ? "view" : "grid"; }

/* DIMS := DIM (',' DIM)*, into view v (view 0: the grid itself). */
static int parse_dims(struct parser *p, struct hcg_grid *g, int is_view,
                      struct hcg_view *v, const char *label) {
  int infer_dim = -1;
  for (;;) {
    skip_space(p, 0);
    if (v->ndims == HCG_MAX_DIMS)
      return hcg__fail_at(p->err, HCG_ELIMIT, p->src, p->i,
                          "%s '%s' has more than %d dims", item_kind(is_view),
                          label, HCG_MAX_DIMS);
    struct hcg_dim *d = &v->dims[v->ndims];
    d->pos = p->i;
    int rc = parse_name(p, "dim name", d->name);
    if (rc)
      return rc;
    skip_space(p, 0);
    if (peek(p) == '=') {
      p->i++;
      skip_space(p, 0);
      d->size_pos = p->i;
      if (peek(p) == '*') {
        p->i++;
        if (infer_dim >= 0)
          return hcg__fail_at(
              p->err, HCG_ESYNTAX, p->src, d->size_pos,
              "%s '%s' may infer one size with '*', but both '%s' and '%s' "
              "use it",
              item_kind(is_view), label, v->dims[infer_dim].name, d->name);
        infer_dim = v->ndims;
        d->infer = 1;
      } else {
        char what[HCG_NAME_BUF + 16];
        snprintf(what, sizeof what, "size of '%s'", d->name);
        rc = parse_int(p, 1, what, &d->size);
        if (rc)
          return rc;
      }
    } else if (peek(p) >= 0 && peek(p) != ',' && peek(p) != ';' &&
               peek(p) != '\n') {
      char what[HCG_NAME_BUF + 48];
      snprintf(what, sizeof what, "'=' after dim '%s'", d->name);
      return expected(p, what);
    } else if (is_view) {
      d->shared = 1;
      d->size_pos = d->pos;
    } else {
      return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, d->pos,
                          "dim '%s' of grid '%s' needs a size: write %s=SIZE "
                          "(a bare name is a view dim shared with its grid)",
                          d->name, g->name, d->name);
    }
    v->ndims++;
    skip_space(p, 0);
    if (peek(p) != ',')
      return HCG_OK;
    p->i++;
    skip_space(p, 1);
  }
}

static int find_grid(const struct hcg_layout *L, const char *name) {
  for (int g = 0; g < L->ngrids; g++)
    if (strcmp(L->grids[g].name, name) == 0)
      return g;
  return -1;
}

static int add_grid(struct parser *p, const char *name, hcg_pos pos,
                    struct hcg_grid **out) {
  struct hcg_layout *L = p->L;
  if (p->unnamed_grid >= 0 || (!name[0] && L->ngrids > 0))
    return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, pos,
                        "a layout with several grids must name each one "
                        "(NAME:DIMS); an unnamed grid must be the only grid");
  if (L->ngrids == HCG_MAX_GRIDS)
    return hcg__fail_at(p->err, HCG_ELIMIT, p->src, pos,
                        "a layout may have at most %d grids", HCG_MAX_GRIDS);
  int prev = name[0] ? find_grid(L, name) : -1;
  if (prev >= 0)
    return hcg__fail_at(p->err, HCG_ELAYOUT, p->src, pos,
                        "grid '%s' is defined twice", name);
  struct hcg_grid *g = &L->grids[L->ngrids];
  if (!name[0]) {
    p->unnamed_grid = L->ngrids;
    strcpy(g->name, "world");
  } else {
    strcpy(g->name, name);
  }
  g->pos = pos;
  g->offset_pos = pos;
  g->nviews = 1;
  strcpy(g->views[0].name, "base");
  g->views[0].pos = pos;
  L->ngrids++;
  *out = g;
  return HCG_OK;
}

/* "NAME/VIEW: DIMS" after NAME (at start): a view on an earlier grid. */
static int parse_view(struct parser *p, const char *name, hcg_pos start) {
  p->i++; /* the '/' */
  skip_space(p, 0);
  hcg_pos vpos = p->i;
  char vname[HCG_NAME_BUF];
  int rc = parse_name(p, "view name", vname);
  if (rc)
    return rc;
  skip_space(p, 0);
  if (peek(p) == '@')
    return hcg__fail_at(p->err, HCG_ESYNTAX, p->src, p->i,
                        "view '%s/%s' cannot have an offset: a view spans "
                        "the ranks of its grid",
                        name, vname);
  if (peek(p) != ':')
    return expected(p, "':' before the view's dims");
  p->i++;
  int gi = find_grid(p->L, name);
  if (gi < 0)
    return hcg__fail_at(p->err, HCG_ELAYOUT, p->src, start,
                        "view '%s/%s' is on grid '%s', which is not defined "
                        "before it",
                        name, vname, name);
  struct hcg_grid *g = &p->L->grids[gi];
  /* Megatron's first view check: the name is unused ("base" is taken). */
  for (int v = 0; v < g->nviews; v++)
    if (strcmp(g->views[v].name, vname) == 0)
      return hcg__fail_at(p->err, HCG_ELAYOUT, p->src, vpos,
                          v == 0 ? "view name 'base' is reserved for the "
                                   "grid's own dims of grid '%s'"
                                 : "grid '%s' already has a view named '%s'",
                          name, vname);
  if (g->nviews == 1 + HCG_MAX_VIEWS)
    return hcg__fail_at(p->err, HCG_ELIMIT, p->src, start,
                        "grid '%s' may have at most %d views", name,
                        HCG_MAX_VIEWS);
  struct hcg_view *v = &g->views[g->nviews];
  strcpy(v->name, vname);
  v->pos = start;
  char label[2 * HCG_NAME_BUF + 1];
  snprintf(label, sizeof label, "%s/%s", name, vname);
  if ((rc = parse_dims(p, g, 1, v, label)))
    return rc;
  g->nviews++;
  return HCG_OK;
}

/* "NAME[@OFFSET]: DIMS" after NAME (at start): a named grid. */
static int parse_named_grid(struct parser *p, const char *name, hcg_pos start) {
  struct hcg_grid *g;
  int rc = add_grid(p, name, start, &g);
  if (rc)
    return rc;
  if (peek(p) == '@') {
    p->i++;
    skip_space(p, 0);
    g->offset_pos = p->i;
    char what[HCG_NAME_BUF + 24];
    snprintf(what, sizeof what, "offset of grid '%s'", name);
    if ((rc = parse_int(p, 0, what, &g->offset)))
      return rc;
    g->explicit_offset = 1;
    skip_space(p, 0);
    if (peek(p) != ':')
      return expected(p, "':' after the grid's offset");
  }
  p->i++; /* the ':' */
  return parse_dims(p, g, 0, &g->views[0], g->name);
}

/* ITEM := [NAME ['@' INT] ':'] DIMS | NAME '/' NAME ':' DIMS */
static int parse_item(struct parser *p) {
  hcg_pos start = p->i;
  char name[HCG_NAME_BUF];
  int rc = parse_name(p, "grid or dim name", name);
  if (rc)
    return rc;
  skip_space(p, 0);
  int c = peek(p);
  if (c == '/')
    return parse_view(p, name, start);
  if (c == '@' || c == ':')
    return parse_named_grid(p, name, start);
  /* No "NAME:" prefix: the item is the dims of the only, unnamed grid. */
  p->i = start;
  struct hcg_grid *g;
  if ((rc = add_grid(p, "", start, &g)))
    return rc;
  return parse_dims(p, g, 0, &g->views[0], g->name);
}

int hcg__parse(struct hcg_layout *L, const struct hcg_source *src,
               hcg_error *err) {
  struct parser p = {L, src, err, 0, -1};
  int items = 0;
  for (;;) {
    /* Empty items (blank lines, ';;', a trailing ';') are allowed. */
    for (;;) {
      skip_space(&p, 1);
      if (peek(&p) != ';')
        break;
      p.i++;
    }
    if (p.i >= src->len)
      break;
    int rc = parse_item(&p);
    if (rc)
      return rc;
    items++;
    skip_space(&p, 0);
    int c = peek(&p);
    if (c < 0)
      break;
    if (c == ';' || c == '\n') {
      p.i++;
      continue;
    }
    return expected(&p, "',' or the end of the item (';' or a new line)");
  }
  if (!items)
    return hcg__fail_at(err, HCG_ESYNTAX, src, 0,
                        "the layout is empty: it needs at least one grid, "
                        "such as tp=2,dp=*");
  return HCG_OK;
}

int hcg_name_valid(const char *name) {
  if (!name || !hcg__is_name_start(name[0]))
    return 0;
  size_t n = 1;
  for (; name[n]; n++)
    if (!hcg__is_name_char(name[n]) || n >= HCG_MAX_NAME)
      return 0;
  return 1;
}
