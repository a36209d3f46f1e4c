/*
 * request.c - naming a set of dims ("llm/expert:ep,expt_tp") and keying it
 * as Megatron-LM's HyperCommGrid does.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

void hcg__resolve_request(const struct hcg_layout *L, hcg_request *req) {
  if (req->view == 0)
    return;
  const struct hcg_view *v = &L->grids[req->grid].views[req->view];
  uint32_t base = 0;
  for (int d = 0; d < v->ndims; d++) {
    if (!(req->dims & (1u << d)))
      continue;
    if (!v->dims[d].shared)
      return; /* a view-private dim: the request stays in the view */
    base |= 1u << v->dims[d].base_dim;
  }
  /* Every dim is shared: the base group is the same group, and keeping one
   * name for it is what lets one communicator serve both. */
  req->view = 0;
  req->dims = base;
}

static void list_dim_names(struct hcg_buf *b, const struct hcg_view *v) {
  for (int d = 0; d < v->ndims; d++)
    hcg__buf_printf(b, "%s%s", d ? ", " : "", v->dims[d].name);
}

int hcg_request_make(const hcg_layout *L, int grid, int view,
                     const char *const *dims, int ndims, hcg_request *out,
                     hcg_error *err) {
  if (!L || !out || ndims < 0 || (ndims && !dims))
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_request_make");
  if (!hcg__valid_grid(L, grid))
    return hcg__fail(err, HCG_ENOTFOUND, "no grid with index %d", grid);
  if (!hcg__valid_view(L, grid, view))
    return hcg__fail(err, HCG_ENOTFOUND, "grid '%s' has no view with index %d",
                     L->grids[grid].name, view);
  const struct hcg_grid *g = &L->grids[grid];
  const struct hcg_view *v = &g->views[view];
  hcg_request req = {grid, view, 0};
  for (int i = 0; i < ndims; i++) {
    if (dims[i] && !dims[i][0])
      return hcg__fail(err, HCG_EINVAL,
                       "an empty dim name in a request for grid '%s' (its "
                       "dims: name them, or none for singletons)",
                       g->name);
    int d = hcg__find_dim(v, dims[i]);
    if (d < 0) {
      char names[512];
      struct hcg_buf nb;
      hcg__buf_init(&nb, names, sizeof names);
      list_dim_names(&nb, v);
      if (view)
        return hcg__fail(err, HCG_ENOTFOUND,
                         "view '%s/%s' has no dim '%.64s' (its dims: %s)",
                         g->name, v->name, dims[i] ? dims[i] : "(null)", names);
      return hcg__fail(err, HCG_ENOTFOUND,
                       "grid '%s' has no dim '%.64s' (its dims: %s)", g->name,
                       dims[i] ? dims[i] : "(null)", names);
    }
    if (req.dims & (1u << d))
      return hcg__fail(err, HCG_EINVAL, "dim '%s' is named twice in a request",
                       dims[i]);
    req.dims |= 1u << d;
  }
  hcg__resolve_request(L, &req);
  *out = req;
  return HCG_OK;
}

/* The quote to show s in: ' unless s holds one ("''" reads better than
 * ''''). */
static char quote_for(const char *s) { return strchr(s, '\'') ? '"' : '\''; }

/* Copies one name of spec (up to any of `stops`) into out; returns the
 * length consumed or -1 if it is too long. */
static int take_name(const char *s, const char *stops, char *out) {
  size_t n = strcspn(s, stops);
  if (n > HCG_MAX_NAME)
    return -1;
  memcpy(out, s, n);
  out[n] = '\0';
  return (int)n;
}

/* The grid and view a spec names ("GRID[/VIEW]:" or nothing, in a
 * one-grid layout), and where its dims start. */
