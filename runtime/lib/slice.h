/*
 * slice.h - libhcg's use of the bounded fan-in's slices (their arithmetic:
 * hcg_slice_* in hcg_runtime.h, slice.c): in a job of more than F
 * processes (F = ctx->fanin, HCG_FANIN) a group of more than F members is
 * cut into slices of F consecutive members, the first member of each slice
 * its head (the exchange's relay, the agreement's slice head); libhcg uses
 * that first level only. Used by the exchange (exchange.c, bundle.c,
 * blame.c), the agreement (agree.c), the rounds (round.c) and
 * hcg_comm_create (create.c).
 */
#ifndef HCG_SLICE_H
#define HCG_SLICE_H

#include "rt.h"

/* 1 when a job of `world` processes is larger than the fan-in: its
 * exchanges take the relay fence and the agreement's two. Only the job's
 * size decides, so that every process takes the same fences. */
int hcgrt_world_relayed(int world, int fanin);
/* The same for the context's job. */
int hcgrt_relayed(const hcg_ctx *ctx);
/* 1 when a member item's group is cut into slices of ctx->fanin members:
 * a relayed job, not an embedding group, more than ctx->fanin members. */
int hcgrt_sliced(const hcg_ctx *ctx, const struct hcgrt_item *it);

/* Where this rank sits in its item's group, cut into slices. */
struct hcgrt_slice {
  int pos;   /* its index in the group */
  int first; /* the index of its slice's head */
  int end;   /* one past its slice's last index */
  int heads; /* slices in the group */
};
struct hcgrt_slice hcgrt_slice_of(const hcg_ctx *ctx,
                                  const struct hcgrt_item *it);

/* The rank this member fetches the id from at stage 1 (after the exchange's
 * fence) or 2 (after the relay fence), or -1 when none at that stage.
 * Stage 0: from the leader, without relays (hcgrt_ids_get, the naive
 * exchange of bench/exchange_naive.c). */
int hcgrt_source(const hcg_ctx *ctx, const struct hcgrt_item *it, int stage);
/* The NCCL ids of an item: one per slice of a sliced group where the plan
 * asks for them (ncclCommInitRankScalable), else one. Every member
 * derives the same number. */
int hcgrt_nids(const hcg_ctx *ctx, int scalable, const struct hcgrt_item *it);
/* 1 when this rank relays the id of a member item (it heads a slice other
 * than the first). */
int hcgrt_relays(const hcg_ctx *ctx, const struct hcgrt_item *it);

#endif /* HCG_SLICE_H */
