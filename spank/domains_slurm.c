/*
 * domains_slurm.c - slurmstepd: what the step's NVLink domains are learnt
 * from (domains.h), read once per step on each node and kept for its tasks.
 *
 * Once per step: slurm_spank_user_init runs in slurmstepd, as the user,
 * before the tasks are forked, so the tasks inherit what it learnt
 * (slurmstepd.c); a task whose slurmstepd did not call it learns it itself
 * in task_init. Both run as the user: topology.conf is read with the
 * user's permissions, from the directory of slurmstepd's own SLURM_CONF
 * (set by slurmd, where Slurm's topology plugins read it), never from a
 * path the user names. Nothing here fails the step: what cannot be learnt
 * leaves the domains unknown, with the reason, and task_init says it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "domains.h"
#include "domains_slurm.h"
#include "order.h"

/* Longest SLURM_STEP_NODELIST read (a host list of many ranges). */
enum { NODELIST_MAX = 1 << 20, VALUE_MAX = 512 };

/* A variable of the step, in a buffer of cap bytes, retried larger up to
 * max; NULL when unset or longer. */
static char *step_env(spank_t sp, const char *name, size_t max) {
  for (size_t cap = VALUE_MAX < max ? VALUE_MAX : max;;
       cap = cap * 4 < max ? cap * 4 : max) {
    char *buf = malloc(cap);
    if (!buf)
      return NULL;
    spank_err_t rc = spank_getenv(sp, name, buf, (int)cap);
    if (rc == ESPANK_SUCCESS)
      return buf;
    free(buf);
    if (rc != ESPANK_NOSPACE || cap == max)
      return NULL;
  }
}

/* topology.conf beside SLURM_CONF: its text, or NULL with *why. */
static char *read_topology(const char *path, size_t *len, const char **why) {
  *len = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    *why = strerror(errno);
    return NULL;
  }
  struct stat st;
  char *text = NULL;
  if (fstat(fd, &st) != 0) {
    *why = strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    *why = "not a regular file";
  } else if (st.st_size > HCGP_TOPOLOGY_MAX_BYTES) {
    *why = "larger than hcg reads (8 MiB)";
  } else if (!(text = malloc((size_t)st.st_size + 1))) {
    *why = "out of memory";
  } else {
    size_t got = 0, want = (size_t)st.st_size;
    while (got < want) {
      ssize_t n = read(fd, text + got, want - got);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        break;
      got += (size_t)n;
    }
    if (got != want) {
      *why = "it changed while being read";
      free(text);
      text = NULL;
    } else {
      text[got] = '\0';
      *len = got;
    }
  }
  close(fd);
  return text;
}

static void learn(spank_t sp, const int *local, int nlocal,
                  struct hcgp_domains *out) {
  struct hcgp_domain_input in;
  memset(&in, 0, sizeof in);
  uint32_t nnodes = 0, nodeid = 0, world = 0;
  in.nnodes = spank_get_item(sp, S_JOB_NNODES, &nnodes) == ESPANK_SUCCESS
                  ? (long)nnodes
                  : -1;
  in.nodeid = spank_get_item(sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS
                  ? (long)nodeid
                  : -1;
  in.world =
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &world) == ESPANK_SUCCESS
          ? (long)world
          : -1;
  in.local = local;
  in.nlocal = nlocal;
  char *pattern = step_env(sp, "SLURM_TOPOLOGY_ADDR_PATTERN", VALUE_MAX);
  char *addr = step_env(sp, "SLURM_TOPOLOGY_ADDR", 4 * VALUE_MAX);
  char *nodelist = NULL, *tpn = NULL, *placed = NULL;
  char *path = NULL, *text = NULL;
  in.pattern = pattern;
  in.addr = addr;
  /* Only a topology with domains is worth reading the rest for. */
  if (pattern && addr && strcmp(pattern, "node")) {
    in.nodelist = nodelist = step_env(sp, "SLURM_STEP_NODELIST", NODELIST_MAX);
    in.tasks_per_node = tpn =
        step_env(sp, "SLURM_STEP_TASKS_PER_NODE", NODELIST_MAX);
    /* Where srun says Slurm put the tasks, for this step only (order.h). */
    uint32_t job = 0, step = 0;
    placed = step_env(sp, HCGP_ORDER_ENV, HCGP_ORDER_MAX + 64);
    if (spank_get_item(sp, S_JOB_ID, &job) == ESPANK_SUCCESS &&
        spank_get_item(sp, S_JOB_STEPID, &step) == ESPANK_SUCCESS)
      in.placement = hcgp_order_text(placed, job, step);
    /* slurmstepd's own environment, from slurmd: not the job's. */
    const char *conf = getenv("SLURM_CONF");
    if (conf && conf[0] != '/')
      in.topology_error = "slurmstepd's SLURM_CONF is not an absolute path";
    else if (!conf)
      in.topology_error = "slurmstepd has no SLURM_CONF";
    else if (strlen(conf) >= 4096)
      in.topology_error = "slurmstepd's SLURM_CONF is too long";
    else {
      const char *slash = strrchr(conf, '/');
      size_t dir = (size_t)(slash - conf) + 1;
      path = malloc(dir + sizeof "topology.conf");
      if (path) {
        memcpy(path, conf, dir);
        strcpy(path + dir, "topology.conf");
        in.topology_path = path;
        in.topology = text =
            read_topology(path, &in.topology_len, &in.topology_error);
      }
    }
  }
  hcgp_domains_build(out, &in);
  free(pattern);
  free(addr);
  free(nodelist);
  free(tpn);
  free(placed);
  free(path);
  free(text);
}

/* slurmstepd: the step's NVLink domains, learnt once. */
static int learnt;
static struct hcgp_domains domains;

const struct hcgp_domains *hcgp_domains_learn(spank_t sp, const int *local,
                                              int nlocal) {
  if (!learnt) {
    learn(sp, local, nlocal, &domains);
    learnt = 1;
  }
  return &domains;
}

void hcgp_domains_forget(void) {
  hcgp_domains_free(&domains);
  learnt = 0;
}