static int spec_grid_view(const hcg_layout *L, const char *spec, int *grid,
                          int *view, const char **dims, hcg_error *err) {
  *grid = *view = 0;
  *dims = spec;
  const char *colon = strchr(spec, ':');
  char gname[HCG_NAME_BUF], vname[HCG_NAME_BUF];
  if (colon) {
    int n = take_name(spec, "/:", gname);
    if (n < 0)
      return hcg__fail(err, HCG_ENOTFOUND, "no such grid in spec '%s'", spec);
    *grid = hcg_layout_find_grid(L, gname);
    if (*grid < 0) {
      char grids[600];
      struct hcg_buf gb;
      hcg__buf_init(&gb, grids, sizeof grids);
      for (int g = 0; g < L->ngrids; g++)
        hcg__buf_printf(&gb, "%s%s", g ? ", " : "", L->grids[g].name);
      return hcg__fail(err, HCG_ENOTFOUND,
                       "spec '%s': no grid named '%s' (grids: %s)", spec, gname,
                       grids);
    }
    if (spec[n] == '/') {
      if (take_name(spec + n + 1, ":", vname) < 0 ||
          (*view = hcg_grid_find_view(L, *grid, vname)) < 0) {
        char views[600];
        struct hcg_buf vb;
        hcg__buf_init(&vb, views, sizeof views);
        for (int v = 0; v < L->grids[*grid].nviews; v++)
          hcg__buf_printf(&vb, "%s%s", v ? ", " : "",
                          L->grids[*grid].views[v].name);
        return hcg__fail(err, HCG_ENOTFOUND,
                         "spec '%s': grid '%s' has no view named '%.*s' "
                         "(views: %s)",
                         spec, gname, (int)(colon - (spec + n + 1)),
                         spec + n + 1, views);
      }
    }
    *dims = colon + 1;
  } else if (L->ngrids != 1 && !spec[strspn(spec, " ")]) {
    return hcg__fail(err, HCG_EINVAL,
                     "the group spec is empty; with several grids name one, "
                     "e.g. '%s:' for its singletons",
                     L->grids[L->language].name);
  } else if (L->ngrids != 1) {
    return hcg__fail(err, HCG_EINVAL,
                     "spec '%s' must name its grid (GRID[/VIEW]:DIMS) when "
                     "the layout has several grids",
                     spec);
  }
  return HCG_OK;
}

/* The dim names of a spec's DIMS part (`dims`, inside `spec`) into
 * store[0..*ndims). */
static int spec_dims(const char *spec, const char *dims,
                     char store[HCG_MAX_DIMS][HCG_NAME_BUF], int *ndims,
                     hcg_error *err) {
  *ndims = 0;
  while (*dims == ' ')
    dims++;
  while (*dims) {
    if (*ndims == HCG_MAX_DIMS)
      return hcg__fail(err, HCG_ELIMIT, "spec '%s' names more than %d dims",
                       spec, HCG_MAX_DIMS);
    char *name = store[*ndims];
    int n = take_name(dims, ",- ", name);
    if (n <= 0)
      return hcg__fail(err, HCG_EINVAL,
                       "spec '%s': expected a dim name at '%.32s'", spec, dims);
    if (!hcg_name_valid(name)) {
      char q = quote_for(spec), qn = quote_for(name);
      return hcg__fail(err, HCG_EINVAL,
                       "spec %c%s%c: %c%s%c is not a dim name ([a-z][a-z0-9_]*;"
                       " an empty spec means singletons)",
                       q, spec, q, qn, name, qn);
    }
    (*ndims)++;
    dims += n;
    while (*dims == ' ')
      dims++;
    /* ',' between dims, or '-' as in a group key, so that every key
     * ("llm:cp-tp") is also a spec naming the same groups. */
    if (*dims == ',' || *dims == '-') {
      dims++;
      while (*dims == ' ')
        dims++;
      if (!*dims)
        return hcg__fail(err, HCG_EINVAL, "spec '%s' ends with a separator",
                         spec);
    }
  }
  return HCG_OK;
}

int hcg_request_parse(const hcg_layout *L, const char *spec, hcg_request *out,
                      hcg_error *err) {
  if (!L || !spec || !out)
    return hcg__fail(err, HCG_EINVAL, "invalid argument to hcg_request_parse");
  if (strlen(spec) > HCG_KEY_MAX)
    return hcg__fail(err, HCG_ELIMIT, "group spec is longer than %d bytes",
                     HCG_KEY_MAX);
  int grid, view, ndims, rc;
  const char *dims;
  char store[HCG_MAX_DIMS][HCG_NAME_BUF];
  if ((rc = spec_grid_view(L, spec, &grid, &view, &dims, err)) ||
      (rc = spec_dims(spec, dims, store, &ndims, err)))
    return rc;
  const char *names[HCG_MAX_DIMS];
  for (int d = 0; d < ndims; d++)
    names[d] = store[d];
  return hcg_request_make(L, grid, view, names, ndims, out, err);
}

int hcg_request_key(const hcg_layout *L, const hcg_request *req, char *buf,
                    size_t cap) {
  const struct hcg_view *v = req ? hcg__view(L, req->grid, req->view) : NULL;
  if (!v || !buf)
    return HCG_EINVAL;
  const struct hcg_grid *g = &L->grids[req->grid];
  struct hcg_buf b;
  hcg__buf_init(&b, buf, cap);
  hcg__buf_puts(&b, g->name);
  if (req->view)
    hcg__buf_printf(&b, "/%s", v->name);
  hcg__buf_puts(&b, ":");
  /* Megatron orders a key's dims by descending position in the dim list. */
  int first = 1;
  for (int d = v->ndims - 1; d >= 0; d--) {
    if (!(req->dims & (1u << d)))
      continue;
    if (!first)
      hcg__buf_puts(&b, "-");
    hcg__buf_puts(&b, v->dims[d].name);
    first = 0;
  }
  return hcg__buf_truncated(&b) ? HCG_ERANGE : HCG_OK;
}
