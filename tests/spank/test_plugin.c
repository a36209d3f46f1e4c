/*
 * test_plugin.c - drives the built spank_hcg.so through its SPANK entry
 * points without Slurm: this program plays srun, sbatch and slurmstepd by
 * providing the spank_* and slurm_* functions the plugin calls (exported
 * with -rdynamic, so dlopen resolves the plugin's undefined symbols to
 * them). It covers the option's call sequences, every decision of the
 * plugin and its error paths; run it under valgrind to check them for
 * leaks. The real Slurm is exercised by tests/cluster.
 *
 *   test_plugin PATH/TO/spank_hcg.so
 */
#include <check.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <slurm/spank.h>

/* ---- the fake host ------------------------------------------------------ */

struct spank_handle {
  int unused;
};
static struct spank_handle handle;
static spank_t sp = &handle;

static struct {
  spank_context_t ctx;
  struct spank_option *opt;
  uint32_t job, step, world, rank;
  int item_fails;         /* spank_get_item fails for S_JOB_TOTAL_TASK_COUNT */
  const char *unsettable; /* spank_setenv fails for this name */
  char *env[64];          /* the remote task's environment */
  char control[1 << 17];  /* last spank_job_control_setenv value */
  char log[1 << 15];      /* everything logged, one message per line */
  int log_fd;             /* if >= 0, each logged line is written here too */
  int nlocal;             /* the node's tasks (0: Slurm does not say) ... */
  uint32_t local[8];      /* ... by local id: their global ranks */
  int lid;                /* the task's local id, where nlocal > 0 */
} host;

static void reset_host(spank_context_t ctx) {
  for (int i = 0; i < 64; i++) {
    free(host.env[i]);
    host.env[i] = NULL;
  }
  memset(&host, 0, sizeof host);
  host.ctx = ctx;
  host.job = 7;
  host.step = 3;
  host.world = 4;
  host.log_fd = -1;
}

static void logf_(const char *level, const char *fmt, va_list ap) {
  size_t n = strlen(host.log), start = n;
  if (n + 2 >= sizeof host.log)
    return;
  n += (size_t)snprintf(host.log + n, sizeof host.log - n, "%s", level);
  vsnprintf(host.log + n, sizeof host.log - n, fmt, ap);
  n = strlen(host.log);
  if (n + 1 < sizeof host.log)
    strcat(host.log, "\n");
  /* A task the plugin ends runs in a child (task_ended): its lines reach
   * the parent's host.log through this pipe. */
  if (host.log_fd >= 0) {
    size_t len = strlen(host.log) - start;
    if (write(host.log_fd, host.log + start, len) != (ssize_t)len)
      _exit(3); /* a status task_ended fails on */
  }
}

void slurm_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  logf_("error: ", fmt, ap);
  va_end(ap);
}

void slurm_verbose(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  logf_("verbose: ", fmt, ap);
  va_end(ap);
}

void slurm_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  logf_("info: ", fmt, ap);
  va_end(ap);
}

void slurm_debug(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  logf_("debug: ", fmt, ap);
  va_end(ap);
}

spank_context_t spank_context(void) { return host.ctx; }

const char *spank_strerror(spank_err_t err) {
  return err == ESPANK_SUCCESS ? "success" : "fake spank error";
}

spank_err_t spank_option_register(spank_t s, struct spank_option *opt) {
  if (s != sp || !opt)
    return ESPANK_BAD_ARG;
  host.opt = opt;
  return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t s, spank_item_t item, ...) {
  if (s != sp)
    return ESPANK_BAD_ARG;
  va_list ap;
  va_start(ap, item);
  spank_err_t rc = ESPANK_SUCCESS;
  switch (item) {
  case S_JOB_ID:
    *va_arg(ap, uint32_t *) = host.job;
    break;
  case S_JOB_STEPID:
    *va_arg(ap, uint32_t *) = host.step;
    break;
  case S_JOB_TOTAL_TASK_COUNT:
    *va_arg(ap, uint32_t *) = host.world;
    if (host.item_fails)
      rc = ESPANK_ENV_NOEXIST;
    break;
  case S_JOB_ENV: {
    /* Like slurmstepd: a NULL-terminated array of the task's entries. */
    static char *view[65];
    int n = 0;
    for (int i = 0; i < 64; i++)
      if (host.env[i])
        view[n++] = host.env[i];
    view[n] = NULL;
    *va_arg(ap, char ***) = view;
    break;
  }
  case S_TASK_GLOBAL_ID:
    if (host.ctx != S_CTX_REMOTE)
      rc = ESPANK_NOT_TASK;
    else
      *va_arg(ap, uint32_t *) = host.rank;
    break;
  /* The node's tasks, where a test gives them. */
  case S_TASK_ID:
    if (!host.nlocal)
      rc = ESPANK_BAD_ARG;
    else
      *va_arg(ap, int *) = host.lid;
    break;
  case S_JOB_LOCAL_TASK_COUNT:
    if (!host.nlocal)
      rc = ESPANK_BAD_ARG;
    else
      *va_arg(ap, uint32_t *) = (uint32_t)host.nlocal;
    break;
  case S_JOB_LOCAL_TO_GLOBAL_ID: {
    uint32_t lid = va_arg(ap, uint32_t);
    uint32_t *gid = va_arg(ap, uint32_t *);
    if (lid >= (uint32_t)host.nlocal)
      rc = ESPANK_BAD_ARG;
    else
      *gid = host.local[lid];
    break;
  }
  case S_JOB_GLOBAL_TO_LOCAL_ID: {
    uint32_t gid = va_arg(ap, uint32_t);
    uint32_t *lid = va_arg(ap, uint32_t *);
    rc = ESPANK_BAD_ARG;
    for (int i = 0; i < host.nlocal; i++)
      if (host.local[i] == gid) {
        *lid = (uint32_t)i;
        rc = ESPANK_SUCCESS;
      }
    break;
  }
  default:
    rc = ESPANK_BAD_ARG;
  }
  va_end(ap);
  return rc;
}

static int env_find(const char *var) {
  size_t n = strlen(var);
  for (int i = 0; i < 64; i++)
    if (host.env[i] && !strncmp(host.env[i], var, n) && host.env[i][n] == '=')
      return i;
  return -1;
}

