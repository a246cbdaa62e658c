//===- Limits.h - the largest sizes Whale accepts anywhere -------*- C++
//-*-===//
//
// One set of bounds for everything a user can ask for, so that every size
// product the front end, the planner, the cost model and the runtime form
// fits in int64 with room to spare: a tensor of at most 2^40 elements has at
// most 2^43 bytes, a matmul over two of them at most 2^61 FLOPs. Whatever
// asks for more gets an error that says which bound it broke, never
// overflowed arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_LIMITS_H
#define WHALE_RUNTIME_LIMITS_H

#include <cstdint>

namespace whale {

/// Elements of one tensor (a parameter, an activation, an input).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// Micro-batches of one pipeline, and TaskGraphs of one model (each is a
/// stage or a shard group the planner and compiler build).
inline constexpr int64_t kMaxMicroBatches = int64_t(1) << 20;
inline constexpr int64_t kMaxTaskGraphs = 1024;
/// Threads of one device, and of all the devices one process runs.
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxProcessThreads = 4096;
/// Training steps of one run, and steps times the global batch (the last
/// sample's index).
inline constexpr int64_t kMaxSteps = int64_t(1) << 40;
inline constexpr int64_t kMaxSamples = int64_t(1) << 62;

/// `a * b` into `out` when it is at most `limit`; false (out unchanged)
/// when it is larger or overflows. Negative factors are refused.
inline bool productWithin(int64_t a, int64_t b, int64_t limit, int64_t &out) {
  if (a < 0 || b < 0)
    return false;
  int64_t p;
  if (__builtin_mul_overflow(a, b, &p) || p > limit)
    return false;
  out = p;
  return true;
}

} // namespace whale

#endif
