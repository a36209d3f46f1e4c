/*
 * reference.h - facts of the layout language that the documentation
 * repeats, kept once in the code that applies them: the grammar beside the
 * parser (parse.c), the fields beside the collection (collection.c). The
 * hcg command prints them (`hcg help grammar`, `hcg help fields`) and
 * tests/cli/facts.bats holds the README, the man pages, doc/, hcg.h and
 * the Python binding to what it prints.
 */
#ifndef HCG_CORE_REFERENCE_H
#define HCG_CORE_REFERENCE_H

#include "hcg.h"

/* The layout language's grammar, one rule per line, each ending in '\n'. */
extern const char hcg__layout_grammar[];

/* The view a field's groups come from: "expert", or "" for the grid's base
 * factorization. NULL for a field out of range. */
const char *hcg__field_view(enum hcg_field field);

/* The dims a field names, NULL-terminated (empty for intra_dist_opt, which
 * takes every dim of the base); NULL for a field out of range. */
const char *const *hcg__field_dims(enum hcg_field field);

#endif
