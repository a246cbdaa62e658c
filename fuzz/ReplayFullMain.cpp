//===- ReplayFullMain.cpp - corpus through the whole library --------------===//
//
// The fuzz target stops at the front end; this driver takes every corpus
// input on through MLIRGen and the dialect's verifiers (with the batch bound,
// so models become IR). Anything the front end accepts must verify: an
// "internal error" diagnostic fails the run, as a crash does.
//
//===----------------------------------------------------------------------===//

#include "fuzz/CollectInputs.h"
#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    whale::fuzz::collectInputs(argv[i], files);
  if (files.empty()) {
    std::fprintf(stderr, "whale-replay-full: no inputs found\n");
    return 1;
  }
  whale::InterpreterOptions opts;
  opts.useEnvironmentPath = false;
  opts.dims["B"] = 4;
  size_t compiled = 0, failures = 0;
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    whale::Interpreter interp(opts);
    // A name outside any folder, so imports resolve only to the stdlib.
    if (interp.loadString(ss.str(), "/nonexistent/input.whl") &&
        interp.module())
      ++compiled;
    for (const whale::Diagnostic &d : interp.diagnostics())
      if (d.message.find("internal error") != std::string::npos) {
        std::fprintf(stderr, "%s: %s\n", f.c_str(), d.message.c_str());
        ++failures;
      }
  }
  std::printf("%zu inputs, %zu compiled to verified IR, %zu internal errors\n",
              files.size(), compiled, failures);
  return failures ? 1 : 0;
}
