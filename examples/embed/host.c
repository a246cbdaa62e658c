/* A host application that embeds Whale through its C API: it checks a model
 * written inline, shows how errors come back as values, and prints the
 * model's whale IR.
 *
 *   build/bin/whale-embed-example
 */
#include "whale/whale.h"

#include <stdio.h>
#include <string.h>

static const char *kGood = "import nn\n"
                           "model tiny(x: f32[B, 8]) {\n"
                           "  replicate {\n"
                           "    loss = mean(nn.mlp(x, 32))\n"
                           "  }\n"
                           "  return loss\n"
                           "}\n";

static const char *kBad = "model tiny(x: f32[B, 8]) {\n"
                          "  return mean(x @ param([4, 4]))\n"
                          "}\n";

int main(void) {
  whale_interp *w = whale_interp_create();
  if (!w)
    return 1;

  /* A script with a shape error: the diagnostics are values to show. */
  if (whale_interp_load_string(w, kBad, "bad.whl") != WHALE_ERROR_SCRIPT) {
    fprintf(stderr, "expected the bad script to fail\n");
    return 1;
  }
  printf("bad.whl: %zu diagnostic(s)\n%s", whale_interp_num_diagnostics(w),
         whale_interp_diagnostics(w));

  /* A good script, with the batch bound by the host. */
  whale_interp_set_dim(w, "B", 16);
  if (whale_interp_load_string(w, kGood, "good.whl") != WHALE_OK) {
    fputs(whale_interp_diagnostics(w), stderr);
    return 1;
  }
  char *ir = whale_interp_emit(w, "whale");
  if (!ir)
    return 1;
  printf("good.whl compiles to %zu bytes of whale IR:\n%s", strlen(ir), ir);
  whale_string_free(ir);
  whale_interp_destroy(w);
  return 0;
}
