/*
 * bridge.c - how an encoder grid (src) hands activations to the language
 * grid (dest).
 *
 * Colocated (same ranks): a rank's position in a grid is (dp, tp); the side
 * with the larger dp gathers `scale` consecutive dp positions of one tp (and
 * cp) index into a group. Those groups are the canonical groups of a dp dim
 * split into (inner = scale, outer = dp/scale), with only the inner part
 * varying, so they come out sorted by first member and each costs O(dims).
 *
 * Non-colocated (disjoint ranks): one leader per (dp, gtp_remat) lane, the
 * lane's last rank on the src side and its first on the dest side; leaders
 * pair up by the ratio of their counts.
 */
#include <string.h>

#include "internal.h"

static int dim_size_or_1(const struct hcg_view *v, const char *name) {
  int d = hcg__find_dim(v, name);
  return d >= 0 ? v->dims[d].size : 1;
}

/* Dims of size > 1 other than those allowed would spread a position over
 * several ranks; refuse them by name. */
static int check_only(const struct hcg_grid *g, const char *const *allowed,
                      const char *role, hcg_error *err) {
  const struct hcg_view *v = &g->views[0];
  for (int d = 0; d < v->ndims; d++) {
    int ok = v->dims[d].size == 1;
    for (int a = 0; allowed[a] && !ok; a++)
      ok = strcmp(v->dims[d].name, allowed[a]) == 0;
    if (!ok)
      return hcg__fail(err, HCG_EBRIDGE,
                       "%s grid '%s' has dim '%s' of size %d; a colocated "
                       "bridge allows only tp and dp%s to exceed 1",
                       role, g->name, v->dims[d].name, v->dims[d].size,
                       allowed[2] ? " (and cp on the dest side)" : "");
  }
  return HCG_OK;
}

static int make_colocated(const hcg_layout *L, hcg_bridge *b, hcg_error *err) {
  const struct hcg_grid *S = &L->grids[b->src], *D = &L->grids[b->dest];
  const struct hcg_grid *both[2] = {S, D};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++) {
      const char *need = k ? "dp" : "tp";
      if (hcg__find_dim(&both[i]->views[0], need) < 0)
        return hcg__fail(err, HCG_EBRIDGE,
                         "%s grid '%s' has no '%s' dim; a colocated bridge "
                         "needs tp and dp in both grids",
                         i ? "dest" : "src", both[i]->name, need);
    }
  static const char *const src_ok[] = {"tp", "dp", NULL};
  static const char *const dest_ok[] = {"tp", "dp", "cp", NULL};
  int rc;
  if ((rc = check_only(S, src_ok, "src", err)) ||
      (rc = check_only(D, dest_ok, "dest", err)))
    return rc;
  const struct hcg_view *dv = &D->views[0];
  b->dest_cp = dim_size_or_1(dv, "cp");
  if (b->dest_cp > 1 && hcg__find_dim(dv, "cp") > hcg__find_dim(dv, "dp"))
    return hcg__fail(err, HCG_EBRIDGE,
                     "dest grid '%s' has cp=%d listed after dp; with cp > 1 "
                     "the bridge needs cp before dp",
                     D->name, b->dest_cp);
  int sdp = dim_size_or_1(&S->views[0], "dp"), ddp = dim_size_or_1(dv, "dp");
  int big = sdp > ddp ? sdp : ddp, small = sdp > ddp ? ddp : sdp;
  if (big % small)
    return hcg__fail(err, HCG_EBRIDGE,
                     "src grid '%s' has dp=%d and dest grid '%s' dp=%d; one "
                     "must divide the other",
                     S->name, sdp, D->name, ddp);
  b->scale = big / small;
  b->kind = sdp > ddp   ? HCG_BRIDGE_FAN_IN
            : sdp < ddp ? HCG_BRIDGE_FAN_OUT
                        : HCG_BRIDGE_PASSTHROUGH;
  return HCG_OK;
}

