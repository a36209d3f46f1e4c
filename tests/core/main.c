/* main.c - runs every suite of the core's unit tests. */
#include <stdlib.h>

#include "suites.h"

int main(void) {
  SRunner *sr = srunner_create(parse_suite());
  srunner_add_suite(sr, grid_suite());
  srunner_add_suite(sr, views_suite());
  srunner_add_suite(sr, collection_suite());
  srunner_add_suite(sr, mimo_suite());
  srunner_add_suite(sr, env_suite());
  srunner_add_suite(sr, props_suite());
  srunner_add_suite(sr, placement_suite());
  srunner_add_suite(sr, megatron_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
