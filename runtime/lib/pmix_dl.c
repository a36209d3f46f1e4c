/*
 * pmix_dl.c - PMIx for pmix.c from libpmix.so.2, opened at run time the
 * first time a context needs PMIx (configure --with-pmix=dlopen; the Python
 * wheel's libhcg). Nothing of PMIx is needed to build such a libhcg, and a
 * process without PMIx loads and uses it for everything but exchanges: a
 * container image without PMIx, say, where hcg.torch meets through
 * MASTER_ADDR and MASTER_PORT instead.
 *
 * The library is HCG_PMIX_LIBRARY when set (a path, or a name the dynamic
 * loader looks up), else libpmix.so.2 through the loader's own search
 * (LD_LIBRARY_PATH, the ld.so cache). It is opened with RTLD_LOCAL, so its
 * symbols never mix with another copy of PMIx in the process (an MPI
 * library's), and never closed once bound: PMIx's threads live on. A
 * library without one of the functions pmix_abi.h lists is closed again
 * and refused, naming the function. A failure is not remembered: a later
 * call tries again (HCG_PMIX_LIBRARY may have been set since).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pmix_abi.h"
#include "rt.h"

_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
               "dlsym gives functions as data pointers");

/* Each function of the table and PMIx's name for it. */
static const struct {
  const char *name;
  size_t offset;
} symbols[] = {
    {"PMIx_Init", offsetof(struct hcgpx_api, init)},
    {"PMIx_Finalize", offsetof(struct hcgpx_api, finalize)},
    {"PMIx_Initialized", offsetof(struct hcgpx_api, initialized)},
    {"PMIx_Get", offsetof(struct hcgpx_api, get)},
    {"PMIx_Put", offsetof(struct hcgpx_api, put)},
    {"PMIx_Commit", offsetof(struct hcgpx_api, commit)},
    {"PMIx_Fence_nb", offsetof(struct hcgpx_api, fence_nb)},
    {"PMIx_Error_string", offsetof(struct hcgpx_api, error_string)},
    {"PMIx_Info_load", offsetof(struct hcgpx_api, info_load)},
    {"PMIx_Value_destruct", offsetof(struct hcgpx_api, value_destruct)},
};

static pthread_mutex_t bind_mu = PTHREAD_MUTEX_INITIALIZER;
static struct hcgpx_api loaded; /* valid once `bound` */
static int bound;

static int load(hcg_error *err) {
  const char *env = getenv("HCG_PMIX_LIBRARY");
  int chosen = env && *env;
  const char *name = chosen ? env : "libpmix.so.2";
  dlerror(); /* clears an earlier message */
  void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    if (chosen)
      return hcg__fail(err, HCG_ENOTSUP,
                       "cannot load PMIx's client library "
                       "HCG_PMIX_LIBRARY=%s: %s",
                       name, why ? why : "dlopen failed");
    return hcg__fail(err, HCG_ENOTSUP,
                     "PMIx's client library is not installed here (%s): "
                     "this libhcg loads PMIx when it needs it; install "
                     "PMIx 4 or newer where this process runs (Debian and "
                     "Ubuntu: libpmix2t64 or libpmix2; Fedora and RHEL: "
                     "pmix), or set HCG_PMIX_LIBRARY to the path of "
                     "libpmix.so.2",
                     why ? why : "dlopen of libpmix.so.2 failed");
  }
  struct hcgpx_api api = {0};
  for (size_t i = 0; i < sizeof symbols / sizeof *symbols; i++) {
    void *fn = dlsym(h, symbols[i].name);
    if (!fn) {
      dlclose(h);
      return hcg__fail(err, HCG_ENOTSUP,
                       "%s%s has no %s: it is not the client library of "
                       "PMIx 4 or newer, which this libhcg needs",
                       chosen ? "HCG_PMIX_LIBRARY=" : "", name,
                       symbols[i].name);
    }
    memcpy((char *)&api + symbols[i].offset, &fn, sizeof fn);
  }
  loaded = api;
  return HCG_OK;
}

int hcgrt_pmix_bind(const struct hcgpx_api **api, hcg_error *err) {
  pthread_mutex_lock(&bind_mu);
  int rc = bound ? HCG_OK : load(err);
  if (!rc)
    bound = 1;
  pthread_mutex_unlock(&bind_mu);
  *api = rc ? NULL : &loaded;
  return rc;
}
