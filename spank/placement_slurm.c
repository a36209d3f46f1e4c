/*
 * placement_slurm.c - slurmstepd: the placement check of a task's node
 * (placement.h), answered with Slurm's local task ids, and what the policy
 * does with it: each task gets HCG_<GRID>[_<VIEW>]_<DIM>_LOCAL=1|0, the
 * node's first task prints the step's one line, and under refuse every
 * task of a node that sees a crossing group fails before the program runs.
 * Where the step's NVLink domains are known (domains_slurm.c), the same
 * for the domain list: HCG_..._DOMAIN_LOCAL=1|0 and a line of its own,
 * with a suggestion; where they cannot be learnt, one line says why.
 *
 * Runs in task_init, after the layout variables are recorded, on the layout
 * hcgp_task_env_keep parsed and checked for them (forward.h); and in
 * user_init for each local task, which plans the tasks' variables
 * (taskenv_slurm.c), with the node's first task known by its local id.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "domains_slurm.h"
#include "forward.h"
#include "forward_slurm.h"
#include "log.h"
#include "placement.h"
#include "placement_slurm.h"
#include "state.h"

/* More local tasks than this is not a real node; the check is skipped
 * (with a log line) rather than allocate for it. */
enum { LOCAL_TASKS_MAX = 1 << 16 };

/* 0 for a global id of this node, -1 for any other. */
static int on_this_node(void *arg, int rank) {
  uint32_t lid = 0;
  return rank >= 0 && spank_get_item((spank_t)arg, S_JOB_GLOBAL_TO_LOCAL_ID,
                                     (uint32_t)rank, &lid) == ESPANK_SUCCESS
             ? 0
             : -1;
}

int hcgp_placement_policy(void) {
  return hcgp_state.placement_given ? hcgp_state.placement
                                    : hcgp_state.args.placement;
}

int *hcgp_local_tasks(spank_t sp, int *n) {
  uint32_t count = 0;
  *n = 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &count) != ESPANK_SUCCESS ||
      count < 1 || count > LOCAL_TASKS_MAX)
    return NULL;
  int *ids = malloc(sizeof *ids * count);
  for (uint32_t i = 0; ids && i < count; i++) {
    uint32_t gid = 0;
    if (spank_get_item(sp, S_JOB_LOCAL_TO_GLOBAL_ID, i, &gid) !=
            ESPANK_SUCCESS ||
        gid > (uint32_t)HCG_MAX_WORLD) {
      free(ids);
      return NULL;
    }
    ids[i] = (int)gid;
  }
  *n = ids ? (int)count : 0;
  return ids;
}

static void node_name(spank_t sp, char *buf, size_t cap) {
  if (spank_getenv(sp, "SLURMD_NODENAME", buf, (int)cap) == ESPANK_SUCCESS &&
      buf[0])
    return;
  if (gethostname(buf, cap) != 0 || !buf[0])
    snprintf(buf, cap, "this node");
  buf[cap - 1] = '\0';
}

/* The local task user_init is planning for (taskenv_slurm.c), or -1. */
static int planned_lid = -1;

void hcgp_placement_plan_for(int lid) { planned_lid = lid; }

/* The node's first task (S_TASK_ID is an int *). */
static int first_task(spank_t sp) {
  if (planned_lid >= 0)
    return planned_lid == 0;
  int lid = 1;
  return spank_get_item(sp, S_TASK_ID, &lid) == ESPANK_SUCCESS && lid == 0;
}

/* The step's line: an error where it refuses the step, else a warning on
 * the task's stderr (srun shows it once, without "error:"). */
static void say(int policy, const char *line) {
  hcgp_log(policy == HCGP_PLACEMENT_REFUSE ? HCGP_LOG_ERROR : HCGP_LOG_TASK,
           "%s", line);
}

