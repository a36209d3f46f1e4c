/*
 * round.h - a collective round: the fences a call makes over the whole
 * job, in an order every process derives alike, and this rank's puts and
 * gets around each of them.
 *
 * PMIx fences pair by count: if one process takes a fence that another
 * skips, every later fence of the two is off by one and the job hangs.
 * So the schedule of a round depends on the job's size and fan-in alone
 * (hcgrt_round_init), never on the rank, its groups or what failed, and
 * hcgrt_round_run takes every fence of it. A rank that fails along the
 * way goes on fencing (its steps then publish that failure, or nothing);
 * only a fence that fails ends the round, as the fences no longer pair.
 */
#ifndef HCG_ROUND_H
#define HCG_ROUND_H

#include "rt.h"

/* The fences a round may take, each with its name in messages. */
enum hcgrt_fence {
  HCGRT_FENCE_IDS,       /* "the group exchange"                 */
  HCGRT_FENCE_SLICES,    /* "the agreement's slice verdicts"     */
  HCGRT_FENCE_GROUPS,    /* "the agreement's group verdicts"     */
  HCGRT_FENCE_RELAY,     /* "the relay of group ids"             */
  HCGRT_FENCE_DONE,      /* "the agreement on the communicators" */
  HCGRT_FENCE_BROADCAST, /* "a broadcast from rank R"            */
  HCGRT_FENCE_PUBLISH,   /* "a publication by every process"     */
  HCGRT_FENCES
};

#define HCGRT_ROUND_FENCES 4 /* the most fences of one round */

/* A round's schedule, declared once by the call that runs it: its fences
 * in order, each taken by every job or only by jobs larger than the
 * fan-in (relayed: only the job's size decides, so that every process
 * takes the same ones); leave_early: a failure before the first fence ends
 * the round without fencing (nothing would tell the peers; they time out
 * and name this rank). */
struct hcgrt_round_table {
  int leave_early;
  int n;
  struct {
    int fence; /* enum hcgrt_fence */
    int relayed_only;
  } fence[HCGRT_ROUND_FENCES];
};

/* The rounds of libhcg, each defined beside its steps: hcg_comm_create's
 * two (the call is in create.c) in agree.c, beside the agreement they
 * carry, so that a build without NCCL has them too. */
extern const struct hcgrt_round_table hcgrt_round_ids;       /* exchange.c */
extern const struct hcgrt_round_table hcgrt_round_ready;     /* agree.c */
extern const struct hcgrt_round_table hcgrt_round_done;      /* agree.c */
extern const struct hcgrt_round_table hcgrt_round_broadcast; /* broadcast.c */
extern const struct hcgrt_round_table hcgrt_round_publish;   /* publish.c */

/* What hcgrt_round_run reports: every fence taken and no failure; this
 * rank failed but took every fence (its peers learn it from what it
 * published); or a fence failed and the round stopped there. */
enum hcgrt_round_result {
  HCGRT_ROUND_OK,
  HCGRT_ROUND_OWN_FAILURE,
  HCGRT_ROUND_BROKEN,
};

struct hcgrt_round;

/* This rank's part before one fence of the schedule (its puts) or after
 * it (its gets, and the puts for the next one). A step reports a failure
 * with hcgrt_round_note and goes on; it must not fence. */
typedef void (*hcgrt_round_step)(struct hcgrt_round *r, void *arg);

/* A round's steps, declared once by its caller beside its table: before
 * and after each fence, by enum hcgrt_fence (NULL: nothing then). A fence
 * the schedule does not take never runs its steps. */
struct hcgrt_round_steps {
  hcgrt_round_step before[HCGRT_FENCES];
  hcgrt_round_step after[HCGRT_FENCES];
};

/* Takes one fence; hcgrt_exchange_fence but in tests. */
typedef int (*hcgrt_round_take)(hcg_ctx *ctx, int timeout_s, const char *what,
                                hcg_error *err);

struct hcgrt_round {
  hcg_ctx *ctx;
  const struct hcgrt_round_table *table;
  int n;                         /* fences in the schedule      */
  int fence[HCGRT_ROUND_FENCES]; /* enum hcgrt_fence, in order  */
  int leave_early;               /* the table's                 */
  const struct hcgrt_round_steps *steps;
  void *arg;
  hcgrt_round_take take;
  int timeout_s;     /* the context's: DONE waits 2x + 5 s        */
  int root;          /* a broadcast's root, for its fence's name */
  int status;        /* this rank's first failure, or HCG_OK      */
  hcg_error own;     /* its message                               */
  hcg_error scratch; /* messages of failures after the first      */
  int broken;        /* the fence that failed, or -1              */
  int fence_rc;      /* and its status                            */
  hcg_error fence_err;
};

/* The schedule of a round of `table` in a job of `world` processes with
 * fan-in `fanin` into r: the table's fences that such a job takes (its
 * steps and arg are the caller's). Pure. */
void hcgrt_round_plan(struct hcgrt_round *r,
                      const struct hcgrt_round_table *table, int world,
                      int fanin);
/* hcgrt_round_plan for the context's job, with its steps. */
void hcgrt_round_init(struct hcgrt_round *r, hcg_ctx *ctx,
                      const struct hcgrt_round_table *table,
                      const struct hcgrt_round_steps *steps, void *arg);
/* Makes r the next round of the same call (table, with its steps and the
 * same arg): the call's rounds share this rank's own failure. */
void hcgrt_round_next(struct hcgrt_round *r,
                      const struct hcgrt_round_table *table,
                      const struct hcgrt_round_steps *steps);
/* Runs the round: before/after steps around each fence in order. */
int hcgrt_round_run(struct hcgrt_round *r);
/* The call's outcome: this rank's own failure first (its message into
 * err), else the failed fence's, else HCG_OK. */
int hcgrt_round_end(const struct hcgrt_round *r, hcg_error *err);

/* Where a step writes the message of a failure: the round's own while it
 * has none, else a scratch one (the first failure is the one reported). */
hcg_error *hcgrt_round_err(struct hcgrt_round *r);
/* Records the status rc of a step's action; the first failure sticks.
 * Returns rc. */
int hcgrt_round_note(struct hcgrt_round *r, int rc);

/* For a step before its fence: the PMIx key `name` of the round's epoch
 * into pkey (what: the round in the message of a failure), and, when buf is
 * given, this rank's len bytes put under it (counted in the context's
 * stats). A failure is noted in the round. Returns HCG_OK when the key was
 * derived (a failed put is only noted). */
int hcgrt_round_put(struct hcgrt_round *r, long long epoch, const char *name,
                    const char *what, char *pkey, size_t cap, const void *buf,
                    size_t len);

/* The name and timeout of a fence of this round. */
const char *hcgrt_round_fence_name(const struct hcgrt_round *r, int fence,
                                   char *buf, size_t cap);
int hcgrt_round_fence_timeout(const struct hcgrt_round *r, int fence);

#endif /* HCG_ROUND_H */
