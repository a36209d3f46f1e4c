/* cli.h - shared pieces of the hcg command. */
#ifndef HCG_CLI_H
#define HCG_CLI_H

#include <stdio.h>

#include "hcg.h"

/* Exit statuses: 2 for a bad layout, 1 for every other failure. */
enum { EXIT_BAD_LAYOUT = 2, EXIT_USAGE = 2, EXIT_OTHER = 1 };

struct explain_opts {
  int rank; /* -1: every rank */
  int json; /* 1: --format json */
  int full; /* 1: --full, text lists every rank and group */
  int svg;  /* 1: --format svg */
  const hcg_placement *placement; /* --nodes/--tasks-per-node, or NULL */
  const char *dims;               /* --intra-node-dims, or NULL */
  int domain_size;                /* --domain-size, or 0 */
  const char *domain_dims;        /* --intra-domain-dims, or NULL */
};

int hcg_cli_explain(FILE *out, const hcg_layout *L,
                    const struct explain_opts *opts);

/* The printers of a description (describe.h); r is scratch space for one
 * rank at a time. */
struct desc;
struct desc_rank;
int explain_text(FILE *out, const struct desc *d,
                 const struct explain_opts *opts, struct desc_rank *r);
int explain_json(FILE *out, const struct desc *d,
                 const struct explain_opts *opts, struct desc_rank *r);
int explain_svg(FILE *out, const struct desc *d,
                const struct explain_opts *opts, struct desc_rank *r);

/* A decimal int in [min, INT_MAX], the whole string, no sign or leading
 * space: 0, or -1 (count.c; every count an option of hcg takes). */
int hcg_cli_parse_count(const char *s, int min, int *out);

/* layout.c: `hcg layout` and `hcg help layout`; -1 when argv is neither
 * (main goes on), else the exit status. */
int hcg_cli_layout_dispatch(int argc, char **argv);
int hcg_cli_layout_help(FILE *out);

/* reference.c: `hcg help TOPIC` for the facts the docs repeat (grammar,
 * fields, plugstack); -1 when `topic` is none of them. The list of topics,
 * one line each, for the general help. */
int hcg_cli_reference(FILE *out, const char *topic);
void hcg_cli_reference_list(FILE *out);

#endif
