//===- DataOrder.h - which samples a step sees -------------------*- C++
//-*-===//
//
// The order of samples is a function of (seed, epoch) only: a permutation of
// the sample indices per epoch. The samples of step s are global positions
// [s * globalBatch, (s + 1) * globalBatch); a rank takes a contiguous slice
// of that batch. So every plan, device count, resumed or resharded run sees
// the same samples in the same order.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_DATA_DATAORDER_H
#define WHALE_RUNTIME_DATA_DATAORDER_H

#include <cstdint>
#include <vector>

namespace whale::rt {

/// A counter-based generator (SplitMix64): the n-th number of a stream
/// depends only on (key, n), so any rank can draw any sample's numbers.
uint64_t mix64(uint64_t x);
inline uint64_t streamValue(uint64_t key, uint64_t n) {
  return mix64(key ^ mix64(n + 0x9E3779B97F4A7C15ull));
}

class DataOrder {
public:
  DataOrder(uint64_t seed, int64_t numSamples)
      : seed(seed), numSamples(numSamples) {}

  int64_t size() const { return numSamples; }
  /// The sample index at a global position (positions run across epochs).
  int64_t sampleAt(int64_t position);
  /// The sample indices of one rank's slice of step `step`: positions
  /// [step * globalBatch + offset, ... + count).
  std::vector<int64_t> slice(int64_t step, int64_t globalBatch, int64_t offset,
                             int64_t count);

private:
  const std::vector<int64_t> &permutation(int64_t epoch);

  uint64_t seed;
  int64_t numSamples;
  int64_t cachedEpoch = -1;
  std::vector<int64_t> cached;
};

} // namespace whale::rt

#endif
