/*
 * test_runtime.c - unit tests of libhcg's runtime that need no cluster,
 * one file per topic (runtime_test.h lists them): reading and checking
 * the HCG_* environment, configuration defaults, queries, group sets and
 * their per-rank plans, PMIx key derivation, the schedule of collective
 * rounds, and what the exchange and communicator calls do without PMIx,
 * NCCL or a GPU.
 */
#include "config.h"

#include <stdlib.h>

#include "runtime_test.h"

static Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");
  suite_add_tcase(s, environment_tests());
  suite_add_tcase(s, query_tests());
  suite_add_tcase(s, groupset_tests());
  TCase *x = tcase_create("exchange");
  exchange_tests(x);
  comm_tests(x);
  tcase_set_timeout(x, 60);
  suite_add_tcase(s, x);
  suite_add_tcase(s, round_tests());
  suite_add_tcase(s, slice_tests());
  return s;
}

int main(void) {
  SRunner *sr = srunner_create(runtime_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