static const char *task_env(const char *var) {
  int i = env_find(var);
  return i < 0 ? NULL : host.env[i] + strlen(var) + 1;
}

static void task_env_set(const char *var, const char *val) {
  int i = env_find(var);
  if (i < 0)
    for (i = 0; i < 64 && host.env[i]; i++)
      ;
  ck_assert_int_lt(i, 64);
  free(host.env[i]);
  host.env[i] = malloc(strlen(var) + strlen(val) + 2);
  sprintf(host.env[i], "%s=%s", var, val);
}

static int task_env_count(const char *prefix) {
  int n = 0;
  for (int i = 0; i < 64; i++)
    n += host.env[i] && !strncmp(host.env[i], prefix, strlen(prefix));
  return n;
}

spank_err_t spank_getenv(spank_t s, const char *var, char *buf, int len) {
  if (s != sp || len < 0)
    return ESPANK_BAD_ARG;
  if (host.ctx != S_CTX_REMOTE)
    return ESPANK_NOT_REMOTE;
  const char *v = task_env(var);
  if (!v)
    return ESPANK_ENV_NOEXIST;
  if (strlen(v) >= (size_t)len)
    return ESPANK_NOSPACE;
  strcpy(buf, v);
  return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t s, const char *var, const char *val,
                         int overwrite) {
  if (s != sp || !var || !val)
    return ESPANK_BAD_ARG;
  if (host.ctx != S_CTX_REMOTE)
    return ESPANK_NOT_REMOTE;
  if (!overwrite && task_env(var))
    return ESPANK_ENV_EXISTS;
  if (host.unsettable && !strcmp(var, host.unsettable))
    return ESPANK_ERROR;
  task_env_set(var, val);
  return ESPANK_SUCCESS;
}

spank_err_t spank_unsetenv(spank_t s, const char *var) {
  if (s != sp || !var)
    return ESPANK_BAD_ARG;
  if (host.ctx != S_CTX_REMOTE)
    return ESPANK_NOT_REMOTE;
  int i = env_find(var);
  if (i >= 0) {
    free(host.env[i]);
    host.env[i] = NULL;
  }
  return ESPANK_SUCCESS;
}

spank_err_t spank_job_control_setenv(spank_t s, const char *name,
                                     const char *value, int overwrite) {
  (void)overwrite;
  if (s != sp || !name || !value)
    return ESPANK_BAD_ARG;
  if (host.ctx != S_CTX_LOCAL && host.ctx != S_CTX_ALLOCATOR)
    return ESPANK_NOT_LOCAL;
  if (strcmp(name, "_SLURM_SPANK_OPTION_hcg_hcg_layout"))
    return ESPANK_BAD_ARG;
  snprintf(host.control, sizeof host.control, "%s", value);
  return ESPANK_SUCCESS;
}

/* ---- the plugin --------------------------------------------------------- */

typedef int (*entry_fn)(spank_t, int, char **);
static const char *plugin_path;
static void *plugin;
static entry_fn p_init, p_post_opt, p_local_user_init, p_task_init, p_exit;

static void load_plugin(void) {
  plugin = dlopen(plugin_path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(plugin != NULL, "dlopen %s: %s", plugin_path, dlerror());
  p_init = (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_init");
  p_post_opt = (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_init_post_opt");
  p_local_user_init =
      (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_local_user_init");
  p_task_init = (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_task_init");
  p_exit = (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_exit");
  ck_assert(p_init && p_post_opt && p_local_user_init && p_task_init && p_exit);
}

static void unload_plugin(void) {
  if (plugin)
    dlclose(plugin);
  plugin = NULL;
}

/* A context's start: the plugstack arguments, then the init callback. */
static int start(spank_context_t ctx, const char *args) {
  reset_host(ctx);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", args ? args : "");
  char *argv[16];
  int argc = 0;
  for (char *w = strtok(buf, " "); w && argc < 16; w = strtok(NULL, " "))
    argv[argc++] = w;
  return p_init(sp, argc, argv);
}

static void option(const char *value) {
  ck_assert_ptr_nonnull(host.opt);
  ck_assert_int_eq(host.opt->cb(host.opt->val, value, host.ctx == S_CTX_REMOTE),
                   0);
}

static void stop(void) { ck_assert_int_eq(p_exit(sp, 0, NULL), 0); }

static void expect_log(const char *needle) {
  ck_assert_msg(strstr(host.log, needle), "no '%s' in log:\n%s", needle,
                host.log);
}

#define FWD "SLURM_HCG_STEP_LAYOUT"
#define INHERITED "SLURM_SPANK__SLURM_SPANK_OPTION_hcg_hcg_layout"

static void setup(void) {
  unsetenv(FWD);
  unsetenv(INHERITED);
  unsetenv("_SLURM_SPANK_OPTION_hcg_hcg_layout");
  unsetenv("SLURM_NTASKS");
  /* srun inside a job, as in a batch script, unless a test says not. */
  setenv("SLURM_JOB_ID", "7", 1);
  unsetenv("SLURM_JOBID");
  load_plugin();
}

static void teardown(void) {
  unload_plugin();
  reset_host(S_CTX_ERROR);
}

/* ---- tests ----------------------------------------------------------------
 */

START_TEST(exports_only_spank_symbols) {
  ck_assert_str_eq((const char *)dlsym(plugin, "plugin_name"), "hcg");
  ck_assert_str_eq((const char *)dlsym(plugin, "plugin_type"), "spank");
  ck_assert_ptr_nonnull(dlsym(plugin, "plugin_version"));
  ck_assert_ptr_nonnull(dlsym(plugin, "spank_plugin_version"));
  ck_assert_ptr_null(dlsym(plugin, "hcg_layout_parse"));
  ck_assert_ptr_null(dlsym(plugin, "hcg_state"));
  ck_assert_ptr_null(dlsym(plugin, "hcg_args_parse"));
}
END_TEST

START_TEST(srun_good_layout) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  ck_assert_str_eq(host.opt->name, "hcg-layout");
  ck_assert(!strncmp(host.opt->usage, "[hcg]", 5));
  ck_assert_int_eq(host.opt->has_arg, 1);
  option("tp=2,dp=*");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  setenv(FWD, "stale from an outer step", 1);
  setenv("HCG_RANK", "5", 1);
  setenv("HCG_TIMEOUT", "7", 1);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:world:world@0:tp=2,dp=2");
  expect_log("verbose: hcg: step 7.3, 4 tasks: world@0:tp=2,dp=2");
  /* What every task shares goes with srun's environment to the step's; an
   * outer step's variables do not, a user's setting stays. */
  ck_assert_str_eq(getenv("HCG_WORLD_SIZE"), "4");
  ck_assert_str_eq(getenv("HCG_LAYOUT"), "world@0:tp=2,dp=2");
  ck_assert_str_eq(getenv("HCG_GRIDS"), "world");
  ck_assert_str_eq(getenv("HCG_WORLD_TP_SIZE"), "2");
  ck_assert_ptr_null(getenv("HCG_WORLD_TP_RANK"));
  ck_assert_ptr_null(getenv("HCG_RANK"));
  ck_assert_str_eq(getenv("HCG_TIMEOUT"), "7");
  stop();
}
END_TEST

START_TEST(srun_without_option) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  setenv(FWD, "stale", 1);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_ptr_null(getenv(FWD)); /* a stale value never passes */
  ck_assert_str_eq(host.log, "");
  stop();
}
END_TEST

START_TEST(srun_none) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("none");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_ptr_null(getenv(FWD));
  stop();
}
END_TEST

START_TEST(srun_syntax_error_before_allocation) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("llm:tp=2,pp=2,cp=0");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("error: hcg: layout: column 18: size of 'cp' must be a positive "
             "integer, got '0'\n  llm:tp=2,pp=2,cp=0\n                   ^\n");
  stop();
}
END_TEST

START_TEST(srun_does_not_fit_refuses_the_step) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2,dp=*");
  host.world = 3;
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  /* srun inside a job goes on (see forward.h), the tasks will be
   * refused. */
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:!");
  expect_log("3 ranks are not a multiple of 2");
  expect_log("the layout does not fit this step of 3 tasks; no task will run");
  stop();
}
END_TEST

/* srun that made its own allocation (no job when it started) fails the
 * step itself: Slurm then ends it before any task starts and completes the
 * job. The refusal is forwarded all the same, for a plugin loaded as
 * optional, whose failure srun ignores (forward.h). */
START_TEST(srun_of_its_own_allocation_fails) {
  unsetenv("SLURM_JOB_ID");
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2,dp=*");
  host.world = 3;
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), -1);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:!");
  expect_log("the layout does not fit this step of 3 tasks; no task will run");
  stop();
  /* A layout that fits runs as in a job. */
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2,dp=*");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:world:world@0:tp=2,dp=2");
  stop();
  /* The old name of the variable also says srun runs inside a job. */
  setenv("SLURM_JOBID", "7", 1);
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2,dp=*");
  host.world = 3;
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:!");
  stop();
}
END_TEST

