/*
 * json.c - a minimal streaming JSON writer: objects, arrays, strings with
 * escapes, integers. Commas are tracked per nesting level.
 */
#include "json.h"

void json_init(struct json *j, FILE *out) {
  j->out = out;
  j->depth = 0;
  j->need_comma[0] = 0;
}

/* Before a value: a comma if the container already holds one. A value right
 * after a key never takes a comma (json_key cleared the flag). */
static void value_prefix(struct json *j) {
  if (j->need_comma[j->depth])
    fputc(',', j->out);
  j->need_comma[j->depth] = 1;
}

static void open(struct json *j, char c) {
  value_prefix(j);
  fputc(c, j->out);
  if (j->depth < 63)
    j->depth++;
  j->need_comma[j->depth] = 0;
}

static void close_(struct json *j, char c) {
  fputc(c, j->out);
  if (j->depth > 0)
    j->depth--;
}

void json_begin_object(struct json *j) { open(j, '{'); }
void json_end_object(struct json *j) { close_(j, '}'); }
void json_begin_array(struct json *j) { open(j, '['); }
void json_end_array(struct json *j) { close_(j, ']'); }

static void write_string(FILE *out, const char *s) {
  fputc('"', out);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"':
      fputs("\\\"", out);
      break;
    case '\\':
      fputs("\\\\", out);
      break;
    case '\n':
      fputs("\\n", out);
      break;
    case '\t':
      fputs("\\t", out);
      break;
    default:
      if (*p < 0x20)
        fprintf(out, "\\u%04x", *p);
      else
        fputc(*p, out);
    }
  }
  fputc('"', out);
}

void json_key(struct json *j, const char *key) {
  value_prefix(j);
  write_string(j->out, key);
  fputc(':', j->out);
  j->need_comma[j->depth] = 0;
}

/* After a keyed value, the next key needs a comma again. */
static void after_value(struct json *j) { j->need_comma[j->depth] = 1; }

void json_string(struct json *j, const char *s) {
  value_prefix(j);
  write_string(j->out, s);
  after_value(j);
}

void json_int(struct json *j, long long v) {
  value_prefix(j);
  fprintf(j->out, "%lld", v);
  after_value(j);
}

void json_bool(struct json *j, int v) {
  value_prefix(j);
  fputs(v ? "true" : "false", j->out);
  after_value(j);
}

void json_null(struct json *j) {
  value_prefix(j);
  fputs("null", j->out);
  after_value(j);
}
