/*
 * comm.h - the communicators of a context, private to comm*.c and
 * create.c: the structure behind hcg_comm and the context's registry.
 */
#ifndef HCG_COMM_H
#define HCG_COMM_H

#include "rt.h"

struct hcg_comm {
  char key[HCG_KEY_MAX];
  int size;
  int rank;
  char *net_name;  /* kept alive: NCCL keeps pointers to its config's */
  char *comm_name; /* strings (a callback's own commName, netName)    */
  void *nccl;      /* ncclComm_t   */
  void *stream;    /* cudaStream_t */
  int state;       /* ncclResult_t while finalizing */
  int timeout_s;   /* the context's, for hcg_comm_wait */
};

/* The communicator of group `key` in the context, or NULL. */
struct hcg_comm *hcgrt_comm_lookup(const hcg_ctx *ctx, const char *key);
/* Adds v[0..n-1] to the context's registry (HCG_ENOMEM, and none added,
 * without memory). */
int hcgrt_comm_register(hcg_ctx *ctx, struct hcg_comm **v, int n);
void hcgrt_comm_unregister(hcg_ctx *ctx, const struct hcg_comm *c);
/* Frees the structure only (its NCCL communicator and stream are gone). */
void hcgrt_comm_free(struct hcg_comm *c);

#endif /* HCG_COMM_H */