START_TEST(srun_site_language_chooses_among_grids) {
  /* A site-wide language=llm: a one-grid layout still runs (its only grid
   * is the language module); several grids without llm are refused. */
  ck_assert_int_eq(start(S_CTX_LOCAL, "language=llm"), 0);
  option("tp=2,dp=*");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:world:world@0:tp=2,dp=2");
  stop();
  ck_assert_int_eq(start(S_CTX_LOCAL, "language=llm"), 0);
  option("enc:tp=2; dec:tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:!");
  expect_log("the language module 'llm' is not a grid of the layout (grids: "
             "enc, dec)");
  stop();
}
END_TEST

/* srun calls post_opt once per component of a heterogeneous step and
 * user_init once, for one component (spank/hetstep.h). */
START_TEST(srun_heterogeneous_step) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  host.world = 2;
  setenv("SLURM_NTASKS", "5", 1);
  setenv(FWD, "hcg1:1.0:world:world@0:tp=2", 1); /* an outer step's */
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:1.0:world:world@0:tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0); /* a second component */
  ck_assert_str_eq(getenv(FWD), "hcg1:het:tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0); /* a third: nodes refuse */
  ck_assert_str_eq(getenv(FWD), "hcg1:het:tp=2");
  /* user_init leaves it: what it sets may reach one component only. */
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:het:tp=2");
  setenv("SLURM_NTASKS", "2", 1); /* not heterogeneous */
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:world:world@0:tp=2");
  unsetenv("SLURM_NTASKS");
  stop();
}
END_TEST

/* srun A --hcg-layout=X : B --hcg-layout=Y: the second component's value
 * arrives after the first post_opt. */
START_TEST(srun_heterogeneous_two_layouts) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  option("tp=4");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("--hcg-layout is given twice with different values ('tp=2' and "
             "'tp=4')");
  ck_assert_ptr_null(getenv(FWD));
  stop();
}
END_TEST

/* In a batch job, srun --het-group=0,1 --hcg-layout=X reads the inherited
 * value again for each component: X replaces it for the whole step. */
START_TEST(srun_heterogeneous_replaces_inherited) {
  setenv(INHERITED, "tp=2", 1);
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2"); /* inherited */
  option("tp=4"); /* command line */
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  option("tp=2"); /* inherited, read again for the second component */
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:het:tp=4");
  stop();
  unload_plugin();
  load_plugin();

  /* Another value in the second component is still a second layout. */
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  option("tp=4");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  option("tp=2");
  option("tp=8");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("given twice with different values ('tp=4' and 'tp=8')");
  stop();
  unsetenv(INHERITED);
}
END_TEST

START_TEST(srun_no_task_count) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  host.item_fails = 1;
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:!");
  expect_log("did not tell the step's task count");
  stop();
}
END_TEST