/* Lanes of a grid: the groups of every base dim but dp and gtp_remat. */
static void lane_request(const hcg_layout *L, int grid, hcg_request *req) {
  const struct hcg_view *v = &L->grids[grid].views[0];
  req->grid = grid;
  req->view = 0;
  req->dims = 0;
  for (int d = 0; d < v->ndims; d++)
    if (strcmp(v->dims[d].name, "dp") && strcmp(v->dims[d].name, "gtp_remat"))
      req->dims |= 1u << d;
}

static int make_noncolocated(const hcg_layout *L, hcg_bridge *b,
                             hcg_error *err) {
  hcg_request req;
  lane_request(L, b->src, &req);
  b->src_lanes = hcg_request_num_groups(L, &req);
  lane_request(L, b->dest, &req);
  b->dest_lanes = hcg_request_num_groups(L, &req);
  int ns = b->src_lanes, nd = b->dest_lanes;
  int big = ns > nd ? ns : nd, small = ns > nd ? nd : ns;
  if (big % small)
    return hcg__fail(err, HCG_EBRIDGE,
                     "src grid '%s' has %d (dp, gtp_remat) lanes and dest "
                     "grid '%s' %d; one count must divide the other",
                     L->grids[b->src].name, ns, L->grids[b->dest].name, nd);
  b->scale = big / small;
  b->kind = ns > nd   ? HCG_BRIDGE_FAN_IN
            : ns < nd ? HCG_BRIDGE_FAN_OUT
                      : HCG_BRIDGE_PASSTHROUGH;
  return HCG_OK;
}

