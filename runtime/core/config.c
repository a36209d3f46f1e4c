/*
 * config.c - reading a caller's growable config struct (hcg.h, "Config
 * structs"): the caller's size says how much of it there is, so that a
 * struct compiled against an older or newer hcg.h is read safely.
 */
#include <stddef.h>
#include <string.h>

#include "internal.h"

/* The header every config struct starts with (read only as fields). */
struct config_head {
  size_t size;
  unsigned version;
};

int hcg__config_read(const void *cfg, const void *defaults, size_t mine,
                     size_t min, void *out, const char *type, hcg_error *err) {
  memcpy(out, defaults, mine);
  if (!cfg)
    return HCG_OK;
  struct config_head head;
  memcpy(&head, cfg, sizeof head);
  if (head.size < min || head.size > HCG_CONFIG_MAX_SIZE)
    return hcg__fail(err, HCG_EINVAL,
                     "%s.size is %zu, not the size of a %s (%zu to %d "
                     "bytes): start the struct from its INIT macro",
                     type, head.size, type, min, HCG_CONFIG_MAX_SIZE);
  if (head.version == 0)
    return hcg__fail(err, HCG_EINVAL,
                     "%s.version is 0: start the struct from its INIT macro",
                     type);
  /* Fields past the caller's size keep their defaults; fields past ours
   * (a newer caller's) are not read. */
  memcpy(out, cfg, head.size < mine ? head.size : mine);
  /* Field by field: the first field of the struct may sit in what would be
   * config_head's tail padding. */
  unsigned version = HCG_CONFIG_VERSION;
  memcpy((char *)out + offsetof(struct config_head, size), &mine, sizeof mine);
  memcpy((char *)out + offsetof(struct config_head, version), &version,
         sizeof version);
  return HCG_OK;
}
