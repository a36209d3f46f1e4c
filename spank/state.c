/*
 * state.c - the plugin's state in this process (see state.h for why a
 * global is enough).
 */
#include <stdlib.h>
#include <string.h>

#include "state.h"

struct hcgp_state hcgp_state;

void hcgp_state_free(void) {
  free(hcgp_state.value);
  free(hcgp_state.conflict_value);
  free(hcgp_state.text);
  memset(&hcgp_state, 0, sizeof hcgp_state);
}
