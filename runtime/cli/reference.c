/*
 * reference.c - `hcg help grammar`, `hcg help fields`, `hcg help plugstack`:
 * the facts the documentation repeats, printed from the one place each
 * lives in the code (core/reference.h, core/plugstack.h), so that
 * tests/cli/facts.bats can hold every copy in the docs to them.
 */
#include <string.h>

#include "cli.h"
#include "core/plugstack.h"
#include "core/reference.h"

static void print_grammar(FILE *out) { fputs(hcg__layout_grammar, out); }

/* One line per field: name, view, and its dims (or what it is instead). */
static void print_fields(FILE *out) {
  fprintf(out, "%-26s %-7s %s\n", "FIELD", "VIEW", "DIMS");
  for (int f = 0; f < HCG_FIELD_COUNT; f++) {
    const char *view = hcg__field_view(f);
    const char *const *dims = hcg__field_dims(f);
    fprintf(out, "%-26s %-7s ", hcg_field_name(f), *view ? view : "base");
    int alias = hcg_field_alias(f);
    if (alias >= 0) {
      fprintf(out, "the same group as %s\n", hcg_field_name(alias));
      continue;
    }
    if (!dims[0]) {
      fputs("all base dims\n", out);
      continue;
    }
    for (int i = 0; dims[i]; i++)
      fprintf(out, "%s%s", i ? "," : "", dims[i]);
    fputc('\n', out);
  }
}

#define PRINT_ARG(id, key, value, dflt, meaning)                               \
  fprintf(out, "%s=%s (default %s)\n  %s\n", key, value, dflt, meaning);

static void print_plugstack(FILE *out) { HCGP_ARGS(PRINT_ARG) }

static const struct {
  const char *name, *title;
  void (*print)(FILE *out);
} topics[] = {
    {"grammar", "the layout language's grammar (hcg-layout(5))", print_grammar},
    {"fields", "the process-group collection of each grid", print_fields},
    {"plugstack", "the SPANK plugin's plugstack.conf arguments",
     print_plugstack},
};

int hcg_cli_reference(FILE *out, const char *topic) {
  for (size_t i = 0; i < sizeof topics / sizeof *topics; i++) {
    if (!strcmp(topic, topics[i].name)) {
      topics[i].print(out);
      return 0;
    }
  }
  return -1;
}

void hcg_cli_reference_list(FILE *out) {
  for (size_t i = 0; i < sizeof topics / sizeof *topics; i++)
    fprintf(out, "  %-10s %s\n", topics[i].name, topics[i].title);
}
