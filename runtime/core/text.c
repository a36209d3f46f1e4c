/*
 * text.c - a bounded string builder for messages, the canonical text and
 * the environment, and abbreviated enumerations for error messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

void hcg__buf_init(struct hcg_buf *b, char *p, size_t cap) {
  b->p = p;
  b->cap = cap;
  b->len = 0;
  if (cap)
    p[0] = '\0';
}

static void buf_advance(struct hcg_buf *b, size_t n) {
  b->len += n;
  if (b->cap && b->len >= b->cap)
    b->p[b->cap - 1] = '\0';
}

void hcg__buf_printf(struct hcg_buf *b, const char *fmt, ...) {
  size_t room = b->len < b->cap ? b->cap - b->len : 0;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(room ? b->p + b->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n > 0)
    buf_advance(b, (size_t)n);
}

void hcg__buf_puts(struct hcg_buf *b, const char *s) {
  size_t n = strlen(s);
  if (b->len < b->cap) {
    size_t room = b->cap - b->len - 1;
    size_t k = n < room ? n : room;
    memcpy(b->p + b->len, s, k);
    b->p[b->len + k] = '\0';
  }
  buf_advance(b, n);
}

int hcg__buf_truncated(const struct hcg_buf *b) {
  return b->cap == 0 || b->len >= b->cap;
}

/* How much of an enumeration a message shows. */
enum { SHOW_GROUPS = 4, SHOW_MEMBERS = 8 };

void hcg__buf_enum(struct hcg_buf *b, const struct hcg_layout *L,
                   const hcg_request *req) {
  int ngroups = hcg_request_num_groups(L, req);
  hcg__buf_puts(b, "[");
  for (int g = 0; g < ngroups && g < SHOW_GROUPS; g++) {
    hcg_group grp;
    if (hcg_group_at(L, req, g, &grp) != HCG_OK)
      break;
    hcg__buf_puts(b, g ? ",[" : "[");
    for (int i = 0; i < grp.size && i < SHOW_MEMBERS; i++)
      hcg__buf_printf(b, i ? ",%d" : "%d", hcg_group_member(L, &grp, i));
    hcg__buf_puts(b, grp.size > SHOW_MEMBERS ? ",...]" : "]");
  }
  hcg__buf_puts(b, ngroups > SHOW_GROUPS ? ",...]" : "]");
}
