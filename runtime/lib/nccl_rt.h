/*
 * nccl_rt.h - libhcg's view of NCCL: the oldest release it supports, the
 * release in which each ncclConfig_t field it sets appeared, and the pure
 * mapping of hcg_comm_options onto an ncclConfig_t (nccl.c).
 *
 * Include it only where NCCL is available (HCG_HAVE_NCCL).
 */
#ifndef HCG_NCCL_RT_H
#define HCG_NCCL_RT_H

/* nccl.h declares some functions without prototypes, e.g. ncclGroupStart(). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <nccl.h>
#pragma GCC diagnostic pop

#include "rt.h"

/* NCCL_VERSION_CODE values (major * 10000 + minor * 100 + patch). 2.18 is
 * the first release with ncclConfig_t.splitShare, the newest field that
 * hcg sets unconditionally. */
#define HCGRT_NCCL_MIN 21800
#define HCGRT_NCCL_TRAFFIC_CLASS 22600 /* ncclConfig_t.trafficClass   */
#define HCGRT_NCCL_COMM_NAME 22700     /* ncclConfig_t.commName       */
#define HCGRT_NCCL_COLLNET 22700       /* ncclConfig_t.collnetEnable  */
#define HCGRT_NCCL_64_CHANNELS 22500   /* MAXCHANNELS went 32 -> 64   */
#define HCGRT_NCCL_SCALABLE 22300      /* ncclCommInitRankScalable    */

#if !defined(NCCL_VERSION_CODE) || NCCL_VERSION_CODE < HCGRT_NCCL_MIN
#error "libhcg needs NCCL 2.18.0 or newer (nccl.h's NCCL_VERSION_CODE)"
#endif

/* NCCL's channel limit, which is also its default maxCTAs, in a library of
 * `version` (an NCCL_VERSION_CODE). */
int hcgrt_nccl_max_channels(int version);

/* "2.27.3" for 22703, into buf. */
const char *hcgrt_nccl_version_text(int version, char *buf, size_t cap);

/* Applies the options that are set (not at their HCG_COMM_OPTIONS_INIT
 * value) to cfg, which holds NCCL_CONFIG_INITIALIZER as possibly changed by
 * the caller's callback; net_name is the string to point netName at (NULL:
 * leave it). Only those fields are written, besides maxCTAs when min_ctas
 * is set without max_ctas: NCCL compares minCTAs with maxCTAs before it
 * fills in its defaults, so maxCTAs then gets NCCL's default, the channel
 * limit of the library (`version`, from ncclGetVersion).
 *
 * Errors, with the message naming the option: HCG_ENOTSUP for an option
 * whose field the compiled nccl.h or the library of `version` lacks (it is
 * never silently dropped); HCG_EINVAL when minCTAs would exceed maxCTAs.
 * Pure: no NCCL or CUDA call, so it runs on any machine. */
int hcgrt_nccl_apply_options(ncclConfig_t *cfg, const hcg_comm_options *o,
                             const char *net_name, int version, hcg_error *err);

/* 1 when both this nccl.h and the library of `version` have
 * ncclCommInitRankScalable (2.23+): then a group cut into slices by the
 * exchange (more than hcg_ctx's fan-in bound of members) forms its
 * communicator from one id per slice. */
int hcgrt_nccl_scalable(int version);

/* Points commName at `name` where this nccl.h has the field (2.27+). */
void hcgrt_nccl_set_comm_name(ncclConfig_t *cfg, const char *name);
/* cfg's commName, or NULL where nccl.h lacks it. */
const char *hcgrt_nccl_comm_name(const ncclConfig_t *cfg);

/* NCCL's last-error text now, to tell later whether it changed. */
#define HCGRT_NCCL_MARK 1024
void hcgrt_nccl_mark(char *mark, size_t cap);
/* `code` with "WHAT: <ncclGetErrorString(r)>", plus " (<ncclGetLastError>)"
 * only when that text differs from `mark` (NULL: from nothing). */
int hcgrt_nccl_fail(hcg_error *err, int code, ncclResult_t r, const char *mark,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

#endif /* HCG_NCCL_RT_H */
