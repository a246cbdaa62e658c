//===- TopK.cpp - the k largest entries of each row on the CPU ------------===//

#include "runtime/cpu/CpuDevice.h"

#include <vector>

namespace whale::rt {

Status CpuDevice::topk(View<const float> x, int64_t k, float *values,
                       int32_t *positions) {
  const int64_t n = x.shape.back(), rows = n > 0 ? x.numel() / n : 0;
  pool().parallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      topkRow(x.data + r * n, n, k, values ? values + r * k : nullptr,
              positions ? positions + r * k : nullptr);
  });
  return Status::ok();
}

Status CpuDevice::topkBackward(View<const float> x, int64_t k,
                               View<const float> dy, View<float> dx) {
  const int64_t n = x.shape.back(), rows = n > 0 ? x.numel() / n : 0;
  pool().parallelFor(rows, 1, [&](int64_t r0, int64_t r1) {
    std::vector<int32_t> taken(static_cast<size_t>(k));
    for (int64_t r = r0; r < r1; ++r) {
      topkRow(x.data + r * n, n, k, nullptr, taken.data());
      float *out = dx.data + r * n;
      for (int64_t i = 0; i < n; ++i)
        out[i] = 0.0f;
      for (int64_t j = 0; j < k; ++j)
        out[taken[j]] = dy.data[r * k + j];
    }
  });
  return Status::ok();
}

} // namespace whale::rt
