/*
 * test_nccl_config.c - what of hcg_comm_options reaches NCCL, for every
 * combination of options, NCCL library versions and callback presets,
 * checked field by field against an independent statement of the rules
 * (doc/runtime.md, "Options"). No GPU: the mapping makes no NCCL call.
 * Also: NCCL's last-error text is added to a message only when fresh.
 */
#include "config.h"

#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hcg.h"
#include "nccl_rt.h"

#define UNDEF NCCL_CONFIG_UNDEF_INT

static const int highs[] = {0, 1};
static const int mins[] = {HCG_UNSET, 1, 4, 33, 65};
static const int maxs[] = {HCG_UNSET, 2, 32, 64};
static const int cgas[] = {HCG_UNSET, 4};
static const int tris[] = {HCG_UNSET, 0, 1};
static const int classes[] = {HCG_UNSET, 0, 5};
static const char *const nets[] = {NULL, "Socket"};
/* Library versions either side of each boundary. */
static const int versions[] = {21800, 22406, 22500, 22603, 22700, 22809};
/* What a callback may have set before the options apply. */
enum { PRESET_NONE, PRESET_MAX16, PRESET_MIN8, PRESET_COUNT };

#define N(a) ((int)(sizeof(a) / sizeof(a)[0]))
/* ck_assert_msg records a mark point per call (a message to the runner),
 * which would dominate 77,760 cases: check first, report only on failure,
 * and describe the case only then. */
#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond))                                                               \
      ck_abort_msg(__VA_ARGS__);                                               \
  } while (0)

struct expect {
  int rc;
  const char *words[3]; /* in the message */
  ncclConfig_t cfg;
};

/* The rules, restated from the documentation rather than the code. */
static void expected(const hcg_comm_options *o, int version, int preset,
                     const ncclConfig_t *before, struct expect *e) {
  memset(e, 0, sizeof *e);
  e->cfg = *before;
  if (o->traffic_class >= 0 && version < 22600) {
    e->rc = HCG_ENOTSUP;
    e->words[0] = "traffic_class";
    e->words[1] = "2.26.0";
    return;
  }
  if (o->collnet_enable >= 0 && version < 22700) {
    e->rc = HCG_ENOTSUP;
    e->words[0] = "collnet_enable";
    e->words[1] = "2.27.0";
    return;
  }
  int limit = version >= 22500 ? 64 : 32;
  int min = o->min_ctas > 0 ? o->min_ctas : (preset == PRESET_MIN8 ? 8 : UNDEF);
  int max =
      o->max_ctas > 0 ? o->max_ctas : (preset == PRESET_MAX16 ? 16 : UNDEF);
  if (min != UNDEF && max == UNDEF) {
    if (min > limit) {
      e->rc = HCG_EINVAL;
      e->words[0] = "min_ctas";
      e->words[1] = "channel limit";
      e->words[2] = limit == 64 ? "64" : "32";
      return;
    }
    max = limit;
  }
  if (min != UNDEF && max != UNDEF && min > max) {
    e->rc = HCG_EINVAL;
    e->words[0] = "min_ctas";
    e->words[1] = "max_ctas";
    return;
  }
  e->cfg.minCTAs = min;
  e->cfg.maxCTAs = max;
  if (o->cga_cluster_size > 0)
    e->cfg.cgaClusterSize = o->cga_cluster_size;
  if (o->split_share >= 0)
    e->cfg.splitShare = o->split_share;
  if (o->collnet_enable >= 0)
    e->cfg.collnetEnable = o->collnet_enable;
  if (o->traffic_class >= 0)
    e->cfg.trafficClass = o->traffic_class;
  if (o->net_name)
    e->cfg.netName = o->net_name;
}

/* The case being checked, described only when a check fails. */
static hcg_comm_options cur_o;
static int cur_version, cur_preset;

static const char *what_now(void) {
  static char buf[256];
  snprintf(buf, sizeof buf,
           "hp %d min %d max %d cga %d split %d collnet %d tc %d net %s "
           "version %d preset %d",
           cur_o.high_priority, cur_o.min_ctas, cur_o.max_ctas,
           cur_o.cga_cluster_size, cur_o.split_share, cur_o.collnet_enable,
           cur_o.traffic_class, cur_o.net_name ? cur_o.net_name : "-",
           cur_version, cur_preset);
  return buf;
}

