/*
 * taskenv.c - where a task's variables wait until they are set (see
 * taskenv.h for why).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include <stdint.h>
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
  size_t at, unset, required, optional; /* offset of the bytes, lengths */
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

static int record_ok(const struct hcgp_env_record *r) {
  return r && r->used <= r->cap && r->used <= PLAN_BYTES_MAX;
}

int hcgp_plan_put(struct hcgp_plan **pp, int lid, uint32_t rank,
                  const struct hcgp_plan_entry *e) {
  if (!pp || !*pp || !e || lid < 0 || lid >= (*pp)->ntasks ||
      (*pp)->slot[lid].planned || !record_ok(&e->unset) ||
      !record_ok(&e->required) || !record_ok(&e->optional) ||
      e->required.used > PLAN_BYTES_MAX - e->optional.used ||
      e->unset.used > PLAN_BYTES_MAX - e->required.used - e->optional.used)
    return HCG_EINVAL;
  size_t n = e->unset.used + e->required.used + e->optional.used;
  int rc = plan_reserve(pp, n);
  if (rc)
    return rc;
  struct hcgp_plan *p = *pp;
  char *at = (char *)p + p->used;
  const struct hcgp_env_record *part[] = {&e->unset, &e->required,
                                          &e->optional};
  for (int k = 0; k < 3; k++) {
    if (part[k]->used) /* an empty record's buf may be NULL */
      memcpy(at, part[k]->buf, part[k]->used);
    at += part[k]->used;
  }
  p->slot[lid] = (struct slot){
      rank, 1, p->used, e->unset.used, e->required.used, e->optional.used};
  p->used += n;
  return HCG_OK;
}

int hcgp_plan_get(const struct hcgp_plan *p, uint32_t job, uint32_t step,
                  int lid, uint32_t rank, struct hcgp_plan_entry *e) {
  if (!p || !e || p->job != job || p->step != step || lid < 0 ||
      lid >= p->ntasks || !p->slot[lid].planned || p->slot[lid].rank != rank)
    return 0;
  const struct slot *s = &p->slot[lid];
  /* Read only: the records' buf is not const, as for a recording. */
  char *bytes = (char *)(uintptr_t)p + s->at;
  e->unset = (struct hcgp_env_record){bytes, s->unset, s->unset};
  bytes += s->unset;
  e->required = (struct hcgp_env_record){bytes, s->required, s->required};
  bytes += s->required;
  e->optional = (struct hcgp_env_record){bytes, s->optional, s->optional};
  return 1;
}

/* Whether held ("NAME=VALUE") is name=value. */
static int held_is(const char *held, const char *name, const char *value) {
  size_t nl = strlen(name);
  return !strncmp(held, name, nl) && held[nl] == '=' &&
         !strcmp(held + nl + 1, value);
}

/* Whether r has a variable called as held ("NAME=VALUE") is. */
static int has_name(const struct hcgp_env_record *r, const char *held) {
  size_t at = 0, nl = strcspn(held, "=");
  const char *name, *value;
  while ((name = hcgp_env_record_next(r, &at, &value)))
    if (strlen(name) == nl && !strncmp(name, held, nl))
      return 1;
  return 0;
}

/* The index of the kept held entry that is exactly name=value, or -1. */
static long kept_as(const char *const *held, size_t n,
                    const unsigned char *keep, const char *name,
                    const char *value) {
  for (size_t i = 0; i < n; i++)
    if (keep[i] && held_is(held[i], name, value))
      return (long)i;
  return -1;
}

/* Task s of p, with held taken into account, into q. */
static int share_one(struct hcgp_plan **q, const struct hcgp_plan *p, int lid,
                     const char *const *held, size_t n,
                     const unsigned char *keep, char *scratch) {
  struct hcgp_plan_entry e;
  if (!hcgp_plan_get(p, p->job, p->step, lid, p->slot[lid].rank, &e))
    return HCG_OK;
  /* The task's required variables it must still set, then the names of
   * the kept ones it must remove: both fit in what required took plus the
   * held names. */
  struct hcgp_env_record set = {scratch, e.required.used, 0};
  size_t at = 0;
  const char *name, *value;
  while ((name = hcgp_env_record_next(&e.required, &at, &value)))
    if (kept_as(held, n, keep, name, value) < 0 &&
        hcgp_env_record_add(&set, name, value) != HCG_OK)
      return HCG_ELIMIT;
  struct hcgp_env_record unset = {scratch + set.used, SIZE_MAX - set.used, 0};
  for (size_t i = 0; i < n; i++) {
    if (!keep[i] || has_name(&e.required, held[i]) ||
        has_name(&e.optional, held[i]))
      continue;
    size_t nl = strcspn(held[i], "=");
    memcpy(unset.buf + unset.used, held[i], nl);
    unset.buf[unset.used + nl] = unset.buf[unset.used + nl + 1] = '\0';
    unset.used += nl + 2;
  }
  unset.cap = unset.used;
  struct hcgp_plan_entry shared = {unset, set, e.optional};
  return hcgp_plan_put(q, lid, p->slot[lid].rank, &shared);
}

int hcgp_plan_share(struct hcgp_plan **pp, const char *const *held, size_t n,
                    unsigned char *keep) {
  if (!pp || !*pp || (n && (!held || !keep)))
    return HCG_EINVAL;
  if (!n)
    return HCG_OK;
  memset(keep, 0, n);
  if (n > HCGP_PLAN_HELD_MAX)
    return HCG_ELIMIT;
  struct hcgp_plan *p = *pp;
  size_t names = 0, widest = 0, kept = 0;
  for (size_t i = 0; i < n; i++)
    names += strcspn(held[i], "=") + 2;
  for (int lid = 0; lid < p->ntasks; lid++) {
    struct hcgp_plan_entry e;
    if (!hcgp_plan_get(p, p->job, p->step, lid, p->slot[lid].rank, &e))
      continue;
    if (e.required.used > widest)
      widest = e.required.used;
    size_t at = 0;
    const char *name, *value;
    while ((name = hcgp_env_record_next(&e.required, &at, &value)))
      for (size_t i = 0; i < n; i++)
        if (!keep[i] && held_is(held[i], name, value)) {
          keep[i] = 1;
          kept++;
        }
  }
  if (!kept)
    return HCG_OK;
  struct hcgp_plan *q = hcgp_plan_new(p->job, p->step, p->ntasks);
  size_t len = page_round(widest + names);
  char *scratch = q ? mmap(NULL, len, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    : MAP_FAILED;
  int rc = scratch == MAP_FAILED ? HCG_ELIMIT : HCG_OK;
  for (int lid = 0; !rc && lid < p->ntasks; lid++)
    rc = share_one(&q, p, lid, held, n, keep, scratch);
  if (scratch != MAP_FAILED)
    munmap(scratch, len);
  if (rc) {
    hcgp_plan_free(q);
    memset(keep, 0, n);
    return HCG_ELIMIT;
  }
  hcgp_plan_free(p);
  *pp = q;
  return HCG_OK;
}

void hcgp_plan_free(struct hcgp_plan *p) {
  if (p)
    munmap(p, p->size);
}
