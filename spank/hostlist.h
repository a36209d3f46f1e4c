/*
 * hostlist.h - Slurm's host lists ("n[1-3,08-10],m2") expanded name by
 * name, with every number's range checked. Pure C (no Slurm): the plugin,
 * its unit tests and the fuzz target run the same code.
 */
#ifndef HCGP_HOSTLIST_H
#define HCGP_HOSTLIST_H

#include <stddef.h>

#define HCGP_NODE_NAME_MAX 255

/* Expands a Slurm host list ("n[1-3,08-10],m2", bracket ranges padded to
 * the width of their first number) into names, in order: fn(arg, name,
 * len) per name; a non-zero return stops and is returned. -1 for a
 * malformed list, a name over HCGP_NODE_NAME_MAX bytes or more than max
 * names. */
typedef int (*hcgp_host_fn)(void *arg, const char *name, size_t len);
int hcgp_hostlist_each(const char *list, size_t len, long max, hcgp_host_fn fn,
                       void *arg);

/* The n bytes at s as a number: digits only, at most 9 of them; 0, or -1. */
int hcgp_parse_digits(const char *s, size_t n, long *out);

#endif /* HCGP_HOSTLIST_H */
