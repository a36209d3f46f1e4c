/*
 * taskenv.c - where a task's variables wait until they are set (see
 * taskenv.h for why).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* The plan: a header, one slot per local task, then the records' bytes. */
struct slot {
  uint32_t rank;
  uint32_t planned;
  size_t at, required, optional; /* offset of the bytes, their lengths */
};
struct hcgp_plan {
  size_t size, used; /* of the mapping */
  uint32_t job, step;
  int ntasks;
  struct slot slot[];
};

/* Local tasks a plan takes, as placement_slurm.c reads them. */
enum { PLAN_TASKS_MAX = 1 << 16 };
/* A plan never grows past this: the rest of the tasks compute their own. */
#define PLAN_BYTES_MAX ((size_t)256 << 20)

static size_t page_round(size_t n) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  return (n + page - 1) / page * page;
}

struct hcgp_plan *hcgp_plan_new(uint32_t job, uint32_t step, int ntasks) {
  if (ntasks < 1 || ntasks > PLAN_TASKS_MAX)
    return NULL;
  size_t head = sizeof(struct hcgp_plan) + (size_t)ntasks * sizeof(struct slot);
  size_t size = page_round(head);
  struct hcgp_plan *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return NULL;
  /* The mapping is zeroed: no slot is planned. */
  p->size = size;
  p->used = head;
  p->job = job;
  p->step = step;
  p->ntasks = ntasks;
  return p;
}

/* Room for n more bytes: p itself may move (*pp). */
static int plan_reserve(struct hcgp_plan **pp, size_t n) {
  struct hcgp_plan *p = *pp;
  if (n > PLAN_BYTES_MAX || p->used > PLAN_BYTES_MAX - n)
    return HCG_ELIMIT;
  if (p->used + n <= p->size)
    return HCG_OK;
  size_t size = p->size;
  while (size < p->used + n)
    size *= 2;
  size = page_round(size < PLAN_BYTES_MAX ? size : PLAN_BYTES_MAX);
  void *moved = mremap(p, p->size, size, MREMAP_MAYMOVE);
  if (moved == MAP_FAILED)
    return HCG_ELIMIT;
  p = moved;
  p->size = size;
  *pp = p;
  return HCG_OK;
}

int hcgp_plan_put(struct hcgp_plan **pp, int lid, uint32_t rank,
                  const struct hcgp_env_record *required,
                  const struct hcgp_env_record *optional) {
  if (!pp || !*pp || !required || !optional || lid < 0 ||
      lid >= (*pp)->ntasks || (*pp)->slot[lid].planned ||
      required->used > required->cap || optional->used > optional->cap ||
      required->used > PLAN_BYTES_MAX - optional->used)
    return HCG_EINVAL;
  size_t n = required->used + optional->used;
  int rc = plan_reserve(pp, n);
  if (rc)
    return rc;
  struct hcgp_plan *p = *pp;
  struct slot *s = &p->slot[lid];
  char *bytes = (char *)p;
  memcpy(bytes + p->used, required->buf, required->used);
  memcpy(bytes + p->used + required->used, optional->buf, optional->used);
  *s = (struct slot){rank, 1, p->used, required->used, optional->used};
  p->used += n;
  return HCG_OK;
}

int hcgp_plan_get(const struct hcgp_plan *p, uint32_t job, uint32_t step,
                  int lid, uint32_t rank, struct hcgp_env_record *required,
                  struct hcgp_env_record *optional) {
  if (!p || !required || !optional || p->job != job || p->step != step ||
      lid < 0 || lid >= p->ntasks || !p->slot[lid].planned ||
      p->slot[lid].rank != rank)
    return 0;
  const struct slot *s = &p->slot[lid];
  /* Read only: the records' buf is not const, as for a recording. */
  char *bytes = (char *)(uintptr_t)p + s->at;
  *required = (struct hcgp_env_record){bytes, s->required, s->required};
  *optional =
      (struct hcgp_env_record){bytes + s->required, s->optional, s->optional};
  return 1;
}

void hcgp_plan_free(struct hcgp_plan *p) {
  if (p)
    munmap(p, p->size);
}