static void same_config(const ncclConfig_t *got, const ncclConfig_t *want) {
  /* Every field NCCL 2.28 reads, one by one, so a failure names it. */
  CHECK(got->size == want->size, "%s: size", what_now());
  CHECK(got->magic == want->magic, "%s: magic", what_now());
  CHECK(got->version == want->version, "%s: version", what_now());
  CHECK(got->blocking == want->blocking, "%s: blocking", what_now());
  CHECK(got->cgaClusterSize == want->cgaClusterSize,
        "%s: cgaClusterSize %d, want %d", what_now(), got->cgaClusterSize,
        want->cgaClusterSize);
  CHECK(got->minCTAs == want->minCTAs, "%s: minCTAs %d, want %d", what_now(),
        got->minCTAs, want->minCTAs);
  CHECK(got->maxCTAs == want->maxCTAs, "%s: maxCTAs %d, want %d", what_now(),
        got->maxCTAs, want->maxCTAs);
  CHECK(got->netName == want->netName, "%s: netName", what_now());
  CHECK(got->splitShare == want->splitShare, "%s: splitShare %d", what_now(),
        got->splitShare);
  CHECK(got->trafficClass == want->trafficClass, "%s: trafficClass %d",
        what_now(), got->trafficClass);
  CHECK(got->commName == want->commName, "%s: commName", what_now());
  CHECK(got->collnetEnable == want->collnetEnable, "%s: collnetEnable %d",
        what_now(), got->collnetEnable);
  CHECK(got->CTAPolicy == want->CTAPolicy, "%s: CTAPolicy", what_now());
  CHECK(got->shrinkShare == want->shrinkShare, "%s: shrinkShare", what_now());
  CHECK(got->nvlsCTAs == want->nvlsCTAs, "%s: nvlsCTAs", what_now());
  CHECK(got->nChannelsPerNetPeer == want->nChannelsPerNetPeer,
        "%s: nChannelsPerNetPeer", what_now());
  CHECK(got->nvlinkCentricSched == want->nvlinkCentricSched,
        "%s: nvlinkCentricSched", what_now());
}

START_TEST(test_every_combination) {
  long long cases = 0, refused = 0;
  for (int a = 0; a < N(highs); a++)
    for (int b = 0; b < N(mins); b++)
      for (int c = 0; c < N(maxs); c++)
        for (int d = 0; d < N(cgas); d++)
          for (int f = 0; f < N(tris); f++)
            for (int g = 0; g < N(tris); g++)
              for (int h = 0; h < N(classes); h++)
                for (int k = 0; k < N(nets); k++)
                  for (int v = 0; v < N(versions); v++)
                    for (int p = 0; p < PRESET_COUNT; p++) {
                      hcg_comm_options o = HCG_COMM_OPTIONS_INIT;
                      o.high_priority = highs[a];
                      o.min_ctas = mins[b];
                      o.max_ctas = maxs[c];
                      o.cga_cluster_size = cgas[d];
                      o.split_share = tris[f];
                      o.collnet_enable = tris[g];
                      o.traffic_class = classes[h];
                      o.net_name = nets[k];
                      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
                      static const char name[] = "llm:tp";
                      cfg.commName = name; /* what hcg_comm_create sets */
                      if (p == PRESET_MAX16)
                        cfg.maxCTAs = 16;
                      if (p == PRESET_MIN8)
                        cfg.minCTAs = 8;
                      ncclConfig_t before = cfg;
                      struct expect e;
                      expected(&o, versions[v], p, &before, &e);
                      hcg_error err = HCG_ERROR_INIT;
                      int rc = hcgrt_nccl_apply_options(&cfg, &o, o.net_name,
                                                        versions[v], &err);
                      cur_o = o;
                      cur_version = versions[v];
                      cur_preset = p;
                      CHECK(rc == e.rc, "%s: rc %d, want %d (%s)", what_now(),
                            rc, e.rc, err.message);
                      for (int w = 0; w < 3 && e.words[w]; w++)
                        CHECK(strstr(err.message, e.words[w]),
                              "%s: '%s' not in '%s'", what_now(), e.words[w],
                              err.message);
                      /* A refused config is left as it was. */
                      same_config(&cfg, rc ? &before : &e.cfg);
                      if (!rc) {
                        /* minCTAs alone never reaches NCCL without a
                         * maxCTAs that admits it. */
                        CHECK(cfg.minCTAs == UNDEF ||
                                  (cfg.maxCTAs != UNDEF &&
                                   cfg.minCTAs <= cfg.maxCTAs),
                              "%s", what_now());
                      }
                      refused += rc != 0;
                      cases++;
                    }
  ck_assert_int_eq(cases, 2LL * 5 * 4 * 2 * 3 * 3 * 3 * 2 * 6 * 3);
  ck_assert(refused > 0 && refused < cases);
}
END_TEST