/* The node's verdicts on a step: the node list's and, where the domains
 * are known, the domain list's. They depend on the node, not the task, so
 * slurmstepd computes them once per step, before the tasks are forked
 * (hcgp_placement_prepare), and every task inherits them; a task finds
 * them itself only where that did not happen. */
struct node_verdicts {
  int state; /* 0 not computed, 1 computed, -1 the check failed        */
  uint32_t job, step;
  int node_known;              /* a node check was made (local tasks known) */
  struct hcgp_node_check node; /* node list                                */
  int domain_known;            /* the domains are known                    */
  struct hcgp_node_check domain;
};
static struct node_verdicts cached;

static void verdicts(spank_t sp, const hcg_layout *L, int policy,
                     struct node_verdicts *v) {
  int nlocal = 0, step_wide = policy == HCGP_PLACEMENT_REFUSE;
  int *local = hcgp_local_tasks(sp, &nlocal);
  const char *dims = hcgp_state.args.intra_node_dims;
  /* The step's domains: where known, the domain list is judged by domain
   * and left off the node check. */
  const struct hcgp_domains *dom = hcgp_state.args.intra_domain_dims[0]
                                       ? hcgp_domains_learn(sp, local, nlocal)
                                       : NULL;
  char node_dims[2 * HCGP_DIMS_MAX + 2];
  v->state = 1;
  v->domain_known = dom && dom->state == HCGP_DOMAINS_KNOWN;
  if (v->domain_known &&
      hcg_placement_node_level_dims(dims, hcgp_state.args.intra_domain_dims,
                                    node_dims, sizeof node_dims) == HCG_OK)
    dims = node_dims;
  v->node_known = local != NULL;
  if (!local) {
    /* Without the node's task list the variables still stand; only the
     * node-wide verdict is missing. */
    hcgp_log(HCGP_LOG_VERBOSE, "no local task list; placement of the "
                               "other tasks of this node not checked");
  } else if (v->domain_known) {
    /* Every rank's node is known too: the step's verdict, as for domains
     * (placement.h), so that every node decides alike. */
    if (hcgp_domain_check(L, dims, local, nlocal, hcgp_domains_node_of,
                          (void *)dom, on_this_node, sp, 1, step_wide,
                          &v->node) != HCG_OK ||
        hcgp_domain_check(L, hcgp_state.args.intra_domain_dims, local, nlocal,
                          hcgp_domains_domain_of, (void *)dom, on_this_node, sp,
                          1, step_wide, &v->domain) != HCG_OK)
      v->state = -1;
  } else if (hcgp_node_check(L, dims, local, nlocal, on_this_node, sp,
                             &v->node) != HCG_OK) {
    v->state = -1;
  } else {
    v->node.step = -1;
  }
  free(local);
}

/* Whether a verdict stops the step (or, under warn, gets a line). */
static int crosses(const struct hcgp_node_check *c) {
  return c->step > 0 || (c->step < 0 && c->crossing);
}

void hcgp_placement_prepare(spank_t sp, const hcg_layout *L, uint32_t job,
                            uint32_t step) {
  int policy = hcgp_placement_policy();
  if (policy == HCGP_PLACEMENT_OFF || hcgp_state.placement_bad)
    return;
  memset(&cached, 0, sizeof cached);
  verdicts(sp, L, policy, &cached);
  cached.job = job;
  cached.step = step;
}

/* The domain list's line, from the node that speaks. */
static void domain_line(const hcg_layout *L, const struct hcgp_domains *dom,
                        const struct hcgp_node_check *check, int policy) {
  char here[HCGP_NODE_NAME_MAX + 16], there[HCGP_NODE_NAME_MAX + 16];
  char suggestion[HCG_ERROR_MAX], line[3 * HCG_ERROR_MAX];
  void *arg = (void *)dom;
  hcgp_domains_name(dom, hcgp_domains_domain_of(arg, check->example.apart[0]),
                    here, sizeof here);
  hcgp_domains_name(dom, hcgp_domains_domain_of(arg, check->example.apart[1]),
                    there, sizeof there);
  int s = hcgp_domains_suggest(dom, L, hcgp_state.args.intra_node_dims,
                               hcgp_state.args.intra_domain_dims,
                               check->example.group.size, suggestion,
                               sizeof suggestion);
  hcgp_domain_line(L, check, here, there, policy, s > 0 ? suggestion : NULL,
                   line, sizeof line);
  say(policy, line);
}