int hcg_bridge_make(const hcg_layout *L, int src, int dest, hcg_bridge *out,
                    hcg_error *err) {
  if (!hcg__valid_grid(L, src) || !hcg__valid_grid(L, dest) || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_bridge_make");
  if (src == dest)
    return hcg__fail(err, HCG_EBRIDGE, "grid '%s' cannot bridge to itself",
                     L->grids[src].name);
  const struct hcg_grid *S = &L->grids[src], *D = &L->grids[dest];
  hcg_bridge b;
  memset(&b, 0, sizeof b);
  b.src = src;
  b.dest = dest;
  b.scale = 1;
  b.dest_cp = 1;
  int rc;
  if (S->offset == D->offset && S->size == D->size) {
    b.colocated = 1;
    rc = make_colocated(L, &b, err);
  } else {
    rc = make_noncolocated(L, &b, err);
  }
  if (rc)
    return rc;
  *out = b;
  return HCG_OK;
}

const char *hcg_bridge_kind_name(enum hcg_bridge_kind kind) {
  switch (kind) {
  case HCG_BRIDGE_PASSTHROUGH:
    return "passthrough";
  case HCG_BRIDGE_FAN_IN:
    return "fan-in";
  case HCG_BRIDGE_FAN_OUT:
    return "fan-out";
  default:
    return NULL;
  }
}

/* ---- colocated gather groups ------------------------------------------- */

/* The larger-dp side, whose dp positions the gather groups span. */
static const struct hcg_grid *gather_side(const hcg_layout *L,
                                          const hcg_bridge *b) {
  if (!L || !b || !b->colocated || !hcg__valid_grid(L, b->src) ||
      !hcg__valid_grid(L, b->dest) || b->scale < 1)
    return NULL;
  return &L->grids[b->kind == HCG_BRIDGE_FAN_IN ? b->src : b->dest];
}

int hcg_bridge_num_groups(const hcg_layout *L, const hcg_bridge *b) {
  const struct hcg_grid *g = gather_side(L, b);
  if (!g || b->kind == HCG_BRIDGE_PASSTHROUGH)
    return 0;
  return g->size / b->scale;
}

static int write_group(const struct hcg_dim *dp, int first, int scale, int *out,
                       int cap, int *n) {
  if (!out || !n)
    return HCG_EINVAL;
  if (cap < scale)
    return HCG_ERANGE;
  for (int j = 0; j < scale; j++)
    out[j] = first + j * dp->stride;
  *n = scale;
  return HCG_OK;
}

int hcg_bridge_group_at(const hcg_layout *L, const hcg_bridge *b, int ordinal,
                        int *out, int cap, int *n) {
  const struct hcg_grid *g = gather_side(L, b);
  if (!g)
    return HCG_EINVAL;
  if (ordinal < 0 || ordinal >= hcg_bridge_num_groups(L, b))
    return HCG_ERANGE;
  const struct hcg_view *v = &g->views[0];
  int dp = hcg__find_dim(v, "dp");
  int first = g->offset, rest = ordinal;
  for (int d = 0; d < v->ndims; d++) {
    int radix = d == dp ? v->dims[d].size / b->scale : v->dims[d].size;
    int digit = rest % radix;
    rest /= radix;
    first += digit * v->dims[d].stride * (d == dp ? b->scale : 1);
  }
  return write_group(&v->dims[dp], first, b->scale, out, cap, n);
}

int hcg_bridge_group_of_rank(const hcg_layout *L, const hcg_bridge *b, int rank,
                             int *out, int cap, int *n) {
  const struct hcg_grid *g = gather_side(L, b);
  if (!g)
    return HCG_EINVAL;
  if (b->kind == HCG_BRIDGE_PASSTHROUGH ||
      !hcg_grid_contains(L, (int)(g - L->grids), rank))
    return HCG_ENOTMEMBER;
  const struct hcg_dim *dp =
      &g->views[0].dims[hcg__find_dim(&g->views[0], "dp")];
  int c = ((rank - g->offset) / dp->stride) % dp->size;
  return write_group(dp, rank - (c % b->scale) * dp->stride, b->scale, out, cap,
                     n);
}

int hcg_bridge_batch_slice(const hcg_layout *L, const hcg_bridge *b, int rank,
                           long long batch, long long *start, long long *len,
                           hcg_error *err) {
  const struct hcg_grid *g = gather_side(L, b);
  if (!g || !start || !len || batch < 0)
    return hcg__fail(err, HCG_EINVAL,
                     "invalid argument to hcg_bridge_batch_slice");
  if (!hcg_grid_contains(L, (int)(g - L->grids), rank))
    return hcg__fail(err, HCG_ENOTMEMBER, "rank %d is not in grid '%s'", rank,
                     g->name);
  if (batch % b->scale)
    return hcg__fail(err, HCG_EBRIDGE,
                     "batch %lld is not divisible by the bridge's scale %d",
                     batch, b->scale);
  const struct hcg_dim *dp =
      &g->views[0].dims[hcg__find_dim(&g->views[0], "dp")];
  int slot = ((rank - g->offset) / dp->stride) % dp->size % b->scale;
  *len = batch / b->scale;
  *start = slot * *len;
  return HCG_OK;
}

/* ---- non-colocated leaders --------------------------------------------- */

int hcg_bridge_leader(const hcg_layout *L, const hcg_bridge *b, int side,
                      int lane) {
  if (!L || !b || b->colocated || (side != 0 && side != 1) ||
      !hcg__valid_grid(L, b->src) || !hcg__valid_grid(L, b->dest))
    return -1;
  hcg_request req;
  hcg_group grp;
  lane_request(L, side ? b->dest : b->src, &req);
  if (hcg_group_at(L, &req, lane, &grp) != HCG_OK)
    return -1;
  return side ? grp.first : hcg_group_member(L, &grp, grp.size - 1);
}

int hcg_bridge_targets(const hcg_layout *L, const hcg_bridge *b, int src_lane,
                       int *first, int *count) {
  if (!L || !b || b->colocated || !first || !count || b->scale < 1)
    return HCG_EINVAL;
  if (src_lane < 0 || src_lane >= b->src_lanes)
    return HCG_ERANGE;
  if (b->kind == HCG_BRIDGE_FAN_OUT) {
    *first = src_lane * b->scale;
    *count = b->scale;
  } else {
    *first = b->kind == HCG_BRIDGE_FAN_IN ? src_lane / b->scale : src_lane;
    *count = 1;
  }
  return HCG_OK;
}
