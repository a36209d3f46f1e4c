/*
 * pmix_link.c - PMIx for pmix.c when libhcg is linked with libpmix
 * (configure --with-pmix, the default where PMIx is installed).
 *
 * Every type, offset and constant of hcg's declaration of the PMIx ABI
 * (pmix_abi.h) is checked here against the <pmix.h> this build compiles
 * with, so that a PMIx whose ABI moved fails the build, not a job; and each
 * function goes through a wrapper with PMIx's own prototype, so that the
 * compiler checks the calls too.
 */
#include <stddef.h>
#include <string.h>
#include <strings.h> /* pmix_common.h uses strncasecmp */

#include <pmix.h>

#include "pmix_abi.h"
#include "rt.h"

#define SAME_TYPE(ours, theirs)                                                \
  _Static_assert(sizeof(ours) == sizeof(theirs) &&                             \
                     _Alignof(ours) == _Alignof(theirs),                       \
                 #ours " is not " #theirs)
#define SAME_FIELD(ours, theirs, field)                                        \
  _Static_assert(offsetof(ours, field) == offsetof(theirs, field) &&           \
                     sizeof(((ours *)0)->field) ==                             \
                         sizeof(((theirs *)0)->field),                         \
                 #ours "." #field " is not " #theirs "." #field)
#define SAME_VALUE(ours, theirs)                                               \
  _Static_assert((ours) == (theirs), #ours " is not " #theirs)
/* Attribute keys: their lengths here, their text in tests/runtime. */
#define SAME_KEY(ours, theirs)                                                 \
  _Static_assert(sizeof(ours) == sizeof(theirs), #ours " is not " #theirs)

SAME_TYPE(hcgpx_status_t, pmix_status_t);
SAME_TYPE(hcgpx_rank_t, pmix_rank_t);
SAME_TYPE(hcgpx_data_type_t, pmix_data_type_t);
SAME_TYPE(hcgpx_scope_t, pmix_scope_t);
SAME_TYPE(hcgpx_proc_t, pmix_proc_t);
SAME_FIELD(hcgpx_proc_t, pmix_proc_t, nspace);
SAME_FIELD(hcgpx_proc_t, pmix_proc_t, rank);
SAME_TYPE(hcgpx_byte_object_t, pmix_byte_object_t);
SAME_FIELD(hcgpx_byte_object_t, pmix_byte_object_t, bytes);
SAME_FIELD(hcgpx_byte_object_t, pmix_byte_object_t, size);
SAME_TYPE(hcgpx_value_t, pmix_value_t);
SAME_FIELD(hcgpx_value_t, pmix_value_t, type);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.flag);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.integer);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.uint);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.uint16);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.uint32);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.uint64);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.rank);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.bo);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.ptr);
SAME_FIELD(hcgpx_value_t, pmix_value_t, data.envar);
SAME_TYPE(hcgpx_info_t, pmix_info_t);
SAME_FIELD(hcgpx_info_t, pmix_info_t, key);
SAME_FIELD(hcgpx_info_t, pmix_info_t, flags);
SAME_FIELD(hcgpx_info_t, pmix_info_t, value);

