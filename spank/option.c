/*
 * option.c - --hcg-layout=LAYOUT|@PATH|none.
 *
 * Slurm calls the callback with the argument as typed, possibly several
 * times: from the environment of an sbatch/salloc job first, then from the
 * command line (srun, sbatch, salloc), both again for each component of a
 * heterogeneous srun; and twice in slurmstepd (launch message, then
 * environment) with the same value. The callback therefore
 * only records what it sees; the decisions, and every message, come later
 * in init_post_opt (srun, sbatch, salloc) or task_init (slurmstepd), where
 * they can be explained properly instead of Slurm's generic "Invalid
 * --hcg-layout argument" followed by the whole (possibly huge) value.
 */
#include <stdlib.h>
#include <string.h>

#include "args_slurm.h"
#include "log.h"
#include "option.h"
#include "state.h"

static char *copy(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (p) {
    memcpy(p, s, n);
    p[n] = '\0';
  }
  return p;
}

/* Remembers a value; a value over HCGP_OPTION_CAP (or one we cannot copy) is
 * kept as its length only, which later fails the bound check. */
static void remember(const char *arg, size_t n) {
  free(hcgp_state.value);
  hcgp_state.value = n <= HCGP_OPTION_CAP ? copy(arg, n) : NULL;
  hcgp_state.value_len = hcgp_state.value ? n : (size_t)HCGP_OPTION_CAP + 1;
}

static int same_value(const char *arg, size_t n) {
  return hcgp_state.value && hcgp_state.value_len == n &&
         !memcmp(hcgp_state.value, arg, n);
}

static int option_cb(int val, const char *arg, int remote) {
  (void)val;
  if (!arg)
    arg = "";
  size_t n = strnlen(arg, (size_t)HCGP_OPTION_CAP + 1);
  /* Slurm reads inherited options before the command line, so the first
   * value (of each component of a heterogeneous srun) is the inherited one
   * exactly when it equals the job's variable. */
  const char *inherited = remote ? NULL : getenv(HCGP_OPTION_INHERITED_ENV);
  int env_first = !remote && hcgp_state.component_cbs++ == 0 && inherited &&
                  !strcmp(inherited, arg);

  if (!hcgp_state.given) {
    hcgp_state.given = 1;
    hcgp_state.from_env = env_first;
    remember(arg, n);
    return 0;
  }
  if (same_value(arg, n))
    return 0; /* identical repeat: slurmstepd always sees the value twice */
  if (!hcgp_state.value && n > HCGP_OPTION_CAP)
    return 0; /* two oversized values: refused for their size anyway */
  if (env_first && hcgp_state.replaced_env)
    return 0; /* read again for a later component, already replaced */
  if (!remote && hcgp_state.from_env) {
    /* A command-line value replaces the one a batch script inherited, like
     * every other srun option set both ways. */
    hcgp_state.from_env = 0;
    hcgp_state.replaced_env = 1;
    remember(arg, n);
    return 0;
  }
  if (!hcgp_state.conflict) {
    hcgp_state.conflict = 1;
    hcgp_state.conflict_value = copy(arg, n < 200 ? n : 200);
  }
  return 0;
}

static struct spank_option option = {
    HCGP_OPTION_NAME,
    "LAYOUT",
    "[hcg] Megatron parallel groups of this step, e.g. "
    "'tp=2,cp=2,pp=4,dp=*' or 'vision:tp=4,dp=2; llm:tp=2,pp=2,dp=*'; "
    "@PATH reads the layout from a file, 'none' drops a layout inherited "
    "from sbatch/salloc. Each task gets HCG_RANK, HCG_LAYOUT and "
    "HCG_<GRID>_<DIM>_RANK/_SIZE (see hcg(1)).",
    1,
    0,
    option_cb};

/* --hcg-placement: a value srun rejects at once; one that reaches
 * slurmstepd anyway (a private srun) is refused in task_init. */
static int placement_cb(int val, const char *arg, int remote) {
  (void)val;
  int p = hcgp_placement_parse(arg, 0);
  hcgp_state.placement_given = 1;
  hcgp_state.placement_bad = p < 0;
  hcgp_state.placement = p < 0 ? HCGP_PLACEMENT_WARN : p;
  if (p < 0 && !remote) {
    hcgp_log(HCGP_LOG_ERROR,
             "--hcg-placement=%.40s: the value must be "
             "warn or refuse",
             arg ? arg : "");
    return -1;
  }
  return 0;
}

static struct spank_option placement_option = {
    "hcg-placement",
    "warn|refuse",
    "[hcg] what a tp/cp/ep group that crosses nodes does: warn (one line "
    "on srun's stderr) or refuse (the step fails before the program runs); "
    "the default is the site's (see spank_hcg(8)).",
    1,
    0,
    placement_cb};

int hcgp_option_init(spank_t sp, int ac, char **av) {
  hcgp_args_load(ac, av, 1, NULL);
  if (hcgp_state.args_bad)
    return -1;
  return hcgp_option_register(sp);
}

int hcgp_option_register(spank_t sp) {
  spank_err_t rc = spank_option_register(sp, &placement_option);
  if (rc != ESPANK_SUCCESS)
    hcgp_log(HCGP_LOG_ERROR, "cannot register --hcg-placement: %s",
             spank_strerror(rc));
  rc = spank_option_register(sp, &option);
  if (rc != ESPANK_SUCCESS) {
    hcgp_log(HCGP_LOG_ERROR, "cannot register --%s: %s", HCGP_OPTION_NAME,
             spank_strerror(rc));
    return -1;
  }
  hcgp_state.registered = 1;
  return 0;
}

int hcgp_option_active(void) {
  if (!hcgp_state.given)
    return 0;
  return !(hcgp_state.value && !strcmp(hcgp_state.value, HCGP_OPTION_NONE));
}

int hcgp_option_check(void) {
  if (hcgp_state.conflict) {
    hcgp_log(HCGP_LOG_ERROR,
             "--%s is given twice with different values "
             "('%.60s%s' and '%.60s%s'); give it once",
             HCGP_OPTION_NAME, hcgp_state.value ? hcgp_state.value : "...",
             hcgp_state.value && hcgp_state.value_len > 60 ? "..." : "",
             hcgp_state.conflict_value ? hcgp_state.conflict_value : "...",
             hcgp_state.conflict_value && strlen(hcgp_state.conflict_value) > 60
                 ? "..."
                 : "");
    return -1;
  }
  size_t max = hcgp_state.args.max_layout_bytes;
  if (hcgp_state.value && hcgp_state.value[0] == '@') {
    /* A path: the file's size is checked when it is read. */
    if (hcgp_state.value_len > 4096) {
      hcgp_log(HCGP_LOG_ERROR, "--%s=@PATH: the path is %zu bytes long",
               HCGP_OPTION_NAME, hcgp_state.value_len - 1);
      return -1;
    }
    return 0;
  }
  if (!hcgp_state.value || hcgp_state.value_len > max) {
    if (hcgp_state.value_len > HCGP_OPTION_CAP)
      hcgp_log(HCGP_LOG_ERROR,
               "the layout given to --%s is more than %u "
               "bytes; the limit is %zu bytes "
               "(max_layout_bytes in plugstack.conf)",
               HCGP_OPTION_NAME, HCGP_OPTION_CAP, max);
    else
      hcgp_log(HCGP_LOG_ERROR,
               "the layout given to --%s is %zu bytes; the "
               "limit is %zu bytes (max_layout_bytes in "
               "plugstack.conf)",
               HCGP_OPTION_NAME, hcgp_state.value_len, max);
    return -1;
  }
  return 0;
}
