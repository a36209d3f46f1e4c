/*
 * pmix_abi.h - the part of PMIx's client ABI that libhcg uses, declared by
 * hcg itself, and the table of PMIx functions pmix.c calls through.
 *
 * pmix.c, the PMIx back end, is written against these declarations only,
 * so that the same code runs whichever way PMIx is reached. One file per
 * way provides hcgrt_pmix_bind, and configure (or the Python wheel's
 * build) compiles exactly one of them:
 *
 *   pmix_link.c  libhcg is linked with libpmix (configure --with-pmix, the
 *                default where PMIx is installed); it includes <pmix.h>
 *                and asserts at compile time that every type, offset and
 *                constant below is PMIx's own.
 *   pmix_dl.c    libpmix.so.2 is opened at run time, the first time PMIx
 *                is needed (configure --with-pmix=dlopen, and the wheel):
 *                no PMIx at build time, and a process without PMIx still
 *                loads libhcg.
 *   pmix_none.c  no PMIx (configure --without-pmix).
 *
 * PMIx keeps this ABI stable from version 4 to 7 (libpmix.so.2): the
 * declarations match the headers of PMIx 4.2.2, 5.0.7 and 7.0.0.
 */
#ifndef HCG_PMIX_ABI_H
#define HCG_PMIX_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hcg.h"

typedef int hcgpx_status_t;         /* pmix_status_t          */
typedef uint32_t hcgpx_rank_t;      /* pmix_rank_t            */
typedef uint16_t hcgpx_data_type_t; /* pmix_data_type_t      */
typedef uint8_t hcgpx_scope_t;      /* pmix_scope_t           */

#define HCGPX_MAX_NSLEN 255
#define HCGPX_MAX_KEYLEN 511

typedef struct { /* pmix_proc_t */
  char nspace[HCGPX_MAX_NSLEN + 1];
  hcgpx_rank_t rank;
} hcgpx_proc_t;

typedef struct { /* pmix_byte_object_t */
  char *bytes;
  size_t size;
} hcgpx_byte_object_t;

typedef struct { /* pmix_value_t */
  hcgpx_data_type_t type;
  union {
    bool flag;
    int integer;
    unsigned int uint;
    uint16_t uint16;
    uint32_t uint32;
    uint64_t uint64;
    hcgpx_rank_t rank;
    hcgpx_byte_object_t bo;
    void *ptr;
    /* PMIx's largest member (pmix_envar_t): it sets the union's size. */
    struct {
      char *envar;
      char *value;
      char separator;
    } envar;
  } data;
} hcgpx_value_t;

typedef struct { /* pmix_info_t */
  char key[HCGPX_MAX_KEYLEN + 1];
  uint32_t flags; /* pmix_info_directives_t */
  hcgpx_value_t value;
} hcgpx_info_t;

/* Status codes. */
#define HCGPX_SUCCESS 0
#define HCGPX_ERR_TYPE_MISMATCH (-18)
#define HCGPX_ERR_TIMEOUT (-24)
#define HCGPX_ERR_NOMEM (-32)
#define HCGPX_ERR_NOT_FOUND (-46)
#define HCGPX_ERR_PARTIAL_SUCCESS (-52)
#define HCGPX_OPERATION_SUCCEEDED (-157)

/* Data types. */
#define HCGPX_UNDEF 0
#define HCGPX_BOOL 1
#define HCGPX_INT 6
#define HCGPX_UINT 11
#define HCGPX_UINT16 13
#define HCGPX_UINT32 14
#define HCGPX_UINT64 15
#define HCGPX_BYTE_OBJECT 27
#define HCGPX_PROC_RANK 40

/* Scope of a put, and the rank that stands for a whole namespace. */
#define HCGPX_GLOBAL 3
#define HCGPX_RANK_WILDCARD (UINT32_MAX - 1)

/* Attribute keys. */
#define HCGPX_JOB_SIZE "pmix.job.size"
#define HCGPX_LOCAL_RANK "pmix.lrank"
#define HCGPX_OPTIONAL "pmix.optional"
#define HCGPX_COLLECT_DATA "pmix.collect"
#define HCGPX_TIMEOUT "pmix.timeout"

/* pmix_op_cbfunc_t */
typedef void (*hcgpx_op_cbfunc_t)(hcgpx_status_t status, void *cbdata);

/* The PMIx functions libhcg calls, with PMIx's prototypes. */
struct hcgpx_api {
  hcgpx_status_t (*init)(hcgpx_proc_t *proc, hcgpx_info_t info[], size_t ninfo);
  hcgpx_status_t (*finalize)(const hcgpx_info_t info[], size_t ninfo);
  int (*initialized)(void);
  hcgpx_status_t (*get)(const hcgpx_proc_t *proc, const char key[],
                        const hcgpx_info_t info[], size_t ninfo,
                        hcgpx_value_t **val);
  hcgpx_status_t (*put)(hcgpx_scope_t scope, const char key[],
                        hcgpx_value_t *val);
  hcgpx_status_t (*commit)(void);
  hcgpx_status_t (*fence_nb)(const hcgpx_proc_t procs[], size_t nprocs,
                             const hcgpx_info_t info[], size_t ninfo,
                             hcgpx_op_cbfunc_t cbfunc, void *cbdata);
  const char *(*error_string)(hcgpx_status_t status);
  hcgpx_status_t (*info_load)(hcgpx_info_t *info, const char *key,
                              const void *data, hcgpx_data_type_t type);
  void (*value_destruct)(hcgpx_value_t *val);
};

/* The PMIx functions of this build (one of pmix_link.c, pmix_dl.c,
 * pmix_none.c), into *api: HCG_OK, or HCG_ENOTSUP with the reason in err
 * (no PMIx in this build; no loadable libpmix.so.2). Thread-safe; the
 * table, once given, stays valid for the life of the process. */
int hcgrt_pmix_bind(const struct hcgpx_api **api, hcg_error *err);

#endif /* HCG_PMIX_ABI_H */
