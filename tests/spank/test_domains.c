/*
 * test_domains.c - unit tests of spank/domains.c (what slurmstepd learns of
 * the step's NVLink domains), the domain level of the node check, its line,
 * and the intra_domain_dims= argument. Part of test_spank.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "domains.h"
#include "order.h"
#include "placement.h"

TCase *domains_tcase(void);

/* ---- host lists and task counts ------------------------------------------ */

struct listed {
  char text[2048];
  int n;
};

static int list_host(void *arg, const char *name, size_t len) {
  struct listed *l = arg;
  ck_assert_uint_eq(strlen(name), len);
  snprintf(l->text + strlen(l->text), sizeof l->text - strlen(l->text), "%s%s",
           l->n++ ? " " : "", name);
  return 0;
}

static int expand(const char *list, long max, char *out) {
  struct listed l = {"", 0};
  int rc = hcgp_hostlist_each(list, strlen(list), max, list_host, &l);
  strcpy(out, l.text);
  return rc;
}

START_TEST(hostlists) {
  char out[2048];
  ck_assert_int_eq(expand("n[1-3,08-10],m2", 100, out), 0);
  ck_assert_str_eq(out, "n1 n2 n3 n08 n09 n10 m2");
  ck_assert_int_eq(expand("vm,hcgn[2-4]", 100, out), 0);
  ck_assert_str_eq(out, "vm hcgn2 hcgn3 hcgn4");
  ck_assert_int_eq(expand("r[1-2]n[3-4]x", 100, out), 0);
  ck_assert_str_eq(out, "r1n3x r1n4x r2n3x r2n4x");
  ck_assert_int_eq(expand("n[8-10]", 100, out), 0);
  ck_assert_str_eq(out, "n8 n9 n10");
  ck_assert_int_eq(expand("", 100, out), 0);
  ck_assert_str_eq(out, "");
  const char *bad[] = {"n[",
                       "n]",
                       "n[1-",
                       "n[3-1]",
                       "n[1,]",
                       "n[,1]",
                       "a,,b",
                       "a,",
                       ",a",
                       "a b",
                       "n[a]",
                       "n[1]]",
                       "n[[1]]",
                       "n[]",
                       "n[-1]",
                       "n[1-1000000000]",
                       "a[1]b[1]c[1]d[1]e[1]",
                       "n\xc3\xa9"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(expand(bad[i], 100, out) == -1, "'%s' gave %s", bad[i], out);
  /* Bounds: names and their count. */
  char name[300];
  memset(name, 'a', sizeof name);
  name[256] = '\0';
  ck_assert_int_eq(expand(name, 100, out), -1);
  name[255] = '\0';
  ck_assert_int_eq(expand(name, 100, out), 0);
  ck_assert_int_eq(expand("n[1-3]", 2, out), -1);
  ck_assert_int_eq(expand("n[1-3]", 3, out), 0);
  ck_assert_int_eq(hcgp_hostlist_each(NULL, 0, 1, list_host, NULL), -1);
}
END_TEST

START_TEST(tasks_per_node) {
  int c[8];
  ck_assert_int_eq(hcgp_tasks_per_node("2(x3),1", 4, c), 0);
  ck_assert_int_eq(c[0] * 1000 + c[1] * 100 + c[2] * 10 + c[3], 2221);
  ck_assert_int_eq(hcgp_tasks_per_node("4", 1, c), 0);
  ck_assert_int_eq(c[0], 4);
  const char *bad[] = {"",     "2(x3),1,", "2(x3", "0",  "2(x0)",
                       "2(3)", "-1",       "2,,1", "x2", "2(x3),2(x2)"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(hcgp_tasks_per_node(bad[i], 4, c) == -1, "'%s'", bad[i]);
  ck_assert_int_eq(hcgp_tasks_per_node("2(x3),1", 3, c), -1);
  ck_assert_int_eq(hcgp_tasks_per_node("2(x3),1", 5, c), -1);
  ck_assert_int_eq(hcgp_tasks_per_node(NULL, 1, c), -1);
}
END_TEST

/* ---- where the tasks run ----------------------------------------------------
 */

static void expect_layout(const int *counts, int nnodes, int dist, int plane,
                          const char *expected) {
  int world = 0;
  for (int i = 0; i < nnodes; i++)
    world += counts[i];
  struct hcgp_step s;
  ck_assert_int_eq(hcgp_step_init(&s, counts, nnodes, world, dist, plane), 0);
  char got[256] = "";
  for (int r = 0; r < world; r++)
    snprintf(got + strlen(got), sizeof got - strlen(got), "%d",
             hcgp_step_node(&s, r));
  ck_assert_str_eq(got, expected);
  ck_assert_int_eq(hcgp_step_node(&s, world), -1);
  ck_assert_int_eq(hcgp_step_node(&s, -1), -1);
  hcgp_step_free(&s);
}

START_TEST(step_layouts) {
  /* Slurm's layouts for given task counts (slurm_step_layout.c). */
  int a[] = {3, 3, 2, 2};
  expect_layout(a, 4, HCG_DIST_BLOCK, 0, "0001112233");
  expect_layout(a, 4, HCG_DIST_CYCLIC, 0, "0123012301");
  int b[] = {5, 3}; /* plane=2 on this test cluster's two nodes */
  expect_layout(b, 2, HCG_DIST_PLANE, 2, "00110010");
  int c[] = {1, 3};
  expect_layout(c, 2, HCG_DIST_CYCLIC, 0, "0111");
  expect_layout(c, 2, HCG_DIST_BLOCK, 0, "0111");
  int d[] = {4, 4, 4};
  expect_layout(d, 3, HCG_DIST_PLANE, 2, "001122001122");
  expect_layout(d, 3, HCG_DIST_PLANE, 3, "000111222012");
  expect_layout(d, 3, HCG_DIST_PLANE, 8, "000011112222"); /* plane > count */
  /* Any counts: the same as dealing, round after round, up to `plane`
   * tasks to each node with room left, as Slurm's step layout does. */
  unsigned seed = 7;
  for (int trial = 0; trial < 400; trial++) {
    int counts[9], left[9], nodes = 1 + trial % 9, plane = 1 + trial % 5,
                            world = 0, want[128], got;
    for (int i = 0; i < nodes; i++) {
      seed = seed * 1103515245u + 12345u;
      counts[i] = left[i] = 1 + (int)((seed >> 16) % 12);
      world += counts[i];
    }
    for (int r = 0; r < world;)
      for (int i = 0; i < nodes; i++)
        for (int k = 0; k < plane && left[i] > 0; k++, left[i]--)
          want[r++] = i;
    struct hcgp_step st;
    ck_assert_int_eq(
        hcgp_step_init(&st, counts, nodes, world,
                       plane == 1 ? HCG_DIST_CYCLIC : HCG_DIST_PLANE, plane),
        0);
    for (int r = 0; r < world; r++)
      ck_assert_msg((got = hcgp_step_node(&st, r)) == want[r],
                    "trial %d rank %d: node %d, not %d", trial, r, got,
                    want[r]);
    hcgp_step_free(&st);
  }
  /* Even spreads agree with hcg check's model (hcg_placement). */
  for (int world = 1; world <= 24; world++)
    for (int nodes = 1; nodes <= world; nodes++)
      for (int k = 0; k < 2; k++) {
        const char *name = k ? "cyclic" : "block";
        hcg_placement p;
        hcg_error err = HCG_ERROR_INIT;
        ck_assert_int_eq(hcg_placement_make(world, nodes, 0, name, &p, &err),
                         0);
        int counts[24] = {0};
        for (int r = 0; r < world; r++)
          counts[hcg_placement_node(&p, r)]++;
        struct hcgp_step s;
        ck_assert_int_eq(hcgp_step_init(&s, counts, nodes, world,
                                        k ? HCG_DIST_CYCLIC : HCG_DIST_BLOCK,
                                        0),
                         0);
        for (int r = 0; r < world; r++)
          ck_assert_int_eq(hcgp_step_node(&s, r), hcg_placement_node(&p, r));
        hcgp_step_free(&s);
      }
  /* Bad counts. */
  struct hcgp_step s;
  int zero[] = {2, 0};
  ck_assert_int_eq(hcgp_step_init(&s, zero, 2, 2, HCG_DIST_BLOCK, 0), -1);
  ck_assert_int_eq(hcgp_step_init(&s, a, 4, 11, HCG_DIST_BLOCK, 0), -1);
  ck_assert_int_eq(hcgp_step_init(&s, a, 4, 10, HCG_DIST_PLANE, 0), -1);
  ck_assert_int_eq(hcgp_step_node(NULL, 0), -1);
}
END_TEST

/* ---- Slurm's layout, as srun hands it on (order.h) ----------------------- */

/* Encodes the layout node[r] (the node of each rank) and decodes it again:
 * the text (any text where text is NULL), and every rank back on its node. */
static void expect_order(const int *node, int nnodes, int world, int plane,
                         const char *text) {
  int counts[16] = {0};
  uint32_t ids[16][64], *tids[16];
  for (int r = 0; r < world; r++)
    ids[node[r]][counts[node[r]]++] = (uint32_t)r;
  for (int i = 0; i < nnodes; i++)
    tids[i] = ids[i];
  char buf[256], why[256];
  int rc =
      hcgp_order_encode(nnodes, world, counts, (const uint32_t *const *)tids,
                        plane, buf, sizeof buf, why, sizeof why);
  if (text && text[0] == '!') {
    ck_assert_int_eq(rc, -1);
    ck_assert_msg(strstr(why, text + 1), "'%s' not in '%s'", text + 1, why);
    return;
  }
  ck_assert_msg(rc == 0, "%s", why);
  if (text)
    ck_assert_str_eq(buf, text);
  struct hcgp_step s;
  ck_assert_int_eq(
      hcgp_order_decode(buf, counts, nnodes, world, &s, why, sizeof why), 0);
  for (int r = 0; r < world; r++)
    ck_assert_int_eq(hcgp_step_node(&s, r), node[r]);
  hcgp_step_free(&s);
}

START_TEST(slurm_orders) {
  /* Slurm 26.05, 4 nodes n1..n4 of 2 tasks, block in topology order:
   * blocks b1=n3,n4 b2=n1,n2 (swapped), and b1=n1,n3 b2=n2,n4. */
  int swapped[] = {2, 2, 3, 3, 0, 0, 1, 1};
  expect_order(swapped, 4, 8, 0, "block:2-3,0-1");
  int interleaved[] = {0, 0, 2, 2, 1, 1, 3, 3};
  expect_order(interleaved, 4, 8, 0, "block:0,2,1,3");
  int name[] = {0, 0, 1, 1, 2, 2, 3, 3};
  expect_order(name, 4, 8, 0, "block");
  int cyclic[] = {0, 1, 2, 3, 0, 1, 2, 3};
  expect_order(cyclic, 4, 8, 0, "cyclic");
  int plane[] = {0, 0, 0, 1, 1, 1, 0, 1}; /* plane=3 over 4 and 4 */
  expect_order(plane, 2, 8, 3, "plane=3");
  /* plane=2 over counts 3,3,1,1 (Slurm's own counts for plane with
   * --overcommit), the plane size not given: read from the layout. */
  int uneven[] = {0, 0, 1, 1, 2, 3, 0, 1};
  expect_order(uneven, 4, 8, 0, "plane=2");
  expect_order(uneven, 4, 8, 2, "plane=2");
  int arbitrary[] = {0, 1, 1, 0};
  expect_order(arbitrary, 2, 4, 0, "!in a way hcg does not model");
  /* Random counts and orders: block over the order comes back. */
  unsigned seed = 11;
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + trial % 16, order[16], counts[16], node[64], world = 0;
    for (int i = 0; i < n; i++)
      order[i] = i;
    for (int i = n - 1; i > 0; i--) {
      seed = seed * 1103515245u + 12345u;
      int j = (int)((seed >> 16) % (unsigned)(i + 1)), t = order[i];
      order[i] = order[j];
      order[j] = t;
    }
    for (int i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      counts[i] = 1 + (int)((seed >> 16) % 4);
    }
    for (int i = 0; i < n; i++)
      for (int k = 0; k < counts[order[i]]; k++)
        node[world++] = order[i];
    expect_order(node, n, world, 0, NULL);
  }
  /* Bounds: a text that does not fit says so. */
  int c4[] = {2, 2, 2, 2};
  uint32_t a[] = {4, 5}, b[] = {0, 1}, c[] = {6, 7}, d[] = {2, 3};
  const uint32_t *t4[] = {a, b, c, d};
  char small[8], why[256];
  ck_assert_int_eq(
      hcgp_order_encode(4, 8, c4, t4, 0, small, sizeof small, why, sizeof why),
      -1);
  ck_assert_ptr_nonnull(strstr(why, "longer than hcg forwards"));
  ck_assert_int_eq(
      hcgp_order_encode(0, 8, c4, t4, 0, small, sizeof small, why, sizeof why),
      -1);
  /* The header ties the text to one step. */
  char value[64];
  ck_assert_int_eq(hcgp_order_value(7, 2, "block:1,0", value, sizeof value), 0);
  ck_assert_str_eq(value, "hcgo1:7.2:block:1,0");
  ck_assert_str_eq(hcgp_order_text(value, 7, 2), "block:1,0");
  ck_assert_ptr_null(hcgp_order_text(value, 7, 3));
  ck_assert_ptr_null(hcgp_order_text(value, 71, 2));
  ck_assert_ptr_null(hcgp_order_text(NULL, 7, 2));
}
END_TEST

/* Every node of the interleaved cluster (b1 = nodes 0 and 2, b2 = 1 and 3,
 * block in that order): each rank's domain, and each node's verdict on
 * `text` under refuse: the same everywhere. */

/* ---- the domains
 * ---------------------------------------------------------------- */

static const char blocks[] = "# the test cluster's blocks\n"
                             "BlockName=b1 Nodes=vm,hcgn2\n"
                             "BlockName=b2 Nodes=hcgn[3-4]\n"
                             "BlockSizes=2,4\n";
static const char tree[] = "SwitchName=s1 Nodes=vm,hcgn2\n"
                           "SwitchName=s2 Nodes=hcgn[3-4] LinkSpeed=1\n"
                           "SwitchName=s0 Switches=s[1-2]\n";

/* Node `nodeid` of 4 with 2 tasks each (block), topology text t. */
static struct hcgp_domain_input input(int nodeid, const char *pattern,
                                      const char *addr, const char *t,
                                      int *local) {
  struct hcgp_domain_input in;
  memset(&in, 0, sizeof in);
  in.pattern = pattern;
  in.addr = addr;
  in.nodelist = "vm,hcgn[2-4]";
  in.tasks_per_node = "2(x4)";
  in.placement = "block";
  in.nnodes = 4;
  in.nodeid = nodeid;
  in.world = 8;
  local[0] = 2 * nodeid;
  local[1] = 2 * nodeid + 1;
  in.local = local;
  in.nlocal = 2;
  in.topology = t;
  in.topology_len = t ? strlen(t) : 0;
  in.topology_path = "/etc/slurm/topology.conf";
  return in;
}

static void expect_why(struct hcgp_domain_input *in, const char *needle,
                       int this_node) {
  struct hcgp_domains d;
  hcgp_domains_build(&d, in);
  ck_assert_int_eq(d.state, HCGP_DOMAINS_UNKNOWN);
  ck_assert_msg(strstr(d.why, needle), "'%s' not in '%s'", needle, d.why);
  ck_assert_msg(!strncmp(d.why, "NVLink domains not checked: ", 28), "%s",
                d.why);
  ck_assert_int_eq(d.this_node, this_node);
  ck_assert_int_eq(hcgp_domains_domain_of(&d, 0), -1);
  hcgp_domains_free(&d);
}

/* The domain of each of the first strlen(want) ranks, one digit a rank. */
static void expect_domains(struct hcgp_domains *d, const char *want) {
  char got[16] = "";
  for (size_t r = 0; r < strlen(want) && r + 1 < sizeof got; r++)
    got[r] = (char)('0' + hcgp_domains_domain_of(d, (int)r));
  ck_assert_str_eq(got, want);
}

START_TEST(domains_learnt) {
  int local[2];
  struct hcgp_domains d;
  char name[64];
  struct hcgp_domain_input in =
      input(1, "block.node", "b1.hcgn2", blocks, local);
  hcgp_domains_build(&d, &in);
  ck_assert_msg(d.state == HCGP_DOMAINS_KNOWN, "%s", d.why);
  expect_domains(&d, "00001111");
  hcgp_domains_name(&d, hcgp_domains_domain_of(&d, 5), name, sizeof name);
  ck_assert_str_eq(name, "block b2");
  ck_assert_int_eq(hcgp_domains_node_of(&d, 5), 2);
  hcgp_domains_free(&d);

  in = input(3, "switch.switch.node", "s0.s2.hcgn4", tree, local);
  in.placement = "cyclic";
  local[0] = 3, local[1] = 7; /* cyclic: ranks 3 and 7 on the last node */
  hcgp_domains_build(&d, &in);
  ck_assert_msg(d.state == HCGP_DOMAINS_KNOWN, "%s", d.why);
  expect_domains(&d, "00110011");
  hcgp_domains_name(&d, 0, name, sizeof name);
  ck_assert_str_eq(name, "switch s1");
  hcgp_domains_free(&d);

  /* Keys in any case, continued lines, comments, a first block winning. */
  in = input(0, "block.node", "b1.vm",
             "blockname=b1 \\\n nodes=vm,hcgn2 # x\n"
             "BLOCKNAME=b2 NODES=hcgn[2-4]\n",
             local);
  hcgp_domains_build(&d, &in);
  ck_assert_msg(d.state == HCGP_DOMAINS_KNOWN, "%s", d.why);
  ck_assert_int_eq(hcgp_domains_domain_of(&d, 2), 0);
  hcgp_domains_free(&d);

  /* No topology: nothing learnt, nothing said. */
  in = input(0, "node", "vm", NULL, local);
  hcgp_domains_build(&d, &in);
  ck_assert_int_eq(d.state, HCGP_DOMAINS_NONE);
  ck_assert_str_eq(d.why, "");
  hcgp_domains_free(&d);
  in.pattern = in.addr = NULL;
  hcgp_domains_build(&d, &in);
  ck_assert_int_eq(d.state, HCGP_DOMAINS_NONE);
  hcgp_domains_free(&d);
}
END_TEST

START_TEST(domains_not_learnt) {
  int local[2];
  struct hcgp_domain_input in;
  in = input(1, "torus.node", "t.hcgn2", blocks, local);
  expect_why(&in, "SLURM_TOPOLOGY_ADDR_PATTERN=torus.node names no block", 0);
  in = input(1, "block.node", "b2.hcgn2", blocks, local);
  expect_why(&in,
             "puts this node (hcgn2) in block b1, but Slurm says b2 "
             "(SLURM_TOPOLOGY_ADDR=b2.hcgn2)",
             1);
  in = input(1, "block.node", "b1.other", blocks, local);
  expect_why(&in, "SLURM_TOPOLOGY_ADDR=b1.other does not put this node", 1);
  in = input(1, "block.node", "x.b1.hcgn2", blocks, local);
  expect_why(&in, "does not put this node (hcgn2) in one block", 1);
  in = input(1, "block.node", "b1.hcgn2", "BlockName=b1 Nodes=vm,hcgn2\n",
             local);
  expect_why(&in, "puts node hcgn3 of this step in no block", 0);
  in = input(1, "switch.node", "s1.hcgn2",
             "SwitchName=s1 Nodes=vm,hcgn[2-3]\nSwitchName=s2 "
             "Nodes=hcgn[3-4]\n",
             local);
  expect_why(&in, "puts node hcgn3 under two leaf switches (s1 and s2)", 0);
  in = input(1, "block.node", "b1.hcgn2", "Include /etc/slurm/more.conf\n",
             local);
  expect_why(&in, "uses Include, which hcg does not follow", 0);
  in = input(1, "block.node", "b1.hcgn2", "BlockName=b1 Nodes=n[\n", local);
  expect_why(&in, "are not a host list hcg reads", 0);
  in = input(1, "block.node", "b1.hcgn2", NULL, local);
  in.topology_error = "Permission denied";
  expect_why(&in, "cannot read /etc/slurm/topology.conf: Permission denied", 0);
  in.topology_path = NULL;
  in.topology_error = "slurmstepd's SLURM_CONF is not an absolute path";
  expect_why(&in, "topology.conf is not found: slurmstepd's SLURM_CONF is", 0);
  /* Where the tasks are. */
  in = input(1, "block.node", "b1.hcgn2", blocks, local);
  in.nodelist = "vm,hcgn[2-3]";
  expect_why(&in, "SLURM_STEP_NODELIST=vm,hcgn[2-3] does not name", 0);
  in = input(1, "block.node", "b1.hcgn2", blocks, local);
  in.tasks_per_node = "2(x3)";
  expect_why(&in, "SLURM_STEP_TASKS_PER_NODE=2(x3) does not give", 0);
  in.tasks_per_node = "3(x4)";
  expect_why(&in, "srun's placement does not fit the step's 8 tasks", 0);
  in = input(1, "block.node", "b1.hcgn2", blocks, local);
  in.placement = NULL;
  expect_why(&in, "srun did not say where the step's tasks run", 0);
  in.placement = "!Slurm dealt the step's tasks in a way hcg does not\n";
  expect_why(&in, "Slurm dealt the step's tasks in a way hcg does not?", 0);
  in.placement = "arbitrary";
  expect_why(&in, "(arbitrary) names no distribution hcg knows", 0);
  in.placement = "plane";
  expect_why(&in, "(plane) names no distribution", 0); /* no plane size */
  in.placement = "block:0-2";
  expect_why(&in, "does not name each of its 4 nodes once", 0);
  in.placement = "block:0-2,2";
  expect_why(&in, "does not name each of its 4 nodes once", 0);
  in.placement = "block:0-3,";
  expect_why(&in, "does not name each of its 4 nodes once", 0);
  in = input(1, "block.node", "b1.hcgn2", blocks, local);
  in.placement = "cyclic"; /* but the node holds 2 and 3 */
  expect_why(&in, "the tasks of this node are not where srun says", 1);
  in.placement = "block:2-3,0-1"; /* node 1 would hold 6 and 7 */
  expect_why(&in, "the tasks of this node are not where srun says", 1);
  in = input(1, "block.node", "b1.hcgn2", blocks, local);
  in.nnodes = 0;
  expect_why(&in, "no usable node count", 0);
}
END_TEST

struct stepd {
  struct hcgp_domains *d;
  int node;
};
static int mine(void *arg, int rank) {
  const struct stepd *s = arg;
  return hcgp_domains_node_of(s->d, rank) == s->node ? 0 : -1;
}

START_TEST(domains_in_topology_order) {
  static const char inter[] = "BlockName=b1 Nodes=vm,hcgn3\n"
                              "BlockName=b2 Nodes=hcgn2,hcgn4\n";
  const char *texts[] = {"tp=2,dp=4", "tp=2,dp=2,ep=2", "dp=4,ep=2"};
  const int crosses[] = {0, 1, 1};
  for (int k = 0; k < 4; k++) {
    int local[2];
    const char *addr[] = {"b1.vm", "b2.hcgn2", "b1.hcgn3", "b2.hcgn4"};
    struct hcgp_domain_input in = input(k, "block.node", addr[k], inter, local);
    in.placement = "block:0,2,1,3";
    int first[] = {0, 4, 2, 6};
    local[0] = first[k];
    local[1] = first[k] + 1;
    struct hcgp_domains d;
    hcgp_domains_build(&d, &in);
    ck_assert_msg(d.state == HCGP_DOMAINS_KNOWN, "%s", d.why);
    expect_domains(&d, "00001111");
    for (int t = 0; t < 3; t++) {
      hcg_layout *L = NULL;
      hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
      cfg.world_size = 8;
      hcg_error err = HCG_ERROR_INIT;
      ck_assert_int_eq(
          hcg_layout_parse(texts[t], strlen(texts[t]), &cfg, &L, &err), 0);
      struct stepd s = {&d, k};
      struct hcgp_node_check c;
      ck_assert_int_eq(hcgp_domain_check(L, "tp,ep", local, 2,
                                         hcgp_domains_domain_of, &d, mine, &s,
                                         0, 1, &c),
                       0);
      ck_assert_int_eq(c.step, crosses[t]);
      hcg_layout_free(L);
    }
    hcgp_domains_free(&d);
  }
}
END_TEST

/* ---- the domain level of the check
 * ---------------------------------------------- */

/* Every node's domain check of `text` on the 4-node cluster above: how
 * many speak, and the line of the one that does. */
static int domain_speakers(const char *text, int policy, char *line,
                           size_t cap) {
  int local[2];
  struct hcgp_domain_input in = input(0, "block.node", "b1.vm", blocks, local);
  struct hcgp_domains d;
  hcgp_domains_build(&d, &in);
  ck_assert_int_eq(d.state, HCGP_DOMAINS_KNOWN);
  hcg_layout *L = NULL;
  hcg_layout_config cfg = HCG_LAYOUT_CONFIG_INIT;
  cfg.world_size = 8;
  hcg_error err = HCG_ERROR_INIT;
  ck_assert_int_eq(hcg_layout_parse(text, strlen(text), &cfg, &L, &err), 0);
  int speak = 0;
  for (int k = 0; k < 4; k++) {
    int own[2] = {2 * k, 2 * k + 1};
    struct stepd s = {&d, k};
    struct hcgp_node_check c;
    struct hcgp_node_check quiet;
    ck_assert_int_eq(hcgp_domain_check(L, NULL, own, 2, hcgp_domains_domain_of,
                                       &d, mine, &s, 0, 0, &quiet),
                     0);
    ck_assert_int_eq(quiet.speak, 0);
    ck_assert_int_eq(hcgp_domain_check(L, NULL, own, 2, hcgp_domains_domain_of,
                                       &d, mine, &s, 1, 0, &c),
                     0);
    ck_assert_int_eq(quiet.crossing, c.crossing);
    if (!c.speak)
      continue;
    speak++;
    char here[64], there[64], sug[512];
    hcgp_domains_name(&d, hcgp_domains_domain_of(&d, c.example.apart[0]), here,
                      sizeof here);
    hcgp_domains_name(&d, hcgp_domains_domain_of(&d, c.example.apart[1]), there,
                      sizeof there);
    int rc = hcgp_domains_suggest(&d, L, NULL, NULL, c.example.group.size, sug,
                                  sizeof sug);
    hcgp_domain_line(L, &c, here, there, policy, rc > 0 ? sug : NULL, line,
                     cap);
  }
  hcg_layout_free(L);
  hcgp_domains_free(&d);
  return speak;
}

START_TEST(domain_check_speaks_once) {
  char line[1024] = "";
  ck_assert_int_eq(
      domain_speakers("ep=4,dp=2", HCGP_PLACEMENT_WARN, line, sizeof line), 0);
  ck_assert_int_eq(
      domain_speakers("dp=2,ep=4", HCGP_PLACEMENT_WARN, line, sizeof line), 1);
  ck_assert_str_eq(line,
                   "warning: placement: grid 'world', dim 'ep': group "
                   "[0,2,4,6] spans block b1 (rank 0) and block b2 (rank 4): "
                   "its traffic leaves the NVLink domain (placement=warn); to "
                   "keep every group inside, put ep before dp, as in "
                   "'ep=4,dp=2'");
  ck_assert_int_eq(
      domain_speakers("dp=2,ep=4", HCGP_PLACEMENT_REFUSE, line, sizeof line),
      1);
  ck_assert_str_eq(line,
                   "placement: grid 'world', dim 'ep': group [0,2,4,6] spans "
                   "block b1 (rank 0) and block b2 (rank 4): a group of an "
                   "intra-domain dim crosses NVLink domains and the placement "
                   "policy is refuse; no task will run; to keep every group "
                   "inside, put ep before dp, as in 'ep=4,dp=2'");
  /* Nodes 0 and 1 see disjoint crossing groups ([0,4],[1,5] and [2,6],
   * [3,7]); the step's first crossing group still makes one line. */
  ck_assert_int_eq(
      domain_speakers("dp=4,ep=2", HCGP_PLACEMENT_WARN, line, sizeof line), 1);
  ck_assert_str_eq(line,
                   "warning: placement: grid 'world', dim 'ep': group [0,4] "
                   "spans block b1 (rank 0) and block b2 (rank 4): its "
                   "traffic leaves the NVLink domain (placement=warn); to "
                   "keep every group inside, put ep before dp, as in "
                   "'ep=2,dp=4', or use --distribution=cyclic");
  /* Nothing to suggest: the line says where to look. */
  ck_assert_int_eq(
      domain_speakers("ep=8", HCGP_PLACEMENT_WARN, line, sizeof line), 1);
  ck_assert_ptr_nonnull(strstr(line, "(placement=warn); see hcg check "
                                     "--domain-size"));
}
END_TEST

START_TEST(args_intra_domain_dims) {
  struct hcgp_args a;
  hcgp_args_defaults(&a);
  ck_assert_str_eq(a.intra_domain_dims, "ep,expt_tp");
  char *ok[] = {"intra_domain_dims=tp,ep"};
  ck_assert_int_eq(hcgp_args_parse(&a, 1, ok, NULL, NULL), 0);
  ck_assert_str_eq(a.intra_domain_dims, "tp,ep");
  char *none[] = {"intra_domain_dims=none"};
  ck_assert_int_eq(hcgp_args_parse(&a, 1, none, NULL, NULL), 0);
  ck_assert_str_eq(a.intra_domain_dims, "");
  hcgp_args_defaults(&a);
  char *bad[] = {"intra_domain_dims=ep,,tp",
                 "intra_domain_dims=", "intra_domain_dims=EP"};
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(hcgp_args_parse(&a, 1, bad + i, NULL, NULL), 1);
    ck_assert_str_eq(a.intra_domain_dims, "ep,expt_tp");
  }
  char *twice[] = {"intra_domain_dims=ep", "intra_domain_dims=tp"};
  ck_assert_int_eq(hcgp_args_parse(&a, 2, twice, NULL, NULL), 1);
}
END_TEST

TCase *domains_tcase(void) {
  TCase *t = tcase_create("domains");
  tcase_add_test(t, hostlists);
  tcase_add_test(t, tasks_per_node);
  tcase_add_test(t, step_layouts);
  tcase_add_test(t, slurm_orders);
  tcase_add_test(t, domains_learnt);
  tcase_add_test(t, domains_in_topology_order);
  tcase_add_test(t, domains_not_learnt);
  tcase_add_test(t, domain_check_speaks_once);
  tcase_add_test(t, args_intra_domain_dims);
  return t;
}