START_TEST(test_messages_name_versions) {
  hcg_comm_options o = HCG_COMM_OPTIONS_INIT;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  hcg_error err = HCG_ERROR_INIT;
  o.traffic_class = 3;
  ck_assert_int_eq(hcgrt_nccl_apply_options(&cfg, &o, NULL, 22503, &err),
                   HCG_ENOTSUP);
  ck_assert_str_eq(err.message,
                   "hcg_comm_options.traffic_class needs "
                   "ncclConfig_t.trafficClass, which NCCL has since 2.26.0; "
                   "the NCCL library in use is 2.25.3");
  o = (hcg_comm_options)HCG_COMM_OPTIONS_INIT;
  o.min_ctas = 40;
  ck_assert_int_eq(hcgrt_nccl_apply_options(&cfg, &o, NULL, 22400, &err),
                   HCG_EINVAL);
  CHECK(strstr(err.message, "min_ctas 40") &&
            strstr(err.message, "channel limit 32") &&
            strstr(err.message, "max_ctas"),
        "%s", err.message);
  ck_assert_int_eq(hcgrt_nccl_apply_options(&cfg, &o, NULL, 22809, &err), 0);
  ck_assert_int_eq(cfg.minCTAs, 40);
  ck_assert_int_eq(cfg.maxCTAs, 64);
  ck_assert_int_eq(hcgrt_nccl_max_channels(22406), 32);
  ck_assert_int_eq(hcgrt_nccl_max_channels(22500), 64);
  char buf[32];
  ck_assert_str_eq(hcgrt_nccl_version_text(22809, buf, sizeof buf), "2.28.9");
  ck_assert_str_eq(hcgrt_nccl_version_text(21800, buf, sizeof buf), "2.18.0");
}
END_TEST

START_TEST(test_last_error_only_when_fresh) {
  hcg_error err = HCG_ERROR_INIT;
  char mark[HCGRT_NCCL_MARK];
  /* Nothing recorded yet: no empty "()". */
  hcgrt_nccl_mark(mark, sizeof mark);
  if (!*mark) {
    hcgrt_nccl_fail(&err, HCG_ENCCL, ncclInvalidArgument, NULL, "x failed");
    char want[HCG_ERROR_MAX];
    snprintf(want, sizeof want, "x failed: %s",
             ncclGetErrorString(ncclInvalidArgument));
    ck_assert_str_eq(err.message, want);
  }
  /* A call that fails and records text (no GPU here, or a bad size). */
  ncclComm_t comm = NULL;
  ncclUniqueId id;
  memset(&id, 0, sizeof id);
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclResult_t r = ncclCommInitRankConfig(&comm, 0, id, 0, &cfg);
  ck_assert_int_ne(r, ncclSuccess);
  const char *last = ncclGetLastError(NULL);
  if (last && *last && strcmp(last, mark) != 0) {
    /* Marked before the call: the text belongs to it. */
    hcgrt_nccl_fail(&err, HCG_ENCCL, r, mark, "init failed");
    CHECK(strstr(err.message, last), "%s", err.message);
    CHECK(strstr(err.message, ncclGetErrorString(r)), "%s", err.message);
    /* Marked after it: stale, left out. */
    hcgrt_nccl_mark(mark, sizeof mark);
    hcgrt_nccl_fail(&err, HCG_ENCCL, ncclSystemError, mark, "later failed");
    CHECK(!strstr(err.message, last), "%s", err.message);
    CHECK(strstr(err.message, ncclGetErrorString(ncclSystemError)), "%s",
          err.message);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("nccl-config");
  TCase *t = tcase_create("mapping");
  tcase_add_test(t, test_every_combination);
  tcase_add_test(t, test_messages_name_versions);
  tcase_add_test(t, test_last_error_only_when_fresh);
  tcase_set_timeout(t, 120);
  suite_add_tcase(s, t);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
