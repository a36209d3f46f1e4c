/*
 * hetstep.c - heterogeneous steps: the component check, and the hand-over
 * for the components after the first (see hetstep.h for the Slurm facts
 * this relies on).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fail.h"
#include "hetstep.h"

#define HET_TAG HCGP_FORWARD_MAGIC ":het:"

/* A decimal number of at most 10 digits that fits uint32_t; -1 otherwise
 * (NULL, empty, sign, blank, overflow). */
static int parse_u32(const char *s, uint32_t *out) {
  if (!s || !*s)
    return -1;
  uint64_t v = 0;
  size_t n = 0;
  for (; *s; s++, n++) {
    if (*s < '0' || *s > '9' || n >= 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (v > UINT32_MAX)
    return -1;
  *out = (uint32_t)v;
  return 0;
}

static int two_components(const char *het_size, hcg_error *err) {
  uint32_t k = 0;
  if (parse_u32(het_size, &k))
    return hcg__fail(err, HCG_EENV,
                     "this heterogeneous step does not tell its number of "
                     "components (SLURM_HET_SIZE)");
  if (k != HCGP_HET_COMPONENTS)
    return hcg__fail(
        err, HCG_ELIMIT,
        "this heterogeneous step has %" PRIu32 " components; a layout spans "
        "at most %d (srun learns the task count of the first component "
        "only, so it could not check where the others begin)",
        k, HCGP_HET_COMPONENTS);
  return HCG_OK;
}

int hcgp_het_check(const hcg_layout *layout, uint32_t first, uint32_t world,
                   hcg_error *err) {
  if (!layout || first == 0 || first >= world)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcgp_het_check");
  const int64_t lo[2] = {0, first}, hi[2] = {first, world};
  int grids = hcg_layout_num_grids(layout);
  for (int g = 0; g < grids; g++) {
    int64_t a = hcg_grid_offset(layout, g);
    int64_t b = a + hcg_grid_size(layout, g);
    for (int c = 0; c < 2; c++) {
      int apart = b <= lo[c] || a >= hi[c];
      int inside = a >= lo[c] && b <= hi[c];
      int whole = a <= lo[c] && b >= hi[c];
      if (apart || inside || whole)
        continue;
      return hcg__fail(
          err, HCG_ELAYOUT,
          "grid '%s' (ranks %" PRId64 "-%" PRId64 ") straddles the components "
          "of this heterogeneous step (component 0: ranks 0-%" PRIu32
          ", component 1: ranks %" PRIu32 "-%" PRIu32 "); a grid must lie "
          "inside one component or span whole components",
          hcg_grid_name(layout, g), a, b - 1, first - 1, first, world - 1);
    }
  }
  return HCG_OK;
}

int hcgp_het_encode(const char *text, size_t len, char **out, hcg_error *err) {
  if (out)
    *out = NULL;
  if (!out || !text)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcgp_het_encode");
  if (len > HCG_MAX_LAYOUT_BYTES || memchr(text, '\0', len))
    return hcg__fail(err, HCG_ELIMIT, "the layout is too long to forward");
  size_t tag = strlen(HET_TAG);
  char *buf = malloc(tag + len + 1);
  if (!buf)
    return hcg__fail(err, HCG_ENOMEM, "out of memory forwarding the layout");
  memcpy(buf, HET_TAG, tag);
  memcpy(buf + tag, text, len);
  buf[tag + len] = '\0';
  *out = buf;
  return HCG_OK;
}

/* The layout text of srun's "het" value. */
static int het_text(const char *value, size_t len, const char **text,
                    size_t *tlen, hcg_error *err) {
  size_t tag = strlen(HET_TAG);
  if (len < tag || memcmp(value, HET_TAG, tag))
    return hcg__fail(err, HCG_EENV,
                     "srun did not forward the layout to this heterogeneous "
                     "step (" HCGP_FORWARD_ENV "): is the hcg plugin in "
                     "srun's plugstack.conf?");
  if (len > HCGP_FORWARD_MAX)
    return hcg__fail(err, HCG_ELIMIT,
                     "the layout forwarded by srun (" HCGP_FORWARD_ENV
                     ") is longer than any valid layout");
  *text = value + tag;
  *tlen = len - tag;
  return HCG_OK;
}

/* Where this task's component lies in the step: [offset, offset + count)
 * of [0, *world), checked against each other. */
static int place(const struct hcgp_het_task *t, uint32_t *world,
                 uint32_t *offset, uint32_t *rank, hcg_error *err) {
  uint32_t count = t->task.world, local = t->task.rank, procid = 0, n = 0;
  int rc = two_components(t->het_size, err);
  if (rc)
    return rc;
  if (parse_u32(t->procid, &procid) || parse_u32(t->ntasks, &n))
    return hcg__fail(err, HCG_EENV,
                     "slurmstepd did not give this task of a heterogeneous "
                     "step a valid SLURM_PROCID and SLURM_NTASKS");
  if (count == 0 || local >= count || procid < local || n > HCG_MAX_WORLD ||
      (uint64_t)(procid - local) + count > n)
    return hcg__fail(err, HCG_EENV,
                     "task %" PRIu32 " of %" PRIu32 " of its component cannot "
                     "be rank %" PRIu32 " of a heterogeneous step of %" PRIu32
                     " tasks",
                     local, count, procid, n);
  *world = n;
  *offset = procid - local;
  *rank = procid;
  return HCG_OK;
}

int hcgp_het_task_env(const char *forwarded, size_t len,
                      const struct hcgp_het_task *t, hcgp_task_setenv_fn fn,
                      void *arg, int *first_task, hcg_error *err) {
  if (first_task)
    *first_task = t && t->task.rank == 0;
  if (!forwarded || !t || !fn)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcgp_het_task_env");
  uint32_t world = 0, offset = 0, rank = 0, count = t->task.world;
  int rc = place(t, &world, &offset, &rank, err);
  if (rc)
    return rc;
  /* Two components: the first ends where the second begins. */
  uint32_t first = offset == 0 ? count : offset;
  if (first >= world || (offset > 0 && offset + count != world))
    return hcg__fail(err, HCG_EENV,
                     "the component of ranks %" PRIu32 "-%" PRIu32 " is not "
                     "one of two components of a step of %" PRIu32 " tasks",
                     offset, offset + count - 1, world);

  /* The text came through the user's environment: the site's policy
   * applies here, and the language module is chosen here, by the rule srun
   * applies to a plain step. */
  const char *text = NULL;
  size_t tlen = 0;
  rc = het_text(forwarded, len, &text, &tlen, err);
  if (rc)
    return rc;
  if (t->task.max_bytes && tlen > t->task.max_bytes)
    return hcg__fail(err, HCG_ELIMIT,
                     "the layout forwarded in " HCGP_FORWARD_ENV
                     " is %zu bytes, longer than this site's "
                     "max_layout_bytes=%zu",
                     tlen, t->task.max_bytes);
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = (int)world;
  cfg.language =
      t->task.language && t->task.language[0] ? t->task.language : NULL;
  hcg_layout *layout = NULL;
  rc = hcg_layout_parse(text, tlen, &cfg, &layout, err);
  if (!rc)
    rc = hcgp_het_check(layout, first, world, err);
  /* From here on, the plain step's code with the step's world and rank. */
  char *bound = NULL;
  if (!rc)
    rc = hcgp_forward_encode(t->task.job, t->task.step,
                             hcg_grid_name(layout, hcg_layout_language(layout)),
                             hcg_layout_text(layout), &bound, err);
  hcg_layout_free(layout);
  if (!rc) {
    struct hcgp_task whole = t->task;
    whole.world = world;
    whole.rank = rank;
    rc = hcgp_task_env(bound, strlen(bound), &whole, fn, arg, err);
  }
  free(bound);
  return rc;
}
