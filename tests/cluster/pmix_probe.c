/*
 * pmix_probe.c - a PMIx client that checks what the hcg plugin exported
 * against what PMIx (Slurm's mpi/pmix) says: HCG_RANK == its PMIx rank and
 * HCG_WORLD_SIZE == PMIX_JOB_SIZE. Prints "ok RANK SIZE" or "bad ...".
 */
#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  pmix_proc_t me, job;
  if (PMIx_Init(&me, NULL, 0) != PMIX_SUCCESS) {
    printf("bad PMIx_Init\n");
    return 1;
  }
  PMIX_PROC_CONSTRUCT(&job);
  PMIX_LOAD_PROCID(&job, me.nspace, PMIX_RANK_WILDCARD);
  pmix_value_t *val = NULL;
  unsigned size = 0;
  if (PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &val) == PMIX_SUCCESS && val) {
    size = val->data.uint32;
    PMIX_VALUE_RELEASE(val);
  }
  const char *rank = getenv("HCG_RANK"), *world = getenv("HCG_WORLD_SIZE");
  int ok = rank && world && strtoul(rank, NULL, 10) == me.rank &&
           strtoul(world, NULL, 10) == size;
  printf("%s %u %u HCG_RANK=%s HCG_WORLD_SIZE=%s\n", ok ? "ok" : "bad", me.rank,
         size, rank ? rank : "-", world ? world : "-");
  PMIx_Finalize(NULL, 0);
  return ok ? 0 : 1;
}
