//===- Limits.h - the largest sizes Whale accepts anywhere -------*- C++
//-*-===//
//
// One set of bounds for everything a user can ask for, so that every size
// product the front end, the planner, the cost model and the runtime form
// fits in int64 with room to spare: a tensor of at most 2^44 elements has at
// most 2^47 bytes; FLOP counts, which grow faster, saturate at INT64_MAX
// (saturatingMul). Whatever asks for more gets an error that says which
// bound it broke, never overflowed arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_LIMITS_H
#define WHALE_SUPPORT_LIMITS_H

#include <cstdint>

namespace whale {

/// Elements of one tensor a rank allocates (a parameter, an activation, an
/// input).
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 40;
/// Elements of one tensor of a model's shapes as the planner sees them: at
/// the global batch, a tensor is the sum of what every replica holds (a
/// 1T-parameter GPT's attention scores at a batch of 3,072 are 2^41
/// elements) and is never allocated; each rank's share is then held to
/// kMaxTensorElements.
inline constexpr int64_t kMaxShapeElements = int64_t(1) << 44;
/// Micro-batches of one pipeline, and TaskGraphs of one model (each is a
/// stage or a shard group the planner and compiler build).
inline constexpr int64_t kMaxMicroBatches = int64_t(1) << 20;
inline constexpr int64_t kMaxTaskGraphs = 1024;
/// Threads of one device, and of all the devices one process runs.
inline constexpr int64_t kMaxThreads = 1024;
inline constexpr int64_t kMaxProcessThreads = 4096;
/// SMs of a share of one GPU (cuda:N@sms=K): past any GPU's count (an
/// H100 has 132), which the data sheet or the driver checks exactly.
inline constexpr int64_t kMaxGpuSms = 1024;
/// Classes of synthetic data: a model's logits, wider than any vocabulary
/// (GPT-2's 50,257, Llama 3's 128,256), far below what would stall making
/// the task's teacher.
inline constexpr int64_t kMaxClasses = int64_t(1) << 24;
/// Devices in one cluster, all entries together: twenty times the largest
/// published run Whale models (Megatron-LM's 1T, 3,072 GPUs).
inline constexpr int64_t kMaxClusterDevices = 65536;
/// Training steps of one run, and steps times the global batch (the last
/// sample's index).
inline constexpr int64_t kMaxSteps = int64_t(1) << 40;
inline constexpr int64_t kMaxSamples = int64_t(1) << 62;
/// `--trace-every N`: a trace with fewer than one traced step in a thousand
/// holds nothing a profile could use.
inline constexpr int64_t kMaxTraceEvery = 1000;

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

/// `a * b`, or INT64_MAX when that overflows (both non-negative): for
/// counts that only rank and add, such as FLOPs.
inline int64_t saturatingMul(int64_t a, int64_t b) {
  int64_t p;
  return __builtin_mul_overflow(a, b, &p) ? INT64_MAX : p;
}
/// `a + b`, or INT64_MAX when that overflows (both non-negative).
inline int64_t saturatingAdd(int64_t a, int64_t b) {
  int64_t s;
  return __builtin_add_overflow(a, b, &s) ? INT64_MAX : s;
}

} // namespace whale

#endif
