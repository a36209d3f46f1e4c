/*
 * fail.h - the one way every layer reports an error: fill the caller's
 * hcg_error and return the code. The core, libhcg and the plugin's pure
 * parts use it; it is all the plugin needs of the core's internals
 * (internal.h), and libhcg needs only contract.h besides.
 */
#ifndef HCG_CORE_FAIL_H
#define HCG_CORE_FAIL_H

#include "hcg.h"

/* Fills err (if not NULL) with code and a printf-style message; returns code.
 */
int hcg__fail(hcg_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
