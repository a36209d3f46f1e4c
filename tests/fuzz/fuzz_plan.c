/*
 * fuzz_plan.c - libFuzzer target for hcgp_plan_share (spank/taskenv.c):
 * the plugin's variables a step's environment holds, which the user can
 * set, against the variables slurmstepd planned for its tasks.
 *
 * Input: one byte, the number of tasks (1-8), then lines. A line starting
 * with '#' is a variable the step's environment holds ("NAME=VALUE"); any
 * other gives task (first byte % tasks) the variable after it, a required
 * one, or a placement one when that byte is 0x80 or more. As in slurmstepd,
 * a task's names are distinct (hcg_rank_env gives each once; a repeated
 * one is dropped here) and names held twice are left out (share_held).
 * Checks: every task that starts
 * from the environment kept, removes what its entry names and sets what it
 * lists ends with exactly the variables it was planned with.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "taskenv.h"

enum { TASKS = 8, HELD = 64, VARS = 64, BUF = 4096 };

/* The environment as a task sees it: name and value, at most one entry a
 * name (as spank_setenv overwrites). */
struct env {
  const char *name[HELD + VARS];
  size_t nlen[HELD + VARS];
  const char *value[HELD + VARS];
  size_t vlen[HELD + VARS];
  int n;
};

static int env_find(const struct env *e, const char *name, size_t nl) {
  for (int i = 0; i < e->n; i++)
    if (e->nlen[i] == nl && !memcmp(e->name[i], name, nl))
      return i;
  return -1;
}

static void env_set(struct env *e, const char *name, size_t nl,
                    const char *value, size_t vl) {
  int i = env_find(e, name, nl);
  if (i < 0) {
    CHECK(e->n < HELD + VARS);
    i = e->n++;
  }
  e->name[i] = name;
  e->nlen[i] = nl;
  e->value[i] = value;
  e->vlen[i] = vl;
}

static void env_unset(struct env *e, const char *name, size_t nl) {
  int i = env_find(e, name, nl);
  if (i >= 0) {
    e->n--;
    e->name[i] = e->name[e->n];
    e->nlen[i] = e->nlen[e->n];
    e->value[i] = e->value[e->n];
    e->vlen[i] = e->vlen[e->n];
  }
}

/* r applied to e, in order. */
static void env_apply(struct env *e, const struct hcgp_env_record *r) {
  size_t at = 0;
  const char *name, *value;
  while ((name = hcgp_env_record_next(r, &at, &value)))
    env_set(e, name, strlen(name), value, strlen(value));
}

/* Whether r has a variable called name. */
static int has(const struct hcgp_env_record *r, const char *name) {
  size_t at = 0;
  const char *n, *v;
  while ((n = hcgp_env_record_next(r, &at, &v)))
    if (!strcmp(n, name))
      return 1;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int ntasks = 1 + data[0] % TASKS;
  static char text[1 << 16];
  size = size - 1 < sizeof text - 1 ? size - 1 : sizeof text - 1;
  memcpy(text, data + 1, size);
  text[size] = '\0';

  static char bufs[TASKS][2][BUF];
  struct hcgp_env_record req[TASKS], opt[TASKS];
  for (int k = 0; k < TASKS; k++) {
    req[k] = (struct hcgp_env_record){bufs[k][0], BUF, 0};
    opt[k] = (struct hcgp_env_record){bufs[k][1], BUF, 0};
  }
  const char *held[HELD];
  size_t nheld = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    if (line[0] == '#') {
      if (nheld < HELD)
        held[nheld++] = line + 1;
      continue;
    }
    char *eq = strchr(line + 1, '=');
    if (!line[1] || !eq || eq == line + 1)
      continue;
    *eq = '\0';
    int k = (unsigned char)line[0] % ntasks;
    if (!has(&req[k], line + 1) && !has(&opt[k], line + 1))
      (void)hcgp_env_record_add(
          (unsigned char)line[0] >= 0x80 ? &opt[k] : &req[k], line + 1, eq + 1);
  }
  /* As share_held: a name held twice is no candidate. */
  const char *once[HELD];
  size_t nonce = 0;
  for (size_t i = 0; i < nheld; i++) {
    size_t nl = strcspn(held[i], "=");
    int twice = 0;
    for (size_t j = 0; j < nheld && !twice; j++)
      twice = j != i && strcspn(held[j], "=") == nl &&
              !strncmp(held[i], held[j], nl);
    if (!twice)
      once[nonce++] = held[i];
  }

  struct hcgp_plan *p = hcgp_plan_new(7, 3, ntasks);
  CHECK(p);
  for (int k = 0; k < ntasks; k++) {
    struct hcgp_plan_entry e = {{NULL, 0, 0}, req[k], opt[k]};
    CHECK(hcgp_plan_put(&p, k, (uint32_t)k, &e) == HCG_OK);
  }
  unsigned char keep[HELD];
  int rc = hcgp_plan_share(&p, once, nonce, keep);
  CHECK(rc == HCG_OK);

  for (int k = 0; k < ntasks; k++) {
    struct env env = {0};
    for (size_t i = 0; i < nonce; i++)
      if (keep[i]) {
        size_t nl = strcspn(once[i], "=");
        CHECK(once[i][nl] == '=');
        env_set(&env, once[i], nl, once[i] + nl + 1, strlen(once[i] + nl + 1));
      }
    struct hcgp_plan_entry e;
    CHECK(hcgp_plan_get(p, 7, 3, k, (uint32_t)k, &e));
    size_t at = 0;
    const char *name, *value;
    while ((name = hcgp_env_record_next(&e.unset, &at, &value)))
      env_unset(&env, name, strlen(name));
    env_apply(&env, &e.required);
    env_apply(&env, &e.optional);
    /* What the task was planned with, set in order into nothing. */
    struct env want = {0};
    env_apply(&want, &req[k]);
    env_apply(&want, &opt[k]);
    CHECK(env.n == want.n);
    for (int i = 0; i < want.n; i++) {
      int j = env_find(&env, want.name[i], want.nlen[i]);
      CHECK(j >= 0 && env.vlen[j] == want.vlen[i] &&
            !memcmp(env.value[j], want.value[i], want.vlen[i]));
    }
  }
  hcgp_plan_free(p);
  return 0;
}
