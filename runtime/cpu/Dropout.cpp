//===- Dropout.cpp - dropout on the CPU -----------------------------------===//

#include "runtime/cpu/CpuDevice.h"

namespace whale::rt {

Status CpuDevice::dropout(View<const float> x, const DropoutDraw &draw,
                          int64_t firstRow, float scale, View<float> y) {
  const int64_t n = x.numel();
  const int64_t perRow = x.shape.empty() || x.shape[0] == 0
                             ? 0
                             : n / x.shape[0];
  const int64_t base = firstRow * perRow;
  pool().parallelFor(n, 4096, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      y.data[i] = draw.keep(base + i) ? x.data[i] * scale : 0.0f;
  });
  return Status::ok();
}

} // namespace whale::rt
