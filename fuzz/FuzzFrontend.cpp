//===- FuzzFrontend.cpp - libFuzzer target: lexer, parser, sema -----------===//
//
// Any byte string must come back as diagnostics or a program, never a crash,
// a hang or unbounded memory. Imports resolve only against the stdlib so the
// run does not depend on the files around it.
//
//===----------------------------------------------------------------------===//

#include "lang/Frontend.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Scripts are small; very long inputs only slow the search.
  if (size > 64 * 1024)
    return 0;
  whale::lang::FrontendOptions options;
  options.searchPath = {WHALE_FUZZ_STDLIB_DIR};
  options.maxSteps = 20000;
  whale::lang::Frontend frontend(options);
  std::string source(reinterpret_cast<const char *>(data), size);
  if (frontend.parseString(source, "/nonexistent/fuzz.whl")) {
    (void)whale::lang::dumpAST(*frontend.mainAST());
    (void)frontend.analyze();
  }
  (void)frontend.renderDiagnostics();
  return 0;
}
