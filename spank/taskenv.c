/*
 * taskenv.c - a task's variables, and where they wait until they are set
 * (see taskenv.h for why).
 */
#include <stdlib.h>
#include <string.h>

#include "taskenv.h"

struct filter {
  hcg_env_fn fn;
  void *arg;
  int export_dims;
};

static int filtered(void *arg, const char *name, const char *value) {
  struct filter *f = arg;
  if (!f->export_dims && hcg_env_scope(name) == HCG_ENV_PER_DIM)
    return 0;
  return f->fn(f->arg, name, value);
}

int hcgp_rank_task_env(const hcg_layout *L, int rank, int export_dims,
                       hcg_env_fn fn, void *arg) {
  struct filter f = {fn, arg, export_dims};
  return hcg_rank_env(L, rank, filtered, &f);
}

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
