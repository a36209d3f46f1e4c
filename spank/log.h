/*
 * log.h - the plugin's messages (log.c), all through hcgp_log.
 */
#ifndef HCGP_LOG_H
#define HCGP_LOG_H

#include "hcg.h"

/* Where a message goes. Each is prefixed "hcg: ", which tells the user
 * which plugin speaks, and may span lines (the core's column and caret). */
enum hcgp_log_level {
  HCGP_LOG_ERROR,   /* slurm_error: srun's terminal, the node's log       */
  HCGP_LOG_INFO,    /* slurm_info: the node's log                         */
  HCGP_LOG_VERBOSE, /* slurm_verbose: srun -v, the node's log if verbose  */
  HCGP_LOG_TASK,    /* the task's stderr (task_init runs in the task): a
                       warning the user reads once, without "error:"     */
};
void hcgp_log(enum hcgp_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* While held, messages are counted instead of said: user_init, which plans
 * the tasks' variables (taskenv.h), leaves a task that has something to
 * say to compute its own, in its own context. hcgp_log_release ends the
 * hold and returns how many messages it kept back. */
void hcgp_log_hold(void);
unsigned hcgp_log_release(void);
/* An error of the core or of a pure part: its message, or its code's name
 * when the message is empty. */
void hcgp_log_hcg_error(const hcg_error *err);

#endif /* HCGP_LOG_H */
