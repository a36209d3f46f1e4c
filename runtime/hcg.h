/*
 * hcg.h - libhcg's public header: include this one.
 *
 * hcg computes the communication groups of Megatron-LM's HyperCommGrid (grids,
 * named views, process-group collections, MIMO roles and bridges) from a
 * layout string, and forms NCCL communicators for them through one PMIx
 * exchange. The API is declared in the six hcg_*.h headers below, one part
 * each, as nccl.h has nccl_net.h beside it; doc/runtime.md ("Conventions of the
 * C API") states the rules every call follows, in short:
 *   - every symbol starts with hcg_ / HCG_; there is no global state;
 *   - a call that can fail returns HCG_OK (0) or an HCG_E* code and, given an
 *     hcg_error *, a full message; nothing aborts the process;
 *   - an accessor says at its declaration what it returns for NULL or an
 *     index out of range;
 *   - config structs start from their *_INIT macro and only grow;
 *   - a layout is immutable and may be read by any number of threads;
 *     a context's thread rules are in hcg_runtime.h.
 */
#ifndef HCG_H
#define HCG_H

#include "hcg_base.h"      /* version, bounds, status codes, hcg_error */
#include "hcg_env.h"       /* a task's HCG_* environment (core) */
#include "hcg_layout.h"    /* layouts, groups, collections, bridges (core) */
#include "hcg_megatron.h"  /* Megatron-LM's parallel arguments (core) */
#include "hcg_placement.h" /* nodes, domains and placement checks (core) */
#include "hcg_runtime.h"   /* contexts, exchanges, NCCL communicators */

#endif /* HCG_H */
