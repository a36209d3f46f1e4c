/* json.h - a minimal streaming JSON writer for `hcg explain --format json`. */
#ifndef HCG_CLI_JSON_H
#define HCG_CLI_JSON_H

#include <stdio.h>

struct json {
  FILE *out;
  int depth;
  int need_comma[64];
};

void json_init(struct json *j, FILE *out);
void json_begin_object(struct json *j);
void json_end_object(struct json *j);
void json_begin_array(struct json *j);
void json_end_array(struct json *j);
void json_key(struct json *j, const char *key);
void json_string(struct json *j, const char *s);
void json_int(struct json *j, long long v);
void json_bool(struct json *j, int v);
void json_null(struct json *j);

#endif
