/*
 * pmix_none.c - a libhcg without PMIx (configure --without-pmix, or no
 * PMIx found): pmix.c's calls fail with HCG_ENOTSUP, saying so.
 */
#include <stddef.h>

#include "pmix_abi.h"
#include "rt.h"

int hcgrt_pmix_bind(const struct hcgpx_api **api, hcg_error *err) {
  *api = NULL;
  return hcg__fail(err, HCG_ENOTSUP,
                   "this libhcg was built without PMIx (configure "
                   "--with-pmix)");
}
