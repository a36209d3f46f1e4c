/*
 * args.h - the plugstack.conf arguments of the hcg SPANK plugin.
 *
 * A plugstack.conf line passes whitespace-separated words with no quoting,
 * so every argument is a single key=value word. This parser is pure C (no
 * Slurm) so that it can be unit tested and reused by the benchmark.
 */
#ifndef HCGP_ARGS_H
#define HCGP_ARGS_H

#include <stddef.h>

#include "core/plugstack.h"
#include "hcg.h"

/* placement=: what a group of an intra-node dim crossing nodes does. */
enum hcgp_placement {
  HCGP_PLACEMENT_OFF = 0,    /* no check, no HCG_*_LOCAL variables   */
  HCGP_PLACEMENT_WARN = 1,   /* one warning line per step (default)  */
  HCGP_PLACEMENT_REFUSE = 2, /* the step fails before the program    */
};
/* Longest intra_node_dims= or intra_domain_dims= value. */
#define HCGP_DIMS_MAX 256

/* The policy's name ("off", "warn", "refuse") to enum hcgp_placement, or
 * -1; allow_off 0 for the job option, which cannot turn the check off. */
int hcgp_placement_parse(const char *s, int allow_off);

struct hcgp_args {
  /* Longest layout accepted from a user, as text or as an @PATH file; at
   * most HCG_MAX_LAYOUT_BYTES. */
  size_t max_layout_bytes;
  /* 1: export HCG_<GRID>[_<VIEW>]_<DIM>_RANK/_SIZE; 0: only the variables
   * common to every layout (HCG_VERSION, HCG_LAYOUT, HCG_RANK, ...). */
  int export_dims;
  /* Name of the language module's grid, or "" for the core's default rule
   * (a grid named llm or language, or the only grid). */
  char language[HCG_MAX_NAME + 1];
  /* Dims whose groups should stay inside one node (intra_node_dims=), and
   * what a group crossing nodes does (placement=, enum hcgp_placement). */
  char intra_node_dims[HCGP_DIMS_MAX + 1];
  int placement;
  /* Dims whose groups should stay inside one NVLink domain of the step's
   * topology (intra_domain_dims=; "" for none): judged by domain instead
   * of by node where slurmstepd learns the domains (doc/plugin.md). */
  char intra_domain_dims[HCGP_DIMS_MAX + 1];
};

/* Called once per rejected argument with a complete sentence (no prefix). */
typedef void (*hcgp_args_report_fn)(void *arg, const char *message);

void hcgp_args_defaults(struct hcgp_args *args);

/* Parses argv[0 .. argc-1]. Every argument is checked; a rejected one leaves
 * that setting at its default and is reported through `report` (which may
 * be NULL). Returns the number of rejected arguments (0: all good). */
int hcgp_args_parse(struct hcgp_args *args, int argc, char *const argv[],
                    hcgp_args_report_fn report, void *report_arg);

#endif /* HCGP_ARGS_H */
