/*
 * taskenv.c - where a task's variables wait until they are set (see
 * taskenv.h for why).
 */
#include <string.h>

#include "taskenv.h"

int hcgp_env_record_add(struct hcgp_env_record *r, const char *name,
                        const char *value) {
  if (!r || !name || !value)
    return HCG_EINVAL;
  size_t nl = strlen(name), vl = strlen(value);
  if (r->used > r->cap || nl + vl + 2 > r->cap - r->used)
    return HCG_ELIMIT;
  memcpy(r->buf + r->used, name, nl + 1);
  memcpy(r->buf + r->used + nl + 1, value, vl + 1);
  r->used += nl + vl + 2;
  return HCG_OK;
}

const char *hcgp_env_record_next(const struct hcgp_env_record *r, size_t *at,
                                 const char **value) {
  if (!r || !at || *at >= r->used)
    return NULL;
  const char *name = r->buf + *at;
  *value = name + strlen(name) + 1;
  *at = (size_t)(*value - r->buf) + strlen(*value) + 1;
  return name;
}
