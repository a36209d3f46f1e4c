/*
 * layout.c - the layout of --hcg-layout as srun, sbatch and salloc read it.
 *
 * srun, sbatch and salloc run as the user, so reading @PATH here reads
 * exactly the files the user may read. slurmstepd never reads a path: it
 * gets the canonical text from srun (see forward.h).
 */
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "log.h"
#include "option.h"
#include "state.h"

void hcgp_layout_log_error(const hcg_error *err) {
  hcgp_log_hcg_error(err);
  if (err->code == HCG_ELIMIT && strstr(err->message, "the limit is"))
    hcgp_log(HCGP_LOG_ERROR,
             "the site's limit is max_layout_bytes=%zu in plugstack.conf",
             hcgp_state.args.max_layout_bytes);
}

/* The core's configuration for the loaded layout in a world of `world`
 * ranks (0: unknown yet). */
static hcg_layout_config config(int world) {
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  cfg.language = hcgp_state.args.language[0] ? hcgp_state.args.language : NULL;
  cfg.flags = HCG_LAYOUT_SITE_LANGUAGE; /* language= is the site's */
  cfg.max_bytes = hcgp_state.args.max_layout_bytes;
  /* The text of an @PATH file was read once, here: name the file in
   * messages about it. */
  if (hcgp_state.value && hcgp_state.value[0] == '@')
    cfg.source_name = hcgp_state.value + 1;
  return cfg;
}

int hcgp_layout_parse(int world, hcg_layout **out, hcg_error *err) {
  hcg_layout_config cfg = config(world);
  return hcg_layout_parse(hcgp_state.text, hcgp_state.text_len, &cfg, out, err);
}

int hcgp_layout_load(void) {
  /* srun runs post_opt once per heterogeneous component: load once. */
  if (hcgp_state.loaded || !hcgp_option_active())
    return 0;
  if (hcgp_option_check())
    return -1;

  hcg_error err = HCG_ERROR_INIT;
  const char *v = hcgp_state.value;
  char *text = NULL;
  size_t len = 0;
  if (v[0] == '@') {
    if (hcg_layout_read_file(v + 1, hcgp_state.args.max_layout_bytes, &text,
                             &len, &err)) {
      hcgp_layout_log_error(&err);
      return -1;
    }
  } else {
    len = hcgp_state.value_len;
    text = malloc(len + 1);
    if (!text) {
      hcgp_log(HCGP_LOG_ERROR, "out of memory for the layout");
      return -1;
    }
    memcpy(text, v, len + 1);
  }

  /* Without the task count only grammar and hard bounds can be judged;
   * everything that depends on the world waits for srun's user_init. */
  hcg_layout_config cfg = config(0);
  hcg_layout *layout = NULL;
  int rc = hcg_layout_parse(text, len, &cfg, &layout, &err);
  hcg_layout_free(layout);
  if (rc == HCG_ESYNTAX || rc == HCG_ELIMIT || rc == HCG_ENOMEM) {
    hcgp_layout_log_error(&err);
    free(text);
    return -1;
  }
  hcgp_state.text = text;
  hcgp_state.text_len = len;
  hcgp_state.loaded = 1;
  return 0;
}
