/* suites.h - the core's test suites, run by main.c. */
#ifndef HCG_TEST_SUITES_H
#define HCG_TEST_SUITES_H

#include <check.h>

Suite *parse_suite(void);
Suite *grid_suite(void);
Suite *views_suite(void);
Suite *collection_suite(void);
Suite *mimo_suite(void);
Suite *env_suite(void);
Suite *props_suite(void);
Suite *placement_suite(void);
Suite *megatron_suite(void);

#endif
