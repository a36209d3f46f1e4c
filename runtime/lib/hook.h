/*
 * hook.h - the failure-injection hook of hcg_comm_create, for tests only.
 *
 * libhcg has no reader, so nothing in the environment changes what it
 * does. A test build links libhcghook (hook_env.c: test_runtime,
 * hcg-hello-hook), which installs a reader of HCG_TEST_COMM_FAIL=RANK:STAGE
 * (doc/runtime.md): hcg_comm_create then uses no device and no NCCL, counts
 * every group as initialized without making a communicator, and rank RANK fails
 * on purpose before the exchange (prepare) or at NCCL initialization (init).
 * The exchange and the agreement are real, so that a cluster without GPUs
 * can show that every peer of the failed rank learns of it.
 */
#ifndef HCG_HOOK_H
#define HCG_HOOK_H

#include "rt.h"

enum { HCGRT_HOOK_PREPARE, HCGRT_HOOK_INIT };

struct hcgrt_hook {
  int on;           /* no device and no NCCL                           */
  int rank;         /* the rank that fails on purpose ...              */
  int stage;        /* ... at HCGRT_HOOK_PREPARE or HCGRT_HOOK_INIT     */
  const char *name; /* of the hook, for its failure's message       */
};

/* Fills h (all 0 when the hook is not set), or fails for a malformed
 * value. NULL in libhcg; set by a test build before main. */
extern int (*hcgrt_hook_reader)(struct hcgrt_hook *h, hcg_error *err);
/* libhcghook's reader, which it installs when linked. */
int hcgrt_hook_read_env(struct hcgrt_hook *h, hcg_error *err);

#endif /* HCG_HOOK_H */
