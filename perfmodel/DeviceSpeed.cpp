//===- DeviceSpeed.cpp - how fast a cluster's device is, decided once -----===//

#include "perfmodel/DeviceSpeed.h"

#include <algorithm>

namespace whale::perf {

double rateOf(const DeviceDescription &d) {
  if (d.flops > 0)
    return d.flops;
  return d.gpu ? kNominalGpuFlops : std::max(1, d.threads) * kNominalCoreFlops;
}

DeviceModel deviceModelOf(const DeviceDescription &d) {
  const DeviceModel *sheet = d.model.empty() ? nullptr : findGpuModel(d.model);
  if (sheet) {
    DeviceModel m = *sheet;
    if (d.memory > 0)
      m.memoryBytes = d.memory;
    return m;
  }
  const double rate = rateOf(d);
  if (!d.gpu)
    return cpuModel(rate, d.threads, d.memory);
  // A GPU known only by its rate: priced as a GPU of that rate.
  DeviceModel m = *findGpuModel("H100-SXM");
  m.name = "cuda";
  const double scale = rate / m.matmulFlops;
  m.matmulFlops *= scale;
  m.matmulFlopsBf16 *= scale;
  m.vectorFlops *= scale;
  m.memoryBytes = d.memory;
  return m;
}

} // namespace whale::perf
