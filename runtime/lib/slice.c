/*
 * slice.c - the bounded fan-in's slices: the one arithmetic of who relays
 * for whom (hcg_slice_* in hcg_runtime.h, which hcg.torch calls too), and
 * libhcg's use of its first level (slice.h).
 */
#include "config.h"

#include "slice.h"

/* The members of the level above `count` of them: one head per slice. */
static int above(int count, int slice) {
  return (int)(((long long)count + slice - 1) / slice);
}

static int slice_args_ok(int count, int slice, int index) {
  return count >= 1 && slice >= 2 && index >= 0 && index < count;
}

int hcg_slice_levels(int count, int slice) {
  if (!slice_args_ok(count, slice, 0))
    return -1;
  int levels = 0;
  for (; count > slice; count = above(count, slice))
    levels++;
  return levels;
}

int hcg_slice_route(int count, int slice, int index, int *out, int cap) {
  if (!slice_args_ok(count, slice, index) || cap < 0 || (cap > 0 && !out))
    return -1;
  /* At level k, index's head is index rounded down to a multiple of
   * slice^k (span); past the last level, the leader. A member heading
   * parts on several levels is one stop. */
  long long span = 1;
  int n = 0, last = -1;
  for (int c = count; last != 0; c = above(c, slice)) {
    int head = 0;
    if (c > slice) {
      span *= slice;
      head = (int)(index - index % span);
    }
    if (head != last) {
      if (n < cap)
        out[n] = head;
      n++;
      last = head;
    }
  }
  return n;
}

int hcg_slice_reach(int count, int slice, int index) {
  if (!slice_args_ok(count, slice, index))
    return -1;
  if (index == 0)
    return count;
  /* The largest part it heads: slice^k members from it, for every level
   * k at which it is a head. */
  long long span = 1;
  for (int c = count; c > slice && index % (span * slice) == 0;
       c = above(c, slice))
    span *= slice;
  return span < count - index ? (int)span : count - index;
}

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
  struct hcgrt_slice s = {pos, 0, 0, above(size, f)};
  /* Level 1 of the slices: the first stop of its route. */
  hcg_slice_route(size, f, pos, &s.first, 1);
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