START_TEST(srun_repeats_and_conflicts) {
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  option("tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  stop();

  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=2");
  option("tp=4");
  option("tp=8");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("--hcg-layout is given twice with different values ('tp=2' and "
             "'tp=4')");
  stop();
}
END_TEST

START_TEST(srun_inherited_value_can_be_replaced) {
  /* In a batch job: the value from sbatch comes first, then the command
   * line; the command line wins, once. */
  setenv(INHERITED, "tp=4", 1);
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=4");
  option("tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  host.world = 2;
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:world:world@0:tp=2");
  stop();

  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=4");
  option("none");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_ptr_null(getenv(FWD));
  stop();

  /* A value that differs from the inherited one is not "inherited". */
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option("tp=1");
  option("tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  stop();
  unsetenv(INHERITED);
}
END_TEST

START_TEST(srun_size_limits) {
  ck_assert_int_eq(start(S_CTX_LOCAL, "max_layout_bytes=8"), 0);
  option("tp=2,dp=*"); /* 9 bytes */
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("the layout given to --hcg-layout is 9 bytes; the limit is 8 "
             "bytes (max_layout_bytes in plugstack.conf)");
  stop();

  size_t n = (1u << 20) + 10;
  char *huge = malloc(n + 1);
  memset(huge, 'x', n);
  huge[n] = '\0';
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option(huge);
  option(huge); /* cannot be compared, but is no conflict */
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("is more than 1048576 bytes; the limit is 16384");
  stop();
  free(huge);
}
END_TEST

START_TEST(srun_layout_files) {
  char dir[] = "/tmp/hcg-test-plugin.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[256], arg[300];
  snprintf(path, sizeof path, "%s/good.layout", dir);
  FILE *f = fopen(path, "w");
  fputs("# two modules\nvision:tp=2\nllm:tp=2\n", f);
  fclose(f);
  snprintf(arg, sizeof arg, "@%s", path);
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option(arg);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  remove(path); /* read once, in post_opt */
  ck_assert_int_eq(p_local_user_init(sp, 0, NULL), 0);
  ck_assert_str_eq(getenv(FWD), "hcg1:7.3:llm:vision@0:tp=2;llm@2:tp=2");
  stop();

  snprintf(path, sizeof path, "%s/bad.layout", dir);
  f = fopen(path, "w");
  fputs("# two modules\nvision:tp=2\nllm:tp=\n", f);
  fclose(f);
  snprintf(arg, sizeof arg, "@%s", path);
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  option(arg);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  char want[400];
  snprintf(want, sizeof want, "error: hcg: layout '%s': line 3, column 8",
           path);
  expect_log(want);
  stop();
  remove(path);

  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  snprintf(arg, sizeof arg, "@%s", dir); /* a directory */
  option(arg);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("is not a regular file");
  stop();

  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  snprintf(arg, sizeof arg, "@%s/missing", dir);
  option(arg);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("No such file or directory");
  stop();
  remove(dir);
}
END_TEST

START_TEST(strict_arguments_in_srun_and_sbatch) {
  ck_assert_int_eq(start(S_CTX_LOCAL, "bogus=1"), -1);
  expect_log("error: hcg: plugstack.conf: unknown argument 'bogus=1'");
  stop();
  ck_assert_int_eq(start(S_CTX_ALLOCATOR, "export_dims=perhaps"), -1);
  expect_log("export_dims=perhaps: the value must be yes or no");
  stop();
}
END_TEST

START_TEST(lenient_arguments_on_nodes) {
  ck_assert_int_eq(start(S_CTX_REMOTE, "bogus=1 export_dims=no"), 0);
  expect_log("unknown argument 'bogus=1'");
  expect_log("(ignored on this node; the default is used)");
  ck_assert_ptr_nonnull(host.opt); /* the option is still known */
  stop();
  ck_assert_int_eq(start(S_CTX_SLURMD, "max_layout_bytes=0"), 0);
  expect_log("(ignored by slurmd; the default is used)");
  ck_assert_ptr_null(host.opt);
  stop();
  ck_assert_int_eq(start(S_CTX_JOB_SCRIPT, "bogus"), 0);
  stop();
}
END_TEST

START_TEST(sbatch_passes_file_text) {
  char path[] = "/tmp/hcg-test-plugin.XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "tp=2,dp=*\n", 10), 10);
  close(fd);
  char arg[64];
  snprintf(arg, sizeof arg, "@%s", path);
  ck_assert_int_eq(start(S_CTX_ALLOCATOR, NULL), 0);
  option(arg);
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_str_eq(host.control, "tp=2,dp=*\n");
  ck_assert_str_eq(getenv("_SLURM_SPANK_OPTION_hcg_hcg_layout"), "tp=2,dp=*\n");
  stop();
  remove(path);
  unsetenv("_SLURM_SPANK_OPTION_hcg_hcg_layout");

  /* Text is passed on by Slurm as it is. */
  ck_assert_int_eq(start(S_CTX_ALLOCATOR, NULL), 0);
  option("tp=2");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_str_eq(host.control, "");
  stop();

  ck_assert_int_eq(start(S_CTX_ALLOCATOR, NULL), 0);
  option("tp=2,=");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), -1);
  expect_log("hcg: layout: column 6");
  stop();
}
END_TEST

/* slurmstepd: the forwarded text becomes the task's variables. */
static void remote_task(const char *option_value, uint32_t rank) {
  ck_assert_int_eq(start(S_CTX_REMOTE, NULL), 0);
  host.rank = rank;
  if (option_value) {
    option(option_value); /* launch message */
    option(option_value); /* environment: same value again */
  }
}

START_TEST(task_gets_variables) {
  remote_task("@/some/user/file", 5); /* never opened here */
  host.world = 8;
  task_env_set(FWD, "hcg1:7.3:llm:vision@0:tp=2,dp=2;llm@4:tp=2,dp=2");
  task_env_set("SLURM_NTASKS", "8");
  ck_assert_int_eq(p_post_opt(sp, 0, NULL), 0);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_str_eq(task_env("HCG_RANK"), "5");
  ck_assert_str_eq(task_env("HCG_WORLD_SIZE"), "8");
  ck_assert_str_eq(task_env("HCG_GRIDS"), "llm");
  ck_assert_str_eq(task_env("HCG_LANGUAGE"), "llm");
  ck_assert_str_eq(task_env("HCG_LLM_TP_RANK"), "1");
  ck_assert_str_eq(task_env("HCG_LLM_DP_RANK"), "0");
  ck_assert_str_eq(task_env("HCG_LAYOUT"),
                   "vision@0:tp=2,dp=2;llm@4:tp=2,dp=2");
  ck_assert_ptr_null(task_env(FWD));
  /* And the placement verdict of its tp group: this fake Slurm knows no
   * local task, so no group is node-local. */
  ck_assert_str_eq(task_env("HCG_LLM_TP_LOCAL"), "0");
  ck_assert_int_eq(task_env_count("HCG_"), 11);
  stop();
}
END_TEST

START_TEST(task_export_dims_no) {
  ck_assert_int_eq(start(S_CTX_REMOTE, "export_dims=no"), 0);
  host.rank = 1;
  host.world = 2;
  option("tp=2");
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=2");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_int_eq(task_env_count("HCG_"), 6); /* no HCG_WORLD_TP_LOCAL */
  ck_assert_ptr_null(task_env("HCG_WORLD_TP_RANK"));
  stop();
}
END_TEST

START_TEST(task_special_steps_are_skipped) {
  static const uint32_t special[] = {0xfffffffb, 0xfffffffc, 0xfffffffa};
  for (int i = 0; i < 3; i++) {
    remote_task("tp=2", 0);
    host.step = special[i];
    task_env_set(FWD, "hcg1:7.3:!");
    ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
    ck_assert_int_eq(task_env_count("HCG_"), 0);
    stop();
  }
}
END_TEST

START_TEST(task_without_option) {
  remote_task(NULL, 0);
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=4");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_int_eq(task_env_count("HCG_"), 0);
  ck_assert_ptr_null(task_env(FWD));
  stop();
  remote_task("none", 0);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  stop();
}
END_TEST

START_TEST(task_stale_variables_removed) {
  /* An outer step's variables and a user's own HCG_RANK never reach the
   * task; user settings such as HCG_TIMEOUT do, with or without a layout. */
  for (int with = 0; with < 2; with++) {
    remote_task(with ? "tp=2" : NULL, 0);
    host.world = 1;
    task_env_set("HCG_RANK", "1");
    task_env_set("HCG_WORLD_SIZE", "2");
    task_env_set("HCG_OLD_TP_RANK", "1");
    task_env_set("HCG_TIMEOUT", "7");
    task_env_set("HCG_LIBRARY", "/x/libhcg.so");
    if (with)
      task_env_set(FWD, "hcg1:7.3:world:world@0:dp=1");
    ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
    ck_assert_ptr_null(task_env("HCG_OLD_TP_RANK"));
    ck_assert_str_eq(task_env("HCG_TIMEOUT"), "7");
    ck_assert_str_eq(task_env("HCG_LIBRARY"), "/x/libhcg.so");
    if (with) {
      ck_assert_str_eq(task_env("HCG_RANK"), "0");
      ck_assert_str_eq(task_env("HCG_WORLD_SIZE"), "1");
    } else {
      ck_assert_int_eq(task_env_count("HCG_"), 2);
    }
    stop();
  }
}
END_TEST

/* task_init for a task the plugin ends itself with _exit(1) (slurmstepd
 * would log two lines per task): it runs in a child, which must exit so;
 * the lines it logged are appended to host.log, as if it ran here. What
 * it set in its environment goes with it, as the ended task's would. */
static void task_ended(void) {
  int fds[2];
  ck_assert_int_eq(pipe(fds), 0);
  pid_t pid = fork();
  ck_assert_int_ne(pid, -1);
  if (pid == 0) {
    close(fds[0]);
    host.log_fd = fds[1];
    (void)p_task_init(sp, 0, NULL);
    _exit(2); /* task_init returned: the task would have run */
  }
  close(fds[1]);
  /* Read to the end first: a child blocked on a full pipe never exits. */
  size_t n = strlen(host.log);
  ssize_t got;
  while ((got = read(fds[0], host.log + n, sizeof host.log - 1 - n)) > 0)
    n += (size_t)got;
  host.log[n] = '\0';
  close(fds[0]);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 1,
                "the task did not end with _exit(1): status %#x", status);
}

