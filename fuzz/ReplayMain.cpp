//===- ReplayMain.cpp - runs the fuzz target over saved inputs ------------===//
//
// `whale-fuzz-replay PATH...` feeds every file (folders are walked) to the
// fuzz target once and prints how many ran. A crash fails the test.
//
//===----------------------------------------------------------------------===//

#include "fuzz/CollectInputs.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    whale::fuzz::collectInputs(argv[i], files);
  if (files.empty()) {
    std::fprintf(stderr, "whale-fuzz-replay: no inputs found\n");
    return 1;
  }
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string data = ss.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(data.data()),
                           data.size());
  }
  std::printf("replayed %zu inputs without a crash\n", files.size());
  return 0;
}
