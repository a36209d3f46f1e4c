/*
 * collection.c - Megatron's ProcessGroupCollection for one grid: which dims
 * each field names, and in which factorization (base or the expert view).
 */
#include <string.h>

#include "internal.h"
#include "reference.h"

enum { BASE = 0, EXPERT = 1 };

struct field_spec {
  const char *name;
  int where;           /* BASE or EXPERT */
  const char *dims[5]; /* NULL-terminated; absent dims count as size 1 */
  int alias;           /* field whose object this one is, or -1 */
};

/* Megatron lists dims fastest first: tp, gtp_remat, cp, dp, pp. The order
 * here is irrelevant to the groups (a request is a set). */
static const struct field_spec fields[HCG_FIELD_COUNT] = {
    [HCG_FIELD_TP] = {"tp", BASE, {"tp"}, -1},
    [HCG_FIELD_CP] = {"cp", BASE, {"cp"}, -1},
    [HCG_FIELD_PP] = {"pp", BASE, {"pp"}, -1},
    [HCG_FIELD_DP] = {"dp", BASE, {"dp"}, -1},
    [HCG_FIELD_DP_CP] = {"dp_cp", BASE, {"dp", "cp"}, -1},
    [HCG_FIELD_TP_CP] = {"tp_cp", BASE, {"tp", "cp"}, -1},
    [HCG_FIELD_MP] = {"mp", BASE, {"tp", "gtp_remat", "pp"}, -1},
    [HCG_FIELD_TP_DP] = {"tp_dp", BASE, {"tp", "gtp_remat", "dp"}, -1},
    [HCG_FIELD_TP_DP_CP] = {"tp_dp_cp",
                            BASE,
                            {"tp", "gtp_remat", "dp", "cp"},
                            -1},
    [HCG_FIELD_DP_CP_GTP_REMAT] = {"dp_cp_gtp_remat",
                                   BASE,
                                   {"gtp_remat", "dp", "cp"},
                                   -1},
    [HCG_FIELD_EP] = {"ep", EXPERT, {"ep"}, -1},
    [HCG_FIELD_EXPT_TP] = {"expt_tp", EXPERT, {"expt_tp"}, -1},
    [HCG_FIELD_EXPT_DP] = {"expt_dp", EXPERT, {"expt_dp"}, -1},
    [HCG_FIELD_TP_EP] = {"tp_ep", EXPERT, {"expt_tp", "ep"}, -1},
    [HCG_FIELD_TP_EP_PP] = {"tp_ep_pp", EXPERT, {"expt_tp", "ep", "pp"}, -1},
    [HCG_FIELD_EXPT_DP_GTP_REMAT] = {"expt_dp_gtp_remat",
                                     EXPERT,
                                     {"expt_gtp_remat", "expt_dp"},
                                     -1},
    [HCG_FIELD_TP_EP_PP_WITH_EGTP_REMAT] = {"tp_ep_pp_with_egtp_remat",
                                            EXPERT,
                                            {"expt_tp", "ep", "expt_gtp_remat",
                                             "pp"},
                                            -1},
    [HCG_FIELD_INTRA_DP_CP] = {"intra_dp_cp",
                               BASE,
                               {"dp", "cp"},
                               HCG_FIELD_DP_CP},
    [HCG_FIELD_INTRA_EXPT_DP] = {"intra_expt_dp",
                                 EXPERT,
                                 {"expt_dp"},
                                 HCG_FIELD_EXPT_DP},
    [HCG_FIELD_INTRA_DIST_OPT] = {"intra_dist_opt", BASE, {NULL}, -1},
};

const char *hcg_field_name(enum hcg_field field) {
  return field >= 0 && field < HCG_FIELD_COUNT ? fields[field].name : NULL;
}

int hcg_field_find(const char *name) {
  if (!name)
    return -1;
  for (int f = 0; f < HCG_FIELD_COUNT; f++)
    if (strcmp(fields[f].name, name) == 0)
      return f;
  return -1;
}

const char *hcg__field_view(enum hcg_field field) {
  if (field < 0 || field >= HCG_FIELD_COUNT)
    return NULL;
  return fields[field].where == EXPERT ? "expert" : "";
}

const char *const *hcg__field_dims(enum hcg_field field) {
  return field >= 0 && field < HCG_FIELD_COUNT ? fields[field].dims : NULL;
}

int hcg_field_alias(enum hcg_field field) {
  return field >= 0 && field < HCG_FIELD_COUNT ? fields[field].alias : -1;
}

int hcg_collection_request(const hcg_layout *L, int grid, enum hcg_field field,
                           hcg_request *out) {
  if (!hcg__valid_grid(L, grid) || field < 0 || field >= HCG_FIELD_COUNT ||
      !out)
    return HCG_EINVAL;
  const struct field_spec *f = &fields[field];
  hcg_request req = {grid, 0, 0};
  if (f->where == EXPERT) {
    req.view = hcg_grid_find_view(L, grid, "expert");
    if (req.view < 0)
      return HCG_ENOTPROVIDED;
  }
  const struct hcg_view *v = &L->grids[grid].views[req.view];
  if (field == HCG_FIELD_INTRA_DIST_OPT) {
    req.dims = v->ndims >= 32 ? ~0u : (1u << v->ndims) - 1;
  } else {
    for (int i = 0; i < 5 && f->dims[i]; i++) {
      int d = hcg__find_dim(v, f->dims[i]);
      if (d >= 0)
        req.dims |= 1u << d;
    }
    if (!req.dims)
      return HCG_ENOTPROVIDED;
  }
  hcg__resolve_request(L, &req);
  *out = req;
  return HCG_OK;
}
