//===- FuzzSafetensors.cpp - libFuzzer target: checkpoint files -----------===//
//
// A checkpoint may come from anywhere; any bytes must give a Checkpoint or a
// Status, never a crash or an unbounded allocation.
//
//===----------------------------------------------------------------------===//

#include "runtime/store/Safetensors.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  whale::rt::Checkpoint ckpt;
  (void)whale::rt::parseSafetensors(data, size, "fuzz", ckpt);
  return 0;
}
