//===- DataOrder.cpp - which samples a step sees --------------------------===//

#include "runtime/data/DataOrder.h"

#include <numeric>

namespace whale::rt {

uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

const std::vector<int64_t> &DataOrder::permutation(int64_t epoch) {
  if (epoch == cachedEpoch)
    return cached;
  cached.resize(numSamples);
  std::iota(cached.begin(), cached.end(), 0);
  // Fisher-Yates driven by the (seed, epoch) stream; the modulo bias is
  // below 2^-40 for any dataset that fits in memory.
  uint64_t key = mix64(seed) ^ mix64(static_cast<uint64_t>(epoch) + 1);
  for (int64_t i = numSamples - 1; i > 0; --i) {
    uint64_t j = streamValue(key, static_cast<uint64_t>(i)) %
                 static_cast<uint64_t>(i + 1);
    std::swap(cached[i], cached[j]);
  }
  cachedEpoch = epoch;
  return cached;
}

int64_t DataOrder::sampleAt(int64_t position) {
  return permutation(position / numSamples)[position % numSamples];
}

std::vector<int64_t> DataOrder::slice(int64_t step, int64_t globalBatch,
                                      int64_t offset, int64_t count) {
  std::vector<int64_t> out(count);
  int64_t base = step * globalBatch + offset;
  for (int64_t i = 0; i < count; ++i)
    out[i] = sampleAt(base + i);
  return out;
}

} // namespace whale::rt
