//===- TopKMath.h - the k largest entries of a row ----------------*- C++ -*-===//
//
// One order for every device: larger values first, the lower position
// first among equals, a NaN above every number (so it shows, as it would
// through max). The CPU selects each row's k entries by repeated scans; a
// GPU thread finds an element's rank in its row, so the gradient is a
// gather. Both follow from `before`.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_TOPKMATH_H
#define WHALE_RUNTIME_OPS_TOPKMATH_H

#include <cstdint>

#ifdef __CUDACC__
#define WHALE_TOPK_HD __host__ __device__ inline
#else
#define WHALE_TOPK_HD inline
#endif

namespace whale::rt {

/// Whether entry (a, i) comes before entry (b, j) in the top-k order.
WHALE_TOPK_HD bool before(float a, int64_t i, float b, int64_t j) {
  bool an = a != a, bn = b != b;
  if (an || bn)
    return an && (!bn || i < j);
  return a > b || (a == b && i < j);
}

/// The k first entries of `row` [n] in the top-k order: their values and
/// positions (either may be null), by k scans of the row.
WHALE_TOPK_HD void topkRow(const float *row, int64_t n, int64_t k,
                           float *values, int32_t *positions) {
  float lastValue = 0.0f;
  int64_t last = -1;
  for (int64_t j = 0; j < k; ++j) {
    int64_t best = -1;
    for (int64_t i = 0; i < n; ++i) {
      if (last >= 0 && !before(lastValue, last, row[i], i))
        continue; // taken already
      if (best < 0 || before(row[i], i, row[best], best))
        best = i;
    }
    last = best;
    lastValue = row[best];
    if (values)
      values[j] = row[best];
    if (positions)
      positions[j] = static_cast<int32_t>(best);
  }
}

/// The place of entry i of `row` [n] in the top-k order.
WHALE_TOPK_HD int64_t rankInRow(const float *row, int64_t n, int64_t i) {
  int64_t rank = 0;
  for (int64_t j = 0; j < n; ++j)
    rank += before(row[j], j, row[i], i);
  return rank;
}

} // namespace whale::rt

#endif