START_TEST(task_refusals) {
  /* srun refused: every task ends quietly, only rank 0 says why. */
  remote_task("tp=3", 0);
  task_env_set(FWD, "hcg1:7.3:!");
  task_ended();
  expect_log("srun refused the layout of this step");
  stop();
  remote_task("tp=3", 2);
  task_env_set(FWD, "hcg1:7.3:!");
  task_ended();
  ck_assert_str_eq(host.log, "");
  stop();

  /* Nothing forwarded: srun lacks the plugin. */
  remote_task("tp=4", 0);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("srun did not forward the layout");
  stop();

  /* Another step's value. */
  remote_task("tp=4", 0);
  task_env_set(FWD, "hcg1:7.2:world:world@0:tp=4");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("was made for step 7.2, not for this step 7.3");
  ck_assert_int_eq(task_env_count("HCG_"), 0);
  stop();

  /* Different values on the node. */
  ck_assert_int_eq(start(S_CTX_REMOTE, NULL), 0);
  option("tp=4");
  option("tp=2");
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=4");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("two different values");
  stop();

  /* A forwarded layout that does not fit (srun and node disagree). */
  remote_task("tp=4", 0);
  host.world = 2;
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=4");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log(
      "task 0 of step 7.3: layout: column 1: grid 'world' is over sized");
  stop();

  /* Garbage. */
  remote_task("tp=4", 0);
  task_env_set(FWD, "tp=4");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("is malformed");
  stop();
}
END_TEST

/* slurmstepd of the second component (ranks 4-5) of a step of 6 tasks, its
 * first task (the one that explains a refusal). */
static void het_task(const char *forwarded, const char *het_size) {
  remote_task("@/some/user/file", 0);
  host.world = 2;
  task_env_set(FWD, forwarded);
  task_env_set("SLURM_NTASKS", "6");
  task_env_set("SLURM_PROCID", "4");
  task_env_set("SLURM_HET_SIZE", het_size);
}

