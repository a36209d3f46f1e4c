/*
 * nccl.c - hcg_comm_options as an ncclConfig_t. A pure function, apart
 * from the communicators, so that every combination of options can be
 * checked on a machine without a GPU (tests/runtime/test_nccl_config.c), and
 * compiled against older nccl.h headers (tests/runtime/nccl-compat.sh).
 */
#include "config.h"

#ifdef HCG_HAVE_NCCL

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "nccl_rt.h"

int hcgrt_nccl_max_channels(int version) {
  return version >= HCGRT_NCCL_64_CHANNELS ? 64 : 32;
}

const char *hcgrt_nccl_version_text(int version, char *buf, size_t cap) {
  snprintf(buf, cap, "%d.%d.%d", version / 10000, version / 100 % 100,
           version % 100);
  return buf;
}

/* HCG_ENOTSUP for an option set where NCCL lacks its field: `since` is the
 * release that added it; `compiled` says whether this nccl.h has it. */
static int lacking(hcg_error *err, const char *option, const char *field,
                   int since, int compiled, int version) {
  char want[32], have[32];
  hcgrt_nccl_version_text(since, want, sizeof want);
  if (!compiled)
    return hcg__fail(
        err, HCG_ENOTSUP,
        "hcg_comm_options.%s needs ncclConfig_t.%s, which NCCL "
        "has since %s; this libhcg was compiled against NCCL "
        "%s",
        option, field, want,
        hcgrt_nccl_version_text(NCCL_VERSION_CODE, have, sizeof have));
  return hcg__fail(err, HCG_ENOTSUP,
                   "hcg_comm_options.%s needs ncclConfig_t.%s, which NCCL "
                   "has since %s; the NCCL library in use is %s",
                   option, field, want,
                   hcgrt_nccl_version_text(version, have, sizeof have));
}

int hcgrt_nccl_apply_options(ncclConfig_t *cfg, const hcg_comm_options *o,
                             const char *net_name, int version,
                             hcg_error *err) {
  /* Refuse first, so that a refused config is left as it was. */
  if (o->traffic_class >= 0 && (NCCL_VERSION_CODE < HCGRT_NCCL_TRAFFIC_CLASS ||
                                version < HCGRT_NCCL_TRAFFIC_CLASS))
    return lacking(err, "traffic_class", "trafficClass",
                   HCGRT_NCCL_TRAFFIC_CLASS,
                   NCCL_VERSION_CODE >= HCGRT_NCCL_TRAFFIC_CLASS, version);
  if (o->collnet_enable >= 0 &&
      (NCCL_VERSION_CODE < HCGRT_NCCL_COLLNET || version < HCGRT_NCCL_COLLNET))
    return lacking(err, "collnet_enable", "collnetEnable", HCGRT_NCCL_COLLNET,
                   NCCL_VERSION_CODE >= HCGRT_NCCL_COLLNET, version);
  /* minCTAs set (by an option or the callback) with maxCTAs unset: NCCL
   * would compare it with INT_MIN and refuse; give maxCTAs its default. */
  int limit = hcgrt_nccl_max_channels(version);
  int min = o->min_ctas > 0 ? o->min_ctas : cfg->minCTAs;
  int max = o->max_ctas > 0 ? o->max_ctas : cfg->maxCTAs;
  int fill = min != NCCL_CONFIG_UNDEF_INT && max == NCCL_CONFIG_UNDEF_INT;
  if (fill && min > limit)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options.min_ctas %d exceeds NCCL %d.%d's "
                     "channel limit %d, the default of max_ctas (0): NCCL "
                     "would refuse it",
                     min, version / 10000, version / 100 % 100, limit);
  if (fill)
    max = limit;
  if (min != NCCL_CONFIG_UNDEF_INT && max != NCCL_CONFIG_UNDEF_INT && min > max)
    return hcg__fail(err, HCG_EINVAL,
                     "hcg_comm_options: min_ctas %d > max_ctas %d (options "
                     "and communicator callback together): NCCL would "
                     "refuse it",
                     min, max);

  if (o->min_ctas > 0)
    cfg->minCTAs = o->min_ctas;
  if (o->max_ctas > 0 || fill)
    cfg->maxCTAs = max;
  if (o->cga_cluster_size > 0)
    cfg->cgaClusterSize = o->cga_cluster_size;
  if (o->split_share >= 0)
    cfg->splitShare = o->split_share;
#if NCCL_VERSION_CODE >= HCGRT_NCCL_TRAFFIC_CLASS
  if (o->traffic_class >= 0)
    cfg->trafficClass = o->traffic_class;
#endif
#if NCCL_VERSION_CODE >= HCGRT_NCCL_COLLNET
  if (o->collnet_enable >= 0)
    cfg->collnetEnable = o->collnet_enable;
#endif
  if (net_name)
    cfg->netName = net_name;
  return HCG_OK;
}

int hcgrt_nccl_scalable(int version) {
  return NCCL_VERSION_CODE >= HCGRT_NCCL_SCALABLE &&
         version >= HCGRT_NCCL_SCALABLE;
}

void hcgrt_nccl_set_comm_name(ncclConfig_t *cfg, const char *name) {
#if NCCL_VERSION_CODE >= HCGRT_NCCL_COMM_NAME
  cfg->commName = name;
#else
  (void)cfg;
  (void)name;
#endif
}

const char *hcgrt_nccl_comm_name(const ncclConfig_t *cfg) {
#if NCCL_VERSION_CODE >= HCGRT_NCCL_COMM_NAME
  return cfg->commName;
#else
  (void)cfg;
  return NULL;
#endif
}

/* ---- messages ----------------------------------------------------------- */

void hcgrt_nccl_mark(char *mark, size_t cap) {
  const char *last = ncclGetLastError(NULL);
  snprintf(mark, cap, "%s", last ? last : "");
}

int hcgrt_nccl_fail(hcg_error *err, int code, ncclResult_t r, const char *mark,
                    const char *fmt, ...) {
  char what[HCG_ERROR_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  /* NCCL's last-error text is one buffer for the whole process, written by
   * its threads and never cleared: add it only when it changed since the
   * mark was taken, i.e. when it can belong to this failure. */
  const char *last = ncclGetLastError(NULL);
  int fresh =
      last && *last && (!mark || strncmp(last, mark, HCGRT_NCCL_MARK - 1));
  return hcg__fail(err, code, "%s: %s%s%s", what, ncclGetErrorString(r),
                   fresh ? " (" : "", fresh ? last : "");
}

#endif /* HCG_HAVE_NCCL */
