/*
 * fuzz_layout.c - libFuzzer target for the layout parser, the validator and
 * everything computed from a valid layout.
 *
 * Input: "<world>\n<layout>[\x01<spec>]". A first line that is not a number
 * means "derive the world from the layout". On success, checks invariants:
 * the canonical text parses back to itself; a rank's group holds it at its
 * index; a group's ordinal finds the same group; the odometer and the
 * per-member formula agree; fields, embedding groups, stages, bridges and the
 * environment walk run clean. On failure, the error is well formed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hcg.h"

static int count_env(void *arg, const char *name, const char *value) {
  CHECK(name && value && strncmp(name, "HCG_", 4) == 0);
  ++*(int *)arg;
  return 0;
}

static void check_group(const hcg_layout *L, const hcg_request *req, int rank) {
  hcg_group g, at;
  int rc = hcg_group_of_rank(L, req, rank, &g);
  if (rc == HCG_ENOTMEMBER)
    return;
  CHECK(rc == HCG_OK);
  CHECK(g.size == hcg_request_group_size(L, req));
  CHECK(hcg_group_member(L, &g, g.index) == rank);
  CHECK(hcg_group_member(L, &g, 0) == g.first);
  CHECK(hcg_group_at(L, req, g.ordinal, &at) == HCG_OK);
  CHECK(at.first == g.first && at.size == g.size);
  if (g.size <= 4096) {
    static int members[4096];
    CHECK(hcg_group_members(L, &g, members, 4096) == HCG_OK);
    for (int i = 0; i < g.size; i++) {
      CHECK(members[i] == hcg_group_member(L, &g, i));
      CHECK(i == 0 || members[i] > members[i - 1]);
    }
  }
  char key[HCG_KEY_MAX];
  CHECK(hcg_request_key(L, req, key, sizeof key) == HCG_OK);
}

static void exercise(const hcg_layout *L, uint32_t seed, const char *spec) {
  int world = hcg_layout_world_size(L);
  CHECK(world > 0);
  int ranks[3] = {0, world - 1, (int)(seed % (uint32_t)world)};
  for (int k = 0; k < 3; k++) {
    int r = ranks[k], nvars = 0;
    CHECK(hcg_rank_env(L, r, count_env, &nvars) == HCG_OK);
    CHECK(nvars >= 6);
    int in_some = 0;
    for (int g = 0; g < hcg_layout_num_grids(L); g++) {
      if (!hcg_grid_contains(L, g, r))
        continue;
      in_some = 1;
      for (int v = 0; v < hcg_grid_num_views(L, g); v++) {
        int nd = hcg_view_num_dims(L, g, v), c[HCG_MAX_DIMS];
        CHECK(hcg_rank_coords(L, g, v, r, c, HCG_MAX_DIMS) == HCG_OK);
        long long back = hcg_grid_offset(L, g);
        for (int d = 0; d < nd; d++)
          back += (long long)c[d] * hcg_dim_stride(L, g, v, d);
        CHECK(back == r);
        uint32_t masks[3] = {seed & ((1u << nd) - 1), 0, (1u << nd) - 1};
        for (int m = 0; m < 3; m++) {
          hcg_request req = {g, v, masks[m]};
          check_group(L, &req, r);
        }
      }
      for (int f = 0; f < HCG_FIELD_COUNT; f++) {
        hcg_request req;
        int rc = hcg_collection_request(L, g, f, &req);
        CHECK(rc == HCG_OK || rc == HCG_ENOTPROVIDED);
        if (rc == HCG_OK)
          check_group(L, &req, r);
      }
      int first, last;
      CHECK(hcg_rank_stage(L, g, r, &first, &last) == HCG_OK);
    }
    CHECK(in_some);
    int m[2], n;
    for (int kind = 0; kind < 2; kind++) {
      int rc = hcg_embedding_group_of_rank(L, kind, r, m, &n);
      CHECK(rc == HCG_OK || rc == HCG_ENOTMEMBER);
    }
  }
  int lang = hcg_layout_language(L);
  for (int g = 0; g < hcg_layout_num_grids(L); g++) {
    hcg_bridge b;
    hcg_error err = HCG_ERROR_INIT;
    if (g == lang || hcg_bridge_make(L, g, lang, &b, &err) != HCG_OK)
      continue;
    if (b.colocated && b.scale <= 4096) {
      static int members[4096];
      int n;
      int rc = hcg_bridge_group_of_rank(L, &b, ranks[2], members, 4096, &n);
      CHECK(rc == HCG_OK || rc == HCG_ENOTMEMBER);
      long long start, len;
      hcg_bridge_batch_slice(L, &b, ranks[2], 4096, &start, &len, &err);
    } else if (!b.colocated) {
      int first, count;
      CHECK(hcg_bridge_targets(L, &b, 0, &first, &count) == HCG_OK);
      CHECK(hcg_bridge_leader(L, &b, 0, 0) >= 0);
      CHECK(hcg_bridge_leader(L, &b, 1, first) >= 0);
    }
  }
  if (spec) {
    hcg_request req;
    hcg_error err = HCG_ERROR_INIT;
    if (hcg_request_parse(L, spec, &req, &err) == HCG_OK)
      check_group(L, &req, ranks[2]);
    else
      CHECK(err.message[0] && memchr(err.message, 0, sizeof err.message));
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2 * HCG_MAX_LAYOUT_BYTES)
    return 0;
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';

  int world = 0; /* derived from the layout */
  char *text = fuzz_world_prefix(buf, size, &world);
  size_t len = size - (size_t)(text - buf);
  const char *spec = NULL;
  char *sep = memchr(text, '\x01', len);
  if (sep) {
    *sep = '\0';
    spec = sep + 1;
    len = (size_t)(sep - text);
  }
  uint32_t seed = 2166136261u;
  for (size_t i = 0; i < size; i++)
    seed = (seed ^ data[i]) * 16777619u;

  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = world;
  hcg_layout *L = (hcg_layout *)&cfg; /* must be reset to NULL on error */
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_layout_parse(text, len, &cfg, &L, &err);
  if (rc != HCG_OK) {
    CHECK(L == NULL);
    CHECK(err.code == rc);
    CHECK(memchr(err.message, 0, sizeof err.message) != NULL);
    CHECK(err.message[0] != '\0');
    CHECK(strcmp(hcg_strerror(rc), "unknown hcg status") != 0);
  } else {
    const char *canon = hcg_layout_text(L);
    hcg_layout *again = NULL;
    cfg.world_size = hcg_layout_world_size(L);
    CHECK(hcg_layout_parse(canon, strlen(canon), &cfg, &again, &err) == HCG_OK);
    CHECK(strcmp(hcg_layout_text(again), canon) == 0);
    hcg_layout_free(again);
    exercise(L, seed, spec);
    hcg_layout_free(L);
  }
  free(buf);
  return 0;
}