START_TEST(task_of_heterogeneous_step) {
  het_task("hcg1:het:vision:tp=2,dp=2; llm:tp=2", "2");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_str_eq(task_env("HCG_RANK"), "4");
  ck_assert_str_eq(task_env("HCG_WORLD_SIZE"), "6");
  ck_assert_str_eq(task_env("HCG_GRIDS"), "llm");
  ck_assert_str_eq(task_env("HCG_LLM_TP_RANK"), "0");
  ck_assert_ptr_null(task_env(FWD));
  stop();

  het_task("hcg1:het:vision:tp=5; llm:tp=1", "2");
  task_ended();
  expect_log("grid 'vision' (ranks 0-4) straddles the components of this "
             "heterogeneous step (component 0: ranks 0-3, component 1: ranks "
             "4-5)");
  stop();

  het_task("hcg1:het:tp=2,dp=*", "3");
  task_ended();
  expect_log("has 3 components; a layout spans at most 2");
  stop();

  /* srun without the plugin, or a plain step's value. */
  het_task("hcg1:7.3:world:world@0:tp=6", "2");
  task_ended();
  expect_log("srun did not forward the layout to this heterogeneous step");
  stop();

  /* Numbers that disagree: ranks 4-5 do not fit in 5 tasks. */
  het_task("hcg1:het:tp=1", "2");
  task_env_set("SLURM_NTASKS", "5");
  task_ended();
  expect_log("task 0 of 2 of its component cannot be rank 4 of a "
             "heterogeneous step of 5 tasks");
  stop();
}
END_TEST

/* Lines of the log that start with `prefix`. */
static int log_lines(const char *prefix) {
  int n = 0;
  for (const char *l = host.log; *l; l = strchr(l, '\n') + 1) {
    n += !strncmp(l, prefix, strlen(prefix));
    if (!strchr(l, '\n'))
      break;
  }
  return n;
}

/* A variable the task cannot get: the plugin says which, once, and the
 * task does not start. A placement variable fails the task only under
 * placement=refuse; under warn the step goes on. */
static void task_with_failing_setenv(const char *args, const char *name) {
  ck_assert_int_eq(start(S_CTX_REMOTE, args), 0);
  host.rank = 1;
  host.world = 2;
  option("tp=2");
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=2");
  host.unsettable = name;
}

START_TEST(task_variable_cannot_be_set) {
  task_with_failing_setenv(NULL, "HCG_WORLD_TP_RANK");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("error: hcg: cannot set HCG_WORLD_TP_RANK for the task: fake "
             "spank error\n");
  ck_assert_int_eq(log_lines("error: "), 1);
  stop();

  task_with_failing_setenv(NULL, "HCG_WORLD_TP_LOCAL");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  expect_log("error: hcg: cannot set HCG_WORLD_TP_LOCAL for the task: fake "
             "spank error\nerror: hcg: the placement check failed\n");
  ck_assert_int_eq(log_lines("error: "), 2);
  stop();

  task_with_failing_setenv("placement=refuse", "HCG_WORLD_TP_LOCAL");
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("error: hcg: cannot set HCG_WORLD_TP_LOCAL for the task: fake "
             "spank error\nerror: hcg: the placement check failed\n");
  ck_assert_int_eq(log_lines("error: "), 2);
  stop();
}
END_TEST

START_TEST(task_forwarded_value_too_long) {
  remote_task("tp=4", 0);
  size_t n = 200000;
  char *v = malloc(n + 1);
  memset(v, 'x', n);
  v[n] = '\0';
  task_env_set(FWD, v);
  free(v);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("cannot read SLURM_HCG_STEP_LAYOUT");
  ck_assert_ptr_null(task_env(FWD));
  stop();
}
END_TEST

/* user_init (slurmstepd, before the tasks) learns the step's NVLink
 * domains and never fails, whatever Slurm answers; a task then still gets
 * its variables, and no domain verdict this fake Slurm cannot support. */
