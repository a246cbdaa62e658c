//===- DropoutMath.h - which elements a dropout keeps ------------*- C++ -*-===//
//
// A counter-based draw: an element's fate is a hash of the job's seed, the
// step, the dropout's key (its place in the model) and the element's index
// in the global batch (its sample's row in the global batch times the
// elements a sample has, plus its offset within the sample). Nothing is
// stored between steps and no generator state advances, so any plan, any
// device and a resumed or resharded run drop the same elements, and the
// backward pass finds the forward's mask again.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_OPS_DROPOUTMATH_H
#define WHALE_RUNTIME_OPS_DROPOUTMATH_H

#include <cstdint>

#ifdef __CUDACC__
#define WHALE_DROPOUT_HD __host__ __device__ inline
#else
#define WHALE_DROPOUT_HD inline
#endif

namespace whale::rt {

/// SplitMix64's finalizer, every input bit reaching every output bit;
/// callable on a GPU (runtime/data/DataOrder.h's mix64 is host code, and
/// adds SplitMix64's increment first).
WHALE_DROPOUT_HD uint64_t drawMix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// A dropout's draws for one step: `keep(index)` of an element.
struct DropoutDraw {
  uint64_t base = 0;      ///< the seed, step and key, mixed
  uint32_t threshold = 0; ///< drop below: rate x 2^32
  /// What `base` was mixed from, less the step: a captured step
  /// (runtime/core/StepCapture.h) draws afresh at each replay's step.
  uint64_t seed = 0;
  int64_t key = 0;
  double rate = 0;

  WHALE_DROPOUT_HD static DropoutDraw make(uint64_t seed, int64_t step,
                                           int64_t key, double rate) {
    DropoutDraw d;
    d.base = drawMix(drawMix(drawMix(seed) ^ static_cast<uint64_t>(step)) ^
                   static_cast<uint64_t>(key));
    const double t = rate * 4294967296.0;
    d.threshold = t >= 4294967295.0 ? 0xffffffffu : static_cast<uint32_t>(t);
    d.seed = seed;
    d.key = key;
    d.rate = rate;
    return d;
  }
  /// The same dropout's draws at step `step`.
  WHALE_DROPOUT_HD DropoutDraw at(int64_t step) const {
    return make(seed, step, key, rate);
  }
  /// Whether the element at `index` of the global batch is kept.
  WHALE_DROPOUT_HD bool keep(int64_t index) const {
    return static_cast<uint32_t>(
               drawMix(base ^ drawMix(static_cast<uint64_t>(index))) >> 32) >=
           threshold;
  }
};

} // namespace whale::rt

#endif
