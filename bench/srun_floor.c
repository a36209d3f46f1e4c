/*
 * srun_floor.c - the floor bench_srun.sh measures the hcg plugin against:
 * a SPANK plugin that gives each task `vars=N` variables through
 * spank_setenv in task_init and does nothing else (no option, nothing in
 * srun), so that what Slurm charges for setting a task's variables is seen
 * apart from what the hcg plugin adds to it. Built by bench_srun.sh.
 *
 *   required /path/srun_floor.so vars=26
 */
#include <slurm/spank.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

SPANK_PLUGIN(hcg_bench_floor, 1);

int slurm_spank_task_init(spank_t sp, int ac, char **av) {
  if (spank_context() != S_CTX_REMOTE)
    return 0;
  long vars = 0;
  for (int i = 0; i < ac; i++)
    if (!strncmp(av[i], "vars=", 5))
      vars = strtol(av[i] + 5, NULL, 10);
  uint32_t rank = 0;
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &rank) != ESPANK_SUCCESS)
    return -1;
  for (long i = 0; i < vars && i < 1000; i++) {
    char name[48], value[24];
    snprintf(name, sizeof name, "HCG_BENCH_FLOOR_%ld", i);
    snprintf(value, sizeof value, "%lu",
             (unsigned long)rank + (unsigned long)i);
    if (spank_setenv(sp, name, value, 1) != ESPANK_SUCCESS)
      return -1;
  }
  return 0;
}
