/*
 * layout.c - the public life cycle of a layout: parse (syntax, names, grids,
 * views, spans, language), print canonically, free.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int hcg__layout_parse_source(const struct hcg_source *src,
                             const hcg_layout_config *cfg, hcg_layout **out,
                             hcg_error *err) {
  size_t max = cfg->max_bytes && cfg->max_bytes < HCG_MAX_LAYOUT_BYTES
                   ? cfg->max_bytes
                   : HCG_MAX_LAYOUT_BYTES;
  if (src->len > max)
    return hcg__fail(err, HCG_ELIMIT,
                     "layout: the layout is %zu bytes; the limit is %zu",
                     src->len, max);
  if (cfg->world_size < 0)
    return hcg__fail(err, HCG_EINVAL,
                     "layout: the world size must be positive, got %d",
                     cfg->world_size);
  const char *nul = memchr(src->text, '\0', src->len);
  if (nul)
    return hcg__fail_at(err, HCG_ESYNTAX, src, (hcg_pos)(nul - src->text),
                        "the layout contains a NUL byte");

  struct hcg_layout *L = calloc(1, sizeof *L);
  if (!L)
    return hcg__fail(err, HCG_ENOMEM, "out of memory for a layout");
  L->world = cfg->world_size;
  int rc = hcg__parse(L, src, err);
  if (!rc)
    rc = hcg__check_names(L, src, err);
  if (!rc)
    rc = hcg__resolve_grids(L, src, err);
  /* A site's language module applies among several grids only. */
  const char *language = cfg->language;
  if (!rc && (cfg->flags & HCG_LAYOUT_SITE_LANGUAGE) && L->ngrids == 1)
    language = NULL;
  if (!rc)
    rc = hcg__validate(L, src, language, err);
  if (!rc)
    rc = hcg__print_canonical(L, err);
  if (rc) {
    hcg_layout_free(L);
    return rc;
  }
  *out = L;
  return HCG_OK;
}

int hcg_layout_parse(const char *text, size_t len, const hcg_layout_config *cfg,
                     hcg_layout **out, hcg_error *err) {
  if (out)
    *out = NULL;
  if (!text || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_layout_parse");
  hcg_layout_config c;
  int rc = hcg__layout_config(cfg, &c, err);
  if (rc)
    return rc;
  struct hcg_source src = {text, len, c.source_name};
  return hcg__layout_parse_source(&src, &c, out, err);
}

int hcg__layout_config(const hcg_layout_config *cfg, hcg_layout_config *out,
                       hcg_error *err) {
  static const hcg_layout_config defaults = HCG_LAYOUT_CONFIG_INIT;
  int rc = HCG__CONFIG_READ_SINCE(hcg_layout_config, flags, cfg, &defaults, out,
                                  err);
  if (!rc && (out->flags & ~(unsigned)HCG_LAYOUT_SITE_LANGUAGE))
    rc = hcg__fail(err, HCG_EINVAL,
                   "hcg_layout_config.flags 0x%x has bits no HCG_LAYOUT_* "
                   "flag names",
                   out->flags);
  return rc;
}

void hcg_layout_free(hcg_layout *L) {
  if (!L)
    return;
  free(L->text);
  free(L);
}

const char *hcg_layout_text(const hcg_layout *L) { return L ? L->text : NULL; }

int hcg_layout_world_size(const hcg_layout *L) { return L ? L->world : 0; }

int hcg_layout_mode(const hcg_layout *L) { return L ? L->mode : -1; }

const char *hcg_mode_name(enum hcg_mode mode) {
  switch (mode) {
  case HCG_MODE_SINGLE:
    return "single";
  case HCG_MODE_COLOCATED:
    return "colocated";
  case HCG_MODE_NONCOLOCATED:
    return "non-colocated";
  default:
    return NULL;
  }
}

int hcg_layout_language(const hcg_layout *L) { return L ? L->language : -1; }
