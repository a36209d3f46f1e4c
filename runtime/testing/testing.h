/*
 * testing.h - libhcgtesting: what the tests put in the place of libhcg's
 * devices and watch it through, linked only into test programs
 * (runtime/Makefile.am), never into libhcg or an installed program.
 */
#ifndef HCG_TESTING_H
#define HCG_TESTING_H

#include "rt.h"

#ifdef HCG_HAVE_NCCL
#include "comm_nccl.h"
/* No device, no NCCL; HCGTEST_COMM_FAIL=RANK:prepare|init makes rank RANK
 * fail at that stage (comm_fail.c). A test program linking it uses it in
 * hcg_comm_create when the variable is set at its start. */
extern const struct hcgrt_comm_backend hcgrt_comm_fail;
#endif

/* With HCGTEST_REQUESTS=FILE at a test program's start, every PMIx get
 * appends "get PUBLISHER BY_RANK KEY" to FILE (requests.c), so that a
 * test can count the requests each publisher answers. */
void hcgrt_testing_requests(void);

#endif /* HCG_TESTING_H */
