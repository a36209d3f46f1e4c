/*
 * internal.h - the core's private data model.
 *
 * A layout is a fixed-capacity tree (grids -> views -> dims) so that every
 * bound is structural and no error path has partial allocations to undo: the
 * only heap objects are the layout itself and its canonical text.
 */
#ifndef HCG_CORE_INTERNAL_H
#define HCG_CORE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "contract.h" /* the env names and config structs libhcg uses */
#include "fail.h"
#include "hcg.h"

#define HCG_NAME_BUF (HCG_MAX_NAME + 1)

/* Where a token sits in the source text, for carets in error messages. */
typedef size_t hcg_pos;

struct hcg_dim {
  char name[HCG_NAME_BUF];
  int size;         /* resolved size (0 until a '*' or shared dim resolves) */
  int stride;       /* product of the sizes of the dims before it           */
  int infer;        /* written as '*'                                        */
  int shared;       /* view dim written bare: shared with the base           */
  int base_dim;     /* for a shared dim: its index in the base view          */
  hcg_pos pos;      /* the dim's name                                        */
  hcg_pos size_pos; /* its size token (or the name, for shared dims)        */
};

struct hcg_view {
  char name[HCG_NAME_BUF]; /* "base" for view 0 */
  int ndims;
  struct hcg_dim dims[HCG_MAX_DIMS];
  hcg_pos pos; /* start of the item that defined it */
};

struct hcg_grid {
  char name[HCG_NAME_BUF];
  int offset;
  int size;
  int explicit_offset; /* written with '@' */
  int nviews;          /* base included */
  struct hcg_view views[1 + HCG_MAX_VIEWS];
  hcg_pos pos;        /* start of the grid's item */
  hcg_pos offset_pos; /* the '@' offset, or pos   */
};

struct hcg_layout {
  int world;
  int ngrids;
  int language; /* grid index */
  int mode;     /* enum hcg_mode */
  char *text;   /* canonical text, owned */
  struct hcg_grid grids[HCG_MAX_GRIDS];
};

/* The source being parsed, for positions in messages. */
struct hcg_source {
  const char *text;
  size_t len;
  const char *name; /* file name for @PATH layouts, or NULL */
};

/* ---- error.c / text.c -------------------------------------------------- */

/* Same, for a place in the source: prefixes "layout: [line L, ]column C: "
 * and appends the offending line and a caret. */
int hcg__fail_at(hcg_error *err, int code, const struct hcg_source *src,
                 hcg_pos pos, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Same, for a place in one line of text that is not a layout (Megatron's
 * arguments): "SUBJECT: column C: " and the line with a caret. */
int hcg__fail_col(hcg_error *err, int code, const char *subject,
                  const char *text, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* A bounded string builder that never overflows and remembers truncation. */
struct hcg_buf {
  char *p;
  size_t cap;
  size_t len; /* would-be length, may exceed cap-1 when truncated */
};
void hcg__buf_init(struct hcg_buf *b, char *p, size_t cap);
void hcg__buf_printf(struct hcg_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void hcg__buf_puts(struct hcg_buf *b, const char *s);
int hcg__buf_truncated(const struct hcg_buf *b);

/* Appends "[[a,b],[c,d],...]" for a request's enumeration, abbreviated with
 * "..." past a few groups and members (for messages). */
void hcg__buf_enum(struct hcg_buf *b, const struct hcg_layout *L,
                   const hcg_request *req);

/* ---- layout.c ---------------------------------------------------------- */
/* A caller's layout config (NULL: defaults) as this library's struct. */
int hcg__layout_config(const hcg_layout_config *cfg, hcg_layout_config *out,
                       hcg_error *err);
/* hcg_layout_parse for a named source (file layouts name the file), with a
 * config read by hcg__layout_config. */
int hcg__layout_parse_source(const struct hcg_source *src,
                             const hcg_layout_config *cfg, hcg_layout **out,
                             hcg_error *err);

/* ---- parse.c / resolve.c / validate.c / print.c ----------------------- */

/* Syntax: fills grids, views and dims with positions; sizes may be '*'. */
int hcg__parse(struct hcg_layout *L, const struct hcg_source *src,
               hcg_error *err);
/* Environment names that would collide once upper-cased. */
int hcg__check_names(const struct hcg_layout *L, const struct hcg_source *src,
                     hcg_error *err);
/* No dim of v named twice (kind/label name v in the message). */
int hcg__check_dims(const struct hcg_view *v, const char *kind,
                    const char *label, const struct hcg_source *src,
                    hcg_error *err);
/* Resolves a '*' in v so that its dims multiply to span. */
int hcg__infer(struct hcg_view *v, long long span, const char *kind,
               const char *label, const struct hcg_source *src, hcg_error *err);
/* Grid checks, offsets and '*' in grids, against L->world (0: derive). */
int hcg__resolve_grids(struct hcg_layout *L, const struct hcg_source *src,
                       hcg_error *err);
/* View checks in Megatron's order, spans, language module, env names. */
int hcg__validate(struct hcg_layout *L, const struct hcg_source *src,
                  const char *language, hcg_error *err);
/* Builds L->text. */
int hcg__print_canonical(struct hcg_layout *L, hcg_error *err);
/* The canonical text with dim `from` of grid g's view v moved to position
 * `to`, the other dims keeping their order (g < 0: no move). */
void hcg__print_moved(struct hcg_buf *b, const struct hcg_layout *L, int g,
                      int v, int from, int to);
/* Grid g's view v as one item a user would write: "tp=2,dp=4" for the
 * one grid named world, "llm:..." or "llm@8:..." for a grid, "llm/expert:..."
 * for a view. */
void hcg__print_item(struct hcg_buf *b, const struct hcg_layout *L, int g,
                     int v);

/* ---- grid.c ------------------------------------------------------------ */

/* Strides of a view from its sizes; returns 0, or -1 on overflow. */
int hcg__compute_strides(struct hcg_view *v);
const struct hcg_view *hcg__view(const struct hcg_layout *L, int grid,
                                 int view);
int hcg__valid_grid(const struct hcg_layout *L, int grid);
int hcg__valid_view(const struct hcg_layout *L, int grid, int view);
/* Index of a dim by name in a view, or -1. */
int hcg__find_dim(const struct hcg_view *v, const char *name);
/* Canonicalizes a mask: all-shared view requests become base requests. */
void hcg__resolve_request(const struct hcg_layout *L, hcg_request *req);

/* ---- names ------------------------------------------------------------- */
static inline int hcg__is_name_start(int c) { return c >= 'a' && c <= 'z'; }
static inline int hcg__is_name_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

#endif /* HCG_CORE_INTERNAL_H */
