/*
 * error.c - status names and error messages, with a caret under the
 * offending column for layout errors.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

static const char *const status_text[HCG_STATUS_COUNT] = {
    [HCG_OK] = "success",
    [HCG_EINVAL] = "invalid argument",
    [HCG_ENOMEM] = "out of memory",
    [HCG_ESYNTAX] = "layout syntax error",
    [HCG_ELAYOUT] = "layout is not valid",
    [HCG_ELIMIT] = "limit exceeded",
    [HCG_ENOTFOUND] = "not found",
    [HCG_ENOTMEMBER] = "rank is not a member",
    [HCG_ENOTPROVIDED] = "group not provided by this layout",
    [HCG_EIO] = "input/output error",
    [HCG_EENV] = "environment missing or inconsistent",
    [HCG_EPMIX] = "PMIx error",
    [HCG_ETIMEOUT] = "timed out",
    [HCG_ENCCL] = "NCCL error",
    [HCG_ECUDA] = "CUDA error",
    [HCG_ENOTSUP] = "not supported by this build",
    [HCG_EEXIST] = "already exists",
    [HCG_EMISMATCH] = "mismatch",
    [HCG_ERANGE] = "out of range or buffer too small",
    [HCG_EBRIDGE] = "grids cannot be bridged",
};

const char *hcg_strerror(int code) {
  if (code < 0 || code >= HCG_STATUS_COUNT || !status_text[code])
    return "unknown hcg status";
  return status_text[code];
}

#define HCG_STR_(x) #x
#define HCG_STR(x) HCG_STR_(x)

const char *hcg_version(void) {
  return HCG_STR(HCG_VERSION_MAJOR) "." HCG_STR(HCG_VERSION_MINOR) "." HCG_STR(
      HCG_VERSION_PATCH);
}

int hcg__fail(hcg_error *err, int code, const char *fmt, ...) {
  if (!err)
    return code;
  err->code = code;
  err->line = 0;
  err->column = 0;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->message, sizeof err->message, fmt, ap);
  va_end(ap);
  return code;
}

/* Widest slice of a long line shown under a message, and how much of it
 * comes before the caret. */
enum { EXCERPT_WIDTH = 72, EXCERPT_LEAD = 40 };

/* Where pos falls in src: its line (1-based), its line's bounds, and
 * whether the text has more than one line. */
struct spot {
  int line, multiline;
  size_t start, end;
};

static struct spot spot_of(const struct hcg_source *src, hcg_pos pos) {
  struct spot s = {1, 0, 0, 0};
  for (size_t i = 0; i < src->len; i++) {
    if (src->text[i] != '\n')
      continue;
    if (i + 1 < src->len)
      s.multiline = 1;
    if (i < pos) {
      s.line++;
      s.start = i + 1;
    }
  }
  s.end = s.start;
  while (s.end < src->len && src->text[s.end] != '\n')
    s.end++;
  return s;
}

/* The line itself, windowed around the column if it is long, with
 * anything unprintable shown as '?' so that the caret under it stays
 * aligned. */
static void put_excerpt(struct hcg_buf *b, const struct hcg_source *src,
                        const struct spot *s, hcg_pos pos) {
  size_t from = s->start, to = s->end, col0 = pos - s->start;
  int cut_left = 0, cut_right = 0;
  if (col0 > EXCERPT_LEAD && to - from > EXCERPT_WIDTH) {
    from = pos - EXCERPT_LEAD;
    cut_left = 1;
  }
  if (to - from > EXCERPT_WIDTH) {
    to = from + EXCERPT_WIDTH;
    cut_right = 1;
  }
  char excerpt[EXCERPT_WIDTH + 8];
  size_t n = 0;
  if (cut_left) {
    memcpy(excerpt, "...", 3);
    n = 3;
  }
  for (size_t i = from; i < to; i++) {
    unsigned char c = (unsigned char)src->text[i];
    excerpt[n++] = (c >= 0x20 && c < 0x7f)
                       ? (char)c
                       : (c == '\t' || c == '\r' || c == '\n' ? ' ' : '?');
  }
  if (cut_right) {
    memcpy(excerpt + n, "...", 3);
    n += 3;
  }
  excerpt[n] = '\0';
  size_t caret = (cut_left ? 3 : 0) + (pos - from);
  hcg__buf_printf(b, "\n  %s\n  %*s^", excerpt, (int)caret, "");
}

/* The message's what (fmt with ap) and the excerpt with its caret. */
__attribute__((format(printf, 5, 0))) static void
put_what(struct hcg_buf *b, const struct hcg_source *src, const struct spot *s,
         hcg_pos pos, const char *fmt, va_list ap) {
  char what[HCG_ERROR_MAX];
  vsnprintf(what, sizeof what, fmt, ap);
  hcg__buf_puts(b, what);
  put_excerpt(b, src, s, pos);
}

int hcg__fail_at(hcg_error *err, int code, const struct hcg_source *src,
                 hcg_pos pos, const char *fmt, ...) {
  if (!err)
    return code;
  if (pos > src->len)
    pos = src->len;
  /* "Got the end of the layout" after a final newline belongs to the last
   * line, not to an empty line after it. */
  while (pos == src->len && pos > 0 &&
         (src->text[pos - 1] == '\n' || src->text[pos - 1] == '\r'))
    pos--;
  struct spot s = spot_of(src, pos);
  size_t col0 = pos - s.start;

  struct hcg_buf b;
  hcg__buf_init(&b, err->message, sizeof err->message);
  hcg__buf_puts(&b, "layout");
  if (src->name)
    hcg__buf_printf(&b, " '%s'", src->name);
  hcg__buf_puts(&b, ": ");
  if (s.multiline || src->name)
    hcg__buf_printf(&b, "line %d, ", s.line);
  hcg__buf_printf(&b, "column %zu: ", col0 + 1);
  va_list ap;
  va_start(ap, fmt);
  put_what(&b, src, &s, pos, fmt, ap);
  va_end(ap);

  err->code = code;
  err->line = s.line;
  err->column = (int)(col0 + 1);
  return code;
}

int hcg__fail_col(hcg_error *err, int code, const char *subject,
                  const char *text, size_t pos, const char *fmt, ...) {
  if (!err)
    return code;
  struct hcg_source src = {text, strlen(text), NULL};
  if (pos > src.len)
    pos = src.len;
  /* One line, whatever it holds: a newline is white space there. */
  struct spot s = {1, 0, 0, src.len};
  struct hcg_buf b;
  hcg__buf_init(&b, err->message, sizeof err->message);
  hcg__buf_printf(&b, "%s: column %zu: ", subject, pos + 1);
  va_list ap;
  va_start(ap, fmt);
  put_what(&b, &src, &s, pos, fmt, ap);
  va_end(ap);
  err->code = code;
  err->line = 1;
  err->column = (int)(pos + 1);
  return code;
}
