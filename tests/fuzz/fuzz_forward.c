/*
 * fuzz_forward.c - libFuzzer target for the hand-over slurmstepd decodes
 * from SLURM_HCG_STEP_LAYOUT (spank/forward.c): a value the user can forge.
 *
 * Input: 4 bytes of task (world 1-256, rank, export_dims, site policy),
 * then the variable's value. Checks: decoding never reads outside the
 * value; what decodes names a grid-like language and a text inside the
 * value; a task's variables are HCG_* names, and none is set on a refusal;
 * the site's max_layout_bytes and language= hold for every accepted
 * hand-over; the canonical form of what is accepted is accepted too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forward.h"
#include "fuzz.h"

#define JOB 5u
#define STEP 0u

struct seen {
  int n;
  int has_language;
  char language[HCG_MAX_NAME + 1];
};

static int collect(void *arg, const char *name, const char *value) {
  struct seen *s = arg;
  CHECK(name && value && !strncmp(name, "HCG_", 4));
  if (!strcmp(name, "HCG_LANGUAGE")) {
    CHECK(strlen(value) <= HCG_MAX_NAME);
    snprintf(s->language, sizeof s->language, "%s", value);
    s->has_language = 1;
  }
  s->n++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 4)
    return 0;
  struct hcgp_task t;
  memset(&t, 0, sizeof t); /* by name below: the struct may grow */
  t.job = JOB;
  t.step = STEP;
  t.world = 1u + data[0];
  t.rank = data[1] % t.world;
  t.export_dims = data[2] & 1;
  static const char *const languages[] = {NULL, "llm", "enc", "world"};
  t.language = languages[(data[2] >> 1) & 3];
  t.max_bytes = (data[3] & 1) ? 64u + (size_t)data[3] * 4u : 0;
  /* The value exactly as slurmstepd holds it: its own buffer, no NUL
   * after it, so that any read past the end is caught. */
  size_t len = size - 4;
  char *value = malloc(len ? len : 1);
  if (!value)
    return 0;
  memcpy(value, data + 4, len);

  char language[HCG_MAX_NAME + 1];
  const char *text = NULL;
  size_t tlen = 0;
  hcg_error err = HCG_ERROR_INIT;
  int rc =
      hcgp_forward_decode(value, len, JOB, STEP, language, &text, &tlen, &err);
  if (rc) {
    CHECK(err.code == rc && err.message[0]);
  } else {
    CHECK(hcg_name_valid(language));
    CHECK(text >= value && text + tlen == value + len);
  }
  CHECK(hcgp_forward_refused(value, len, JOB, STEP) == (rc == HCG_ELAYOUT));

  struct seen s = {0, 0, {0}};
  hcg_error terr = HCG_ERROR_INIT;
  int trc = hcgp_task_env(value, len, &t, collect, &s, &terr);
  if (trc) {
    CHECK(terr.code == trc && terr.message[0]);
    CHECK(s.n == 0); /* nothing half-done */
  } else {
    CHECK(rc == HCG_OK);
    CHECK(s.n >= 6 && s.has_language);
    CHECK(!t.max_bytes || tlen <= t.max_bytes);
    hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
    cfg.world_size = (int)t.world;
    cfg.language = language;
    hcg_layout *L = NULL;
    CHECK(hcg_layout_parse(text, tlen, &cfg, &L, &err) == HCG_OK);
    /* The forwarded language module among several grids, and the site's
     * when it names one; a one-grid layout's only grid. */
    const char *lang = hcg_grid_name(L, hcg_layout_language(L));
    CHECK(!strcmp(s.language, lang));
    if (hcg_layout_num_grids(L) > 1) {
      CHECK(!strcmp(lang, language));
      CHECK(!t.language || !strcmp(lang, t.language));
    }
    /* Its canonical form is accepted in turn, with the same variables. */
    char *again = NULL;
    CHECK(hcgp_forward_encode(JOB, STEP, language, hcg_layout_text(L), &again,
                              &err) == HCG_OK);
    struct seen s2 = {0, 0, {0}};
    size_t clen = strlen(hcg_layout_text(L));
    if (!t.max_bytes || clen <= t.max_bytes) {
      CHECK(hcgp_task_env(again, strlen(again), &t, collect, &s2, &terr) ==
            HCG_OK);
      CHECK(s2.n == s.n);
    }
    free(again);
    hcg_layout_free(L);
  }
  free(value);
  return 0;
}
