/*
 * plugstack.h - the SPANK plugin's plugstack.conf arguments, listed once:
 * spank/args.c parses these keys (and names them all when it meets an
 * unknown one), and `hcg help plugstack` prints this table, against which
 * tests/cli/facts.bats checks the README, doc/plugin.md, spank_hcg(8) and
 * etc/'s drop-in. Data only; it lives beside the core rather than in spank/
 * because the hcg command needs it too, also where it is built without the
 * plugin's sources (the Python wheel copies runtime/ alone).
 */
#ifndef HCG_CORE_PLUGSTACK_H
#define HCG_CORE_PLUGSTACK_H

#include "hcg.h"

/* Default bound on the layout a user may give (text or file), in bytes.
 * Generous for any real layout (a dozen grids fit in a few hundred bytes)
 * while keeping every job's environment small. */
#define HCGP_DEFAULT_MAX_BYTES 16384

#define HCGP_STR_(x) #x
#define HCGP_STR(x) HCGP_STR_(x)

/* X(ID, KEY, VALUE, DEFAULT, MEANING), in the order the parser's message
 * lists them. VALUE is the syntax written after "KEY=". */
#define HCGP_ARGS(X)                                                           \
  X(MAX_BYTES, "max_layout_bytes", "N", HCGP_STR(HCGP_DEFAULT_MAX_BYTES),      \
    "the longest layout a user may give, as text or @PATH file (1 "            \
    "to " HCGP_STR(HCG_MAX_LAYOUT_BYTES) ")")                                  \
  X(EXPORT_DIMS, "export_dims", "yes|no", "yes",                               \
    "no: only the six variables every layout has, not the per-dim ones")       \
  X(LANGUAGE, "language", "NAME", "none",                                      \
    "the grid that is the language module of every layout of several grids")   \
  X(INTRA_NODE_DIMS, "intra_node_dims", "DIM[,DIM...]",                        \
    HCG_PLACEMENT_DEFAULT_DIMS,                                                \
    "the dims whose groups should stay inside one node")                       \
  X(PLACEMENT, "placement", "off|warn|refuse", "warn",                         \
    "what a group crossing its node or domain does; --hcg-placement "          \
    "overrides it")                                                            \
  X(INTRA_DOMAIN_DIMS, "intra_domain_dims", "DIM[,DIM...]|none",               \
    HCG_PLACEMENT_DEFAULT_DOMAIN_DIMS,                                         \
    "the dims judged by NVLink domain instead of by node")

#endif
