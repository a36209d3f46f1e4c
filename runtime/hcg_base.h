/*
 * hcg_base.h - libhcg's version, bounds, status codes and errors.
 *
 * Included by every other hcg/ header; include hcg.h.
 */
#ifndef HCG_BASE_H
#define HCG_BASE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HCG_VERSION_MAJOR 0
#define HCG_VERSION_MINOR 1
#define HCG_VERSION_PATCH 0

/* Value of HCG_VERSION in a task's environment: the version of the contract
 * between the plugin and the library, not of the package. */
#define HCG_ENV_VERSION 1

/* Value of a config struct's `version` field (see "Config structs"). */
#define HCG_CONFIG_VERSION 1
/* Largest `size` a config struct may claim, in bytes. */
#define HCG_CONFIG_MAX_SIZE 4096
/* The "unset" value of the int fields of hcg_ctx_config and
 * hcg_comm_options. */
#define HCG_UNSET (-1)

/* ---------------------------------------------------------------------------
 * Hard bounds. Hostile input beyond them is refused with HCG_ELIMIT.
 */
#define HCG_MAX_LAYOUT_BYTES 65536 /* layout text, comments included */
#define HCG_MAX_GRIDS 16           /* grids (modules) in one layout */
#define HCG_MAX_VIEWS 8            /* named views per grid, besides base */
#define HCG_MAX_DIMS 16            /* dims of one grid or view */
#define HCG_MAX_NAME 32            /* characters of a grid/view/dim name */
#define HCG_MAX_WORLD 2147483647   /* ranks in a world */
#define HCG_ERROR_MAX 1024         /* bytes of hcg_error.message */
#define HCG_KEY_MAX 640            /* bytes of a group key, NUL included */

/* ---------------------------------------------------------------------------
 * Status codes and errors
 */
enum hcg_status {
  HCG_OK = 0,
  HCG_EINVAL = 1,       /* invalid argument (NULL, index out of range) */
  HCG_ENOMEM = 2,       /* out of memory */
  HCG_ESYNTAX = 3,      /* layout text does not follow the grammar */
  HCG_ELAYOUT = 4,      /* layout parses but is not valid for this world */
  HCG_ELIMIT = 5,       /* a hard bound was exceeded */
  HCG_ENOTFOUND = 6,    /* no such grid, view, dim or file */
  HCG_ENOTMEMBER = 7,   /* the rank is not in that grid or group */
  HCG_ENOTPROVIDED = 8, /* collection field whose dims the grid lacks */
  HCG_EIO = 9,          /* reading a file failed */
  HCG_EENV = 10,        /* HCG_* environment missing or inconsistent */
  HCG_EPMIX = 11,       /* a PMIx call failed */
  HCG_ETIMEOUT = 12,    /* a peer did not arrive in time */
  HCG_ENCCL = 13,       /* an NCCL call failed */
  HCG_ECUDA = 14,       /* a CUDA runtime call failed */
  HCG_ENOTSUP = 15,     /* not supported by this build (no NCCL, no PMIx...) */
  HCG_EEXIST = 16,      /* the object already exists (same group key twice) */
  HCG_EMISMATCH = 17,   /* two sources disagree (HCG_RANK vs PMIx rank...) */
  HCG_ERANGE = 18,      /* a buffer is too small, or a value out of range */
  HCG_EBRIDGE = 19,     /* two grids cannot be bridged */
  HCG_STATUS_COUNT
};

/* Short, constant description of a status code ("layout is not valid"). */
const char *hcg_strerror(int code);

/* The full account of a failure. Caller-owned; no allocation. `line` and
 * `column` (1-based, bytes) locate the offending layout text, or are 0 when
 * the error is not about a place in the text. `message` is the whole text to
 * show a person, without a program prefix; for layout errors it has three
 * lines: what and where, the offending line of text, and a caret:
 *
 *   layout: column 18: size of 'cp' must be a positive integer, got '0'
 *     llm:tp=2,pp=2,cp=0
 *                      ^
 */
typedef struct hcg_error {
  int code;
  int line;
  int column;
  char message[HCG_ERROR_MAX];
} hcg_error;

/* One initializer, kept on as few lines as it needs. */
/* clang-format off */
#define HCG_ERROR_INIT {0, 0, 0, {0}}
/* clang-format on */

/* 1 when `name` is a NAME of the layout language: [a-z][a-z0-9_]*, at most
 * HCG_MAX_NAME characters; else 0 (NULL included). */
int hcg_name_valid(const char *name);

/* Package version, "0.1.0". */
const char *hcg_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HCG_BASE_H */
