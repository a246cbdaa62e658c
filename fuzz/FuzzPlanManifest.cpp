//===- FuzzPlanManifest.cpp - libFuzzer target: compiled-plan manifests ---===//
//
// A compiled plan's manifest travels between machines and may be edited by
// hand; any bytes must give a manifest whose every invariant the runner
// relies on holds, or an error, never a crash.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/PlanManifest.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  whale::PlanManifest m;
  std::string error;
  std::string text(reinterpret_cast<const char *>(data), size);
  if (!whale::parseManifest(text, "fuzz", m, error))
    return 0;
  // What the runner then indexes: every rank's program, row range and
  // input shapes.
  volatile int64_t sum = 0;
  for (int64_t s = 0; s < m.stages; ++s)
    for (int64_t r = 0; r < m.replicas; ++r) {
      const whale::StageProgram &p = m.program(s, r);
      sum = sum + m.firstRow(r) + m.devices[m.grid[s * m.replicas + r]].threads;
      for (size_t k = 0; k < p.inputs.size(); ++k)
        sum = sum + p.inputs[k].shape[0] + m.data.inputs[k].shape[0];
    }
  return 0;
}
