/*
 * explain.c - `hcg explain`: describes the layout once (describe.c), then
 * hands the description to one printer: text for people (explain_text.c),
 * JSON for programs (explain_json.c) or an SVG picture of the ranks on
 * their nodes (explain_svg.c).
 */
#include <stdlib.h>

#include "cli.h"
#include "describe.h"

int hcg_cli_explain(FILE *out, const hcg_layout *L,
                    const struct explain_opts *opts) {
  struct desc *d = describe_layout(L);
  /* One rank's worth of facts, reused rank after rank by the printers. */
  struct desc_rank *r = malloc(sizeof *r);
  int rc = EXIT_OTHER;
  if (d && r && opts->placement &&
      describe_placement(d, opts->placement, opts->dims, opts->domain_size,
                         opts->domain_dims))
    r = (free(r), NULL);
  if (d && r)
    rc = (opts->svg    ? explain_svg
          : opts->json ? explain_json
                       : explain_text)(out, d, opts, r);
  else
    fputs("hcg: out of memory\n", stderr);
  free(r);
  describe_free(d);
  return rc;
}