enum hcgp_task_verdict hcgp_placement_task(spank_t sp, const hcg_layout *L,
                                           const struct hcgp_task *t) {
  int policy = hcgp_placement_policy();
  if (policy == HCGP_PLACEMENT_OFF)
    return HCGP_TASK_RUNS;
  if (hcgp_state.placement_bad) {
    hcgp_log(HCGP_LOG_ERROR, "--hcg-placement takes warn or refuse");
    return HCGP_TASK_FAILED;
  }
  /* Per-dim variables, like _RANK and _SIZE: export_dims=no leaves them
   * out (the check itself still runs). */
  struct hcgp_setter setter = {sp, 0, 1};
  int failed = t->export_dims &&
               hcg_rank_placement_env(
                   L, (int)t->rank, hcgp_state.args.intra_node_dims,
                   on_this_node, sp, hcgp_setter_set, &setter) != HCG_OK;
  if (!failed &&
      (cached.state == 0 || cached.job != t->job || cached.step != t->step)) {
    memset(&cached, 0, sizeof cached);
    verdicts(sp, L, policy, &cached);
  }
  failed = failed || cached.state < 0;
  const struct hcgp_domains *dom =
      hcgp_state.args.intra_domain_dims[0] && !failed
          ? hcgp_domains_learn(sp, NULL, 0)
          : NULL;
  int first = first_task(sp), refused = 0;
  if (dom && dom->state == HCGP_DOMAINS_UNKNOWN && first) {
    /* One line for the step, from its first node; another node's own
     * reason goes to the node's log. */
    if (dom->nodeid == 0)
      hcgp_log(HCGP_LOG_TASK, "placement: %s", dom->why);
    else if (dom->this_node)
      hcgp_log(HCGP_LOG_INFO, "placement: %s", dom->why);
  }
  if (!failed && cached.node_known && crosses(&cached.node)) {
    /* The node's first task speaks for the node, if the node speaks. */
    if (cached.node.speak && first) {
      char here[128], line[2 * HCG_ERROR_MAX];
      node_name(sp, here, sizeof here);
      hcgp_placement_line(L, &cached.node, here, policy, line, sizeof line);
      say(policy, line);
    }
    refused = policy == HCGP_PLACEMENT_REFUSE;
  }
  if (!failed && cached.domain_known && dom &&
      dom->state == HCGP_DOMAINS_KNOWN) {
    struct hcgp_setter dsetter = {sp, 0, 1};
    failed =
        t->export_dims &&
        hcg_rank_domain_env(L, (int)t->rank, hcgp_state.args.intra_domain_dims,
                            hcgp_domains_domain_of, (void *)dom,
                            hcgp_setter_set, &dsetter) != HCG_OK;
    if (!failed && cached.node_known && crosses(&cached.domain)) {
      if (cached.domain.speak && first)
        domain_line(L, dom, &cached.domain, policy);
      refused = refused || policy == HCGP_PLACEMENT_REFUSE;
    }
  }
  if (failed)
    return hcgp_placement_failed();
  return refused ? HCGP_TASK_REFUSED : HCGP_TASK_RUNS;
}

enum hcgp_task_verdict hcgp_placement_failed(void) {
  hcgp_log(HCGP_LOG_ERROR, "the placement check failed");
  /* Under warn a failed check is a warning only: the step goes on. */
  return hcgp_placement_policy() == HCGP_PLACEMENT_REFUSE ? HCGP_TASK_FAILED
                                                          : HCGP_TASK_RUNS;
}
