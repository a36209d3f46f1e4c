/*
 * log.c - the plugin's messages. Slurm prints them in srun's terminal or in
 * slurmd's log; the prefix tells the user which plugin speaks.
 */
#include "plugin.h"

void hcgp_log_error(const char *message) {
  slurm_error(HCGP_LOG_PREFIX "%s", message);
}

void hcgp_log_hcg_error(const hcg_error *err) {
  hcgp_log_error(err->message[0] ? err->message : hcg_strerror(err->code));
}