START_TEST(user_init_never_fails) {
  entry_fn p_user_init =
      (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_user_init");
  ck_assert_ptr_nonnull(p_user_init);
  remote_task("tp=4", 1);
  task_env_set(FWD, "hcg1:7.3:world:world@0:tp=4");
  task_env_set("SLURM_TOPOLOGY_ADDR_PATTERN", "block.node");
  task_env_set("SLURM_TOPOLOGY_ADDR", "b1.n1");
  task_env_set("SLURM_STEP_NODELIST", "n[1-");
  ck_assert_int_eq(p_user_init(sp, 0, NULL), 0);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_str_eq(task_env("HCG_RANK"), "1");
  ck_assert_int_eq(task_env_count("HCG_WORLD_TP_DOMAIN_LOCAL"), 0);
  stop();
  /* Without a layout, or in srun, nothing happens. */
  remote_task(NULL, 0);
  ck_assert_int_eq(p_user_init(sp, 0, NULL), 0);
  stop();
  ck_assert_int_eq(start(S_CTX_LOCAL, NULL), 0);
  ck_assert_int_eq(p_user_init(sp, 0, NULL), 0);
  stop();
}
END_TEST

/* ---- user_init plans every local task (spank/taskenv.h) ---------------- */

/* A node with local tasks first..first+n-1 of an 8-rank step with `layout`;
 * the job's environment, which user_init reads and every task copies, is
 * saved in job_env. */
static char *job_env[64];

/* The job's environment is what host.env holds now. */
static void save_job_env(void) {
  for (int i = 0; i < 64; i++) {
    free(job_env[i]);
    job_env[i] = host.env[i] ? strdup(host.env[i]) : NULL;
  }
}

static void node_of(const char *args, const char *layout, const char *fwd,
                    uint32_t first, int n) {
  ck_assert_int_eq(start(S_CTX_REMOTE, args), 0);
  option(layout);
  option(layout);
  host.world = 8;
  host.nlocal = n;
  for (int i = 0; i < n; i++)
    host.local[i] = first + (uint32_t)i;
  task_env_set(FWD, fwd);
  task_env_set("SLURM_NTASKS", "8");
  /* An outer step's variable, and a user's setting. */
  task_env_set("HCG_OLD_TP_RANK", "1");
  task_env_set("HCG_TIMEOUT", "7");
  save_job_env();
}

/* Local task lid, forked: the job's environment again. */
static void fork_task(int lid) {
  for (int i = 0; i < 64; i++) {
    free(host.env[i]);
    host.env[i] = job_env[i] ? strdup(job_env[i]) : NULL;
  }
  host.lid = lid;
  host.rank = host.local[lid];
}

static void node_done(void) {
  stop();
  for (int i = 0; i < 64; i++) {
    free(job_env[i]);
    job_env[i] = NULL;
  }
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The task's HCG_* variables, sorted, in one string. */
static void hcg_vars(char *out, size_t cap) {
  char *vars[64];
  size_t nvars = 0, n = 0;
  for (int i = 0; i < 64; i++)
    if (host.env[i] && !strncmp(host.env[i], "HCG_", 4))
      vars[nvars++] = host.env[i];
  qsort(vars, nvars, sizeof *vars, str_cmp);
  out[0] = '\0';
  for (size_t i = 0; i < nvars; i++)
    n += (size_t)snprintf(out + n, cap - n, "%s\n", vars[i]);
  ck_assert_int_lt(n, cap);
}

/* slurmstepd's user_init, before the tasks fork: what it sets in the
 * job's environment every task then copies. */
static void node_user_init(void) {
  entry_fn p = (entry_fn)(uintptr_t)dlsym(plugin, "slurm_spank_user_init");
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(p(sp, 0, NULL), 0);
  save_job_env();
}

#define FWD_8 "hcg1:7.3:world:world@0:tp=4,dp=2"

/* Whether the job's environment, which every task copies, holds `name`. */
static int job_env_has(const char *name) {
  size_t n = strlen(name);
  for (int i = 0; i < 64; i++)
    if (job_env[i] && !strncmp(job_env[i], name, n) && job_env[i][n] == '=')
      return 1;
  return 0;
}

/* After user_init: the forwarded value every task would read, were it to,
 * is spoilt, so that a task not in the plan fails ("is malformed"). */
static void spoil_forwarded(void) {
  for (int i = 0; i < 64; i++)
    if (job_env[i] && !strncmp(job_env[i], FWD "=", strlen(FWD) + 1))
      job_env[i][strlen(FWD) + 1] = '!';
}

/* Every task gets from the plan what it computes without one, and does
 * not read the forwarded value again: with every local task planned,
 * user_init removed it from the job's environment. */
START_TEST(task_planned_before_fork) {
  static const char *cases[][2] = {
      {"tp=4,dp=2", FWD_8},
      {"tp=2,dp=2,ep=2", "hcg1:7.3:world:world@0:tp=2,ep=2,dp=2"}};
  for (size_t c = 0; c < 2; c++) {
    char computed[4][2048], planned[2048];
    node_of(NULL, cases[c][0], cases[c][1], 4, 4);
    for (int lid = 0; lid < 4; lid++) {
      fork_task(lid);
      ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
      hcg_vars(computed[lid], sizeof computed[lid]);
      ck_assert_ptr_null(task_env(FWD));
    }
    node_done();
    node_of(NULL, cases[c][0], cases[c][1], 4, 4);
    node_user_init();
    ck_assert_str_eq(host.log, "");
    ck_assert(!job_env_has(FWD));
    ck_assert(!job_env_has("HCG_OLD_TP_RANK"));
    ck_assert(job_env_has("HCG_TIMEOUT"));
    for (int lid = 0; lid < 4; lid++) {
      fork_task(lid);
      ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
      hcg_vars(planned, sizeof planned);
      ck_assert_str_eq(planned, computed[lid]);
      ck_assert_ptr_null(task_env("HCG_OLD_TP_RANK"));
      ck_assert_str_eq(task_env("HCG_TIMEOUT"), "7");
      ck_assert_ptr_null(task_env(FWD));
    }
    ck_assert_str_eq(host.log, "");
    node_done();
  }
}
END_TEST

/* A task with something to say is left to compute its own, where the user
 * reads it: under warn the node's first task, whose tp group crosses the
 * node; under refuse every task. user_init says nothing. */
START_TEST(task_that_speaks_is_not_planned) {
  node_of(NULL, "tp=4,dp=2", FWD_8, 0, 2); /* ranks 0-1: tp [0-3] crosses */
  node_user_init();
  ck_assert_str_eq(host.log, "");
  ck_assert(job_env_has(FWD)); /* the first task reads it */
  spoil_forwarded();
  fork_task(0); /* reads the (spoilt) value: it was not planned */
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("is malformed");
  fork_task(1);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_str_eq(task_env("HCG_RANK"), "1");
  ck_assert_str_eq(task_env("HCG_WORLD_TP_LOCAL"), "0");
  ck_assert_ptr_null(task_env(FWD)); /* a planned task removes it itself */
  node_done();

  node_of("placement=refuse", "tp=4,dp=2", FWD_8, 0, 2);
  node_user_init();
  ck_assert_str_eq(host.log, "");
  fork_task(1);
  task_ended(); /* refused, as without a plan; the first task says why */
  fork_task(0);
  task_ended();
  expect_log("dim 'tp': group [0,1,2,3] spans vm");
  node_done();
}
END_TEST

/* A plan is made only for a step that passes every check a task would
 * make; with every local task planned, a task Slurm shows differently from
 * user_init's list (here another rank) fails with a clear line, for what it
 * would compute its own from is gone. */
START_TEST(plan_only_for_a_sound_step) {
  ck_assert_int_eq(start(S_CTX_REMOTE, NULL), 0);
  option("tp=4,dp=2");
  option("tp=2,dp=4"); /* two values on the node: no plan */
  host.world = 8;
  host.nlocal = 2;
  host.local[0] = 0;
  host.local[1] = 1;
  task_env_set(FWD, FWD_8);
  task_env_set("SLURM_NTASKS", "8");
  save_job_env();
  node_user_init();
  ck_assert(job_env_has(FWD));
  fork_task(1);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("two different values");
  node_done();

  node_of(NULL, "tp=4,dp=2", FWD_8, 4, 4);
  node_user_init();
  ck_assert_str_eq(host.log, "");
  ck_assert(!job_env_has(FWD));
  fork_task(2);
  host.rank = 1;
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("error: hcg: task 1 (local 2) of step 7.3 is not among the "
             "tasks this node planned for\n");
  ck_assert_int_eq(task_env_count("HCG_"), 1); /* HCG_TIMEOUT */
  node_done();
}
END_TEST

/* srun passes on what most tasks share (srun_good_layout): a node keeps
 * such a variable where its tasks compute it as it is, and then no task
 * sets it; every other variable of the plugin leaves the job's
 * environment. Each task ends with what it computes without any. */
START_TEST(planned_tasks_share_what_srun_passed) {
  char computed[4][2048], planned[2048];
  node_of(NULL, "tp=4,dp=2", FWD_8, 0, 4);
  for (int lid = 0; lid < 4; lid++) {
    fork_task(lid);
    ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
    hcg_vars(computed[lid], sizeof computed[lid]);
  }
  node_done();
  node_of(NULL, "tp=4,dp=2", FWD_8, 0, 4);
  static const char *passed[][2] = {
      {"HCG_VERSION", "1"},       {"HCG_LAYOUT", "world@0:tp=4,dp=2"},
      {"HCG_WORLD_SIZE", "8"},    {"HCG_GRIDS", "world"},
      {"HCG_LANGUAGE", "world"},  {"HCG_WORLD_TP_SIZE", "4"},
      {"HCG_WORLD_DP_SIZE", "3"},  /* wrong */
      {"HCG_WORLD_PP_SIZE", "2"}}; /* none */
  for (size_t i = 0; i < 8; i++)
    task_env_set(passed[i][0], passed[i][1]);
  /* A name given twice never stands for a task's own: both leave. */
  int free_slot = 0;
  while (host.env[free_slot])
    free_slot++;
  host.env[free_slot] = strdup("HCG_LANGUAGE=world");
  save_job_env();
  node_user_init();
  ck_assert_str_eq(host.log, "");
  for (size_t i = 0; i < 8; i++)
    ck_assert_int_eq(job_env_has(passed[i][0]), i < 6 && i != 4);
  ck_assert(!job_env_has("HCG_OLD_TP_RANK"));
  for (int lid = 0; lid < 4; lid++) {
    fork_task(lid);
    host.unsettable = "HCG_LAYOUT"; /* kept: no task sets it */
    ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
    hcg_vars(planned, sizeof planned);
    ck_assert_str_eq(planned, computed[lid]);
  }
  ck_assert_str_eq(host.log, "");
  node_done();
}
END_TEST

/* A planned variable that cannot be set fails the task as an unplanned one
 * does (task_variable_cannot_be_set). */
START_TEST(planned_variable_cannot_be_set) {
  /* Ranks 0-5: tp [0-3] on the node, [4-7] crossing it (the node's first
   * task says so, the others are planned). */
  node_of(NULL, "tp=4,dp=2", FWD_8, 0, 6);
  node_user_init();
  ck_assert_str_eq(host.log, "");
  spoil_forwarded();
  fork_task(1);
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  ck_assert_str_eq(task_env("HCG_WORLD_TP_LOCAL"), "1");
  fork_task(4);
  host.unsettable = "HCG_WORLD_TP_RANK";
  ck_assert_int_eq(p_task_init(sp, 0, NULL), -1);
  expect_log("error: hcg: cannot set HCG_WORLD_TP_RANK for the task: fake "
             "spank error\n");
  ck_assert_int_eq(log_lines("error: "), 1);
  fork_task(5);
  host.log[0] = '\0';
  host.unsettable = "HCG_WORLD_TP_LOCAL";
  ck_assert_int_eq(p_task_init(sp, 0, NULL), 0);
  expect_log("error: hcg: cannot set HCG_WORLD_TP_LOCAL for the task: fake "
             "spank error\nerror: hcg: the placement check failed\n");
  ck_assert_str_eq(task_env("HCG_RANK"), "5");
  node_done();
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("plugin");
  TCase *t = tcase_create("entry points");
  tcase_add_checked_fixture(t, setup, teardown);
  tcase_add_test(t, exports_only_spank_symbols);
  tcase_add_test(t, srun_good_layout);
  tcase_add_test(t, srun_without_option);
  tcase_add_test(t, srun_none);
  tcase_add_test(t, srun_syntax_error_before_allocation);
  tcase_add_test(t, srun_does_not_fit_refuses_the_step);
  tcase_add_test(t, srun_of_its_own_allocation_fails);
  tcase_add_test(t, srun_site_language_chooses_among_grids);
  tcase_add_test(t, srun_heterogeneous_step);
  tcase_add_test(t, srun_heterogeneous_two_layouts);
  tcase_add_test(t, srun_heterogeneous_replaces_inherited);
  tcase_add_test(t, task_of_heterogeneous_step);
  tcase_add_test(t, srun_no_task_count);
  tcase_add_test(t, srun_repeats_and_conflicts);
  tcase_add_test(t, srun_inherited_value_can_be_replaced);
  tcase_add_test(t, srun_size_limits);
  tcase_add_test(t, srun_layout_files);
  tcase_add_test(t, strict_arguments_in_srun_and_sbatch);
  tcase_add_test(t, lenient_arguments_on_nodes);
  tcase_add_test(t, sbatch_passes_file_text);
  tcase_add_test(t, task_gets_variables);
  tcase_add_test(t, task_export_dims_no);
  tcase_add_test(t, task_special_steps_are_skipped);
  tcase_add_test(t, task_without_option);
  tcase_add_test(t, task_stale_variables_removed);
  tcase_add_test(t, task_refusals);
  tcase_add_test(t, task_variable_cannot_be_set);
  tcase_add_test(t, task_forwarded_value_too_long);
  tcase_add_test(t, user_init_never_fails);
  tcase_add_test(t, task_planned_before_fork);
  tcase_add_test(t, task_that_speaks_is_not_planned);
  tcase_add_test(t, planned_variable_cannot_be_set);
  tcase_add_test(t, plan_only_for_a_sound_step);
  tcase_add_test(t, planned_tasks_share_what_srun_passed);
  suite_add_tcase(s, t);
  return s;
}

int main(int argc, char **argv) {
  plugin_path = argc > 1 ? argv[1] : getenv("HCG_SPANK_PLUGIN");
  if (!plugin_path)
    plugin_path = ".libs/spank_hcg.so";
  SRunner *r = srunner_create(suite());
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
