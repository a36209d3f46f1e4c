/*
 * args_slurm.c - the plugstack.conf arguments (args.h) as Slurm passes
 * them to each context's init, and what becomes of a rejected one: an
 * error where a person is watching, else a line in the node's log and the
 * setting's default.
 */
#include "args_slurm.h"
#include "log.h"
#include "state.h"

static void report_strict(void *arg, const char *message) {
  (void)arg;
  hcgp_log(HCGP_LOG_ERROR, "%s", message);
}

static void report_lenient(void *arg, const char *message) {
  const char *where = arg;
  hcgp_log(HCGP_LOG_ERROR, "%s (ignored %s; the default is used)", message,
           where);
}

void hcgp_args_load(int ac, char **av, int strict, const char *where) {
  hcgp_args_defaults(&hcgp_state.args);
  hcgp_state.args_bad =
      hcgp_args_parse(&hcgp_state.args, ac, av,
                      strict ? report_strict : report_lenient, (void *)where);
}
