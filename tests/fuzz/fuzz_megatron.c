/*
 * fuzz_megatron.c - libFuzzer target for the model of Megatron's arguments
 * (runtime/core/megatron.c): hcg_megatron_layout on any text.
 *
 * Input: "<world>\n<arguments>". A first line that is not a number in
 * [1, 2^31) means a world of 8. On success, checks that the layout covers
 * that world and that its canonical text parses back to itself; on failure,
 * that the error is well formed and nothing is handed out.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "hcg.h"

static void heard(void *arg, const char *message) {
  CHECK(message && message[0] && !strchr(message, '\n'));
  ++*(int *)arg;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf)
    return 0;
  memcpy(buf, data, size);
  buf[size] = '\0';
  int world = 8;
  char *args = fuzz_world_prefix(buf, size, &world);
  int warnings = 0;
  hcg_megatron_config cfg = HCG_MEGATRON_CONFIG_INIT;
  cfg.world_size = world;
  cfg.warn = heard;
  cfg.warn_arg = &warnings;
  hcg_layout *L;
  hcg_error err = HCG_ERROR_INIT;
  int rc = hcg_megatron_layout(args, &cfg, &L, &err);
  if (rc == HCG_OK) {
    CHECK(L && hcg_layout_world_size(L) == world);
    const char *text = hcg_layout_text(L);
    hcg_layout_config lc = HCG_LAYOUT_CONFIG_INIT;
    lc.world_size = world;
    hcg_layout *again;
    CHECK(hcg_layout_parse(text, strlen(text), &lc, &again, NULL) == HCG_OK);
    CHECK(strcmp(hcg_layout_text(again), text) == 0);
    hcg_layout_free(again);
    hcg_layout_free(L);
  } else {
    CHECK(L == NULL);
    CHECK(rc > 0 && rc < HCG_STATUS_COUNT && err.code == rc);
    CHECK(err.message[0] != '\0');
    CHECK(memchr(err.message, '\0', sizeof err.message) != NULL);
    CHECK(err.column >= 0 && (size_t)err.column <= strlen(args) + 1);
  }
  free(buf);
  return 0;
}