SAME_VALUE(HCGPX_MAX_NSLEN, PMIX_MAX_NSLEN);
SAME_VALUE(HCGPX_MAX_KEYLEN, PMIX_MAX_KEYLEN);
SAME_VALUE(HCGPX_SUCCESS, PMIX_SUCCESS);
SAME_VALUE(HCGPX_ERR_TYPE_MISMATCH, PMIX_ERR_TYPE_MISMATCH);
SAME_VALUE(HCGPX_ERR_TIMEOUT, PMIX_ERR_TIMEOUT);
SAME_VALUE(HCGPX_ERR_NOMEM, PMIX_ERR_NOMEM);
SAME_VALUE(HCGPX_ERR_NOT_FOUND, PMIX_ERR_NOT_FOUND);
SAME_VALUE(HCGPX_ERR_PARTIAL_SUCCESS, PMIX_ERR_PARTIAL_SUCCESS);
SAME_VALUE(HCGPX_OPERATION_SUCCEEDED, PMIX_OPERATION_SUCCEEDED);
SAME_VALUE(HCGPX_UNDEF, PMIX_UNDEF);
SAME_VALUE(HCGPX_BOOL, PMIX_BOOL);
SAME_VALUE(HCGPX_INT, PMIX_INT);
SAME_VALUE(HCGPX_UINT, PMIX_UINT);
SAME_VALUE(HCGPX_UINT16, PMIX_UINT16);
SAME_VALUE(HCGPX_UINT32, PMIX_UINT32);
SAME_VALUE(HCGPX_UINT64, PMIX_UINT64);
SAME_VALUE(HCGPX_BYTE_OBJECT, PMIX_BYTE_OBJECT);
SAME_VALUE(HCGPX_PROC_RANK, PMIX_PROC_RANK);
SAME_VALUE(HCGPX_GLOBAL, PMIX_GLOBAL);
SAME_VALUE(HCGPX_RANK_WILDCARD, PMIX_RANK_WILDCARD);
SAME_KEY(HCGPX_JOB_SIZE, PMIX_JOB_SIZE);
SAME_KEY(HCGPX_LOCAL_RANK, PMIX_LOCAL_RANK);
SAME_KEY(HCGPX_OPTIONAL, PMIX_OPTIONAL);
SAME_KEY(HCGPX_COLLECT_DATA, PMIX_COLLECT_DATA);
SAME_KEY(HCGPX_TIMEOUT, PMIX_TIMEOUT);

static hcgpx_status_t w_init(hcgpx_proc_t *proc, hcgpx_info_t info[],
                             size_t ninfo) {
  return PMIx_Init((pmix_proc_t *)proc, (pmix_info_t *)info, ninfo);
}

static hcgpx_status_t w_finalize(const hcgpx_info_t info[], size_t ninfo) {
  return PMIx_Finalize((const pmix_info_t *)info, ninfo);
}

static int w_initialized(void) { return PMIx_Initialized(); }

static hcgpx_status_t w_get(const hcgpx_proc_t *proc, const char key[],
                            const hcgpx_info_t info[], size_t ninfo,
                            hcgpx_value_t **val) {
  return PMIx_Get((const pmix_proc_t *)proc, key, (const pmix_info_t *)info,
                  ninfo, (pmix_value_t **)val);
}

static hcgpx_status_t w_put(hcgpx_scope_t scope, const char key[],
                            hcgpx_value_t *val) {
  return PMIx_Put(scope, key, (pmix_value_t *)val);
}

static hcgpx_status_t w_commit(void) { return PMIx_Commit(); }

static hcgpx_status_t w_fence_nb(const hcgpx_proc_t procs[], size_t nprocs,
                                 const hcgpx_info_t info[], size_t ninfo,
                                 hcgpx_op_cbfunc_t cbfunc, void *cbdata) {
  pmix_op_cbfunc_t cb = cbfunc; /* the same type: the compiler checks it */
  return PMIx_Fence_nb((const pmix_proc_t *)procs, nprocs,
                       (const pmix_info_t *)info, ninfo, cb, cbdata);
}

static const char *w_error_string(hcgpx_status_t status) {
  return PMIx_Error_string(status);
}

static hcgpx_status_t w_info_load(hcgpx_info_t *info, const char *key,
                                  const void *data, hcgpx_data_type_t type) {
  return PMIx_Info_load((pmix_info_t *)info, key, data, type);
}

static void w_value_destruct(hcgpx_value_t *val) {
  PMIx_Value_destruct((pmix_value_t *)val);
}

static const struct hcgpx_api linked = {
    .init = w_init,
    .finalize = w_finalize,
    .initialized = w_initialized,
    .get = w_get,
    .put = w_put,
    .commit = w_commit,
    .fence_nb = w_fence_nb,
    .error_string = w_error_string,
    .info_load = w_info_load,
    .value_destruct = w_value_destruct,
};

int hcgrt_pmix_bind(const struct hcgpx_api **api, hcg_error *err) {
  (void)err;
  *api = &linked;
  return HCG_OK;
}
