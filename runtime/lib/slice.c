/*
 * slice.c - the bounded fan-in's slices (slice.h).
 */
#include "config.h"

#include "slice.h"

int hcgrt_world_relayed(int world, int fanin) { return world > fanin; }

int hcgrt_relayed(const hcg_ctx *ctx) {
  return hcgrt_world_relayed(ctx->world, ctx->fanin);
}

int hcgrt_sliced(const hcg_ctx *ctx, const struct hcgrt_item *it) {
  return hcgrt_relayed(ctx) && it->embedding < 0 && it->group.size > ctx->fanin;
}

struct hcgrt_slice hcgrt_slice_of(const hcg_ctx *ctx,
                                  const struct hcgrt_item *it) {
  int f = ctx->fanin, size = it->group.size, pos = it->group.index;
  struct hcgrt_slice s = {pos, pos - pos % f, 0,
                          (int)(((long long)size + f - 1) / f)};
  s.end = s.first + f < size ? s.first + f : size;
  return s;
}

int hcgrt_source(const hcg_ctx *ctx, const struct hcgrt_item *it, int stage) {
  if (!it->member || it->leader == ctx->rank || it->group.size < 2)
    return -1;
  if (stage == 0)
    return it->leader;
  if (!hcgrt_sliced(ctx, it))
    return stage == 1 ? it->leader : -1;
  struct hcgrt_slice s = hcgrt_slice_of(ctx, it);
  if (s.first == 0 || s.pos == s.first) /* the first slice, or a relay */
    return stage == 1 ? it->leader : -1;
  return stage == 2 ? hcg_group_member(ctx->layout, &it->group, s.first) : -1;
}

int hcgrt_nids(const hcg_ctx *ctx, int scalable, const struct hcgrt_item *it) {
  if (!scalable || !hcgrt_sliced(ctx, it))
    return 1;
  return hcgrt_slice_of(ctx, it).heads;
}

int hcgrt_relays(const hcg_ctx *ctx, const struct hcgrt_item *it) {
  if (!it->member || !hcgrt_sliced(ctx, it))
    return 0;
  struct hcgrt_slice s = hcgrt_slice_of(ctx, it);
  return s.pos > 0 && s.pos == s.first;
}
