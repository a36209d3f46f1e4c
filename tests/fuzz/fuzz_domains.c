/*
 * fuzz_domains.c - libFuzzer target for what slurmstepd reads to learn the
 * step's NVLink domains (spank/domains.c): host lists (SLURM_STEP_NODELIST,
 * topology.conf's Nodes=), task counts (SLURM_STEP_TASKS_PER_NODE) and
 * topology.conf itself.
 *
 * Input: one byte choosing what is fuzzed, then its text.
 *   0  a host list: every name is at most HCGP_NODE_NAME_MAX bytes, printable,
 *      no more than the bound; the same list expands the same twice
 *   1  task counts for 1 to 64 nodes (the second byte): each count >= 1
 *   2, 3 topology.conf for a step of 4 nodes (n[1-4], 2 tasks each, this
 *      node n2 at b1.n2 or s0.s1.n2): the state is one of the three, a
 *      reason says why when unknown, and every task's domain is a known one
 *   4+ srun's placement text (spank/order.h) for 1 to 16 nodes of 1 to 4
 *      tasks (the second byte): decoded, every task is on a node of the
 *      step and each node holds its count; else a reason
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "domains.h"
#include "fuzz.h"
#include "order.h"

#define MAX_NAMES 4096

struct seen {
  long n;
  unsigned long sum;
};

static int see(void *arg, const char *name, size_t len) {
  struct seen *s = arg;
  CHECK(len >= 1 && len <= HCGP_NODE_NAME_MAX && strlen(name) == len);
  for (size_t i = 0; i < len; i++)
    CHECK(name[i] > ' ' && name[i] <= '~' && name[i] != ',');
  s->n++;
  s->sum = s->sum * 31 + (unsigned char)name[len - 1] + len;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  int mode = data[0];
  char *text = malloc(size);
  if (!text)
    return 0;
  memcpy(text, data + 1, size - 1);
  text[size - 1] = '\0';
  size_t len = size - 1;
  if (mode == 0) {
    struct seen a = {0, 0}, b = {0, 0};
    int rc = hcgp_hostlist_each(text, len, MAX_NAMES, see, &a);
    CHECK(rc == 0 || rc == -1);
    CHECK(a.n <= MAX_NAMES);
    CHECK(hcgp_hostlist_each(text, len, MAX_NAMES, see, &b) == rc);
    CHECK(a.n == b.n && a.sum == b.sum);
  } else if (mode == 1) {
    int nnodes = len ? 1 + (unsigned char)text[0] % 64 : 1;
    int counts[64];
    if (!hcgp_tasks_per_node(len ? text + 1 : text, nnodes, counts))
      for (int i = 0; i < nnodes; i++)
        CHECK(counts[i] >= 1 && counts[i] <= HCG_MAX_WORLD);
  } else if (mode >= 4) {
    int nnodes = len ? 1 + (unsigned char)text[0] % 16 : 1, counts[16],
        held[16] = {0}, world = 0;
    for (int i = 0; i < nnodes; i++)
      world += counts[i] = 1 + (i * 7 + (len ? text[0] : 0)) % 4;
    struct hcgp_step s;
    char why[512];
    if (!hcgp_order_decode(len ? text + 1 : text, counts, nnodes, world, &s,
                           why, sizeof why)) {
      for (int r = 0; r < world; r++) {
        int node = hcgp_step_node(&s, r);
        CHECK(node >= 0 && node < nnodes);
        held[node]++;
      }
      for (int i = 0; i < nnodes; i++)
        CHECK(held[i] == counts[i]);
      hcgp_step_free(&s);
    } else {
      CHECK(memchr(why, '\0', sizeof why));
    }
  } else {
    int local[2] = {2, 3};
    struct hcgp_domain_input in;
    memset(&in, 0, sizeof in);
    int tree = mode & 1;
    in.pattern = tree ? "switch.switch.node" : "block.node";
    in.addr = tree ? "s0.s1.n2" : "b1.n2";
    in.nodelist = "n[1-4]";
    in.tasks_per_node = "2(x4)";
    in.placement = "block";
    in.nnodes = 4;
    in.nodeid = 1;
    in.world = 8;
    in.local = local;
    in.nlocal = 2;
    in.topology = text;
    in.topology_len = len;
    in.topology_path = "/etc/slurm/topology.conf";
    struct hcgp_domains d;
    hcgp_domains_build(&d, &in);
    CHECK(d.state == HCGP_DOMAINS_KNOWN || d.state == HCGP_DOMAINS_UNKNOWN);
    CHECK(memchr(d.why, '\0', sizeof d.why));
    if (d.state == HCGP_DOMAINS_UNKNOWN)
      CHECK(!strncmp(d.why, "NVLink domains not checked: ", 28));
    for (int r = 0; r < 8; r++) {
      int dom = hcgp_domains_domain_of(&d, r);
      CHECK(d.state == HCGP_DOMAINS_KNOWN ? dom >= 0 && dom < d.ndomains
                                          : dom == -1);
    }
    hcgp_domains_free(&d);
  }
  free(text);
  return 0;
}
