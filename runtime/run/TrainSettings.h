//===- TrainSettings.h - what a train loop reads off a train block -*- C++
//-*-===//
//
// Plain data: the JIT-driven loops read it off a model's `whale.train`
// dictionary (lib/compile/LrSchedule.h), the ahead-of-time runner off a
// compiled plan's manifest, and both step the same schedule.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_TRAINSETTINGS_H
#define WHALE_RUNTIME_RUN_TRAINSETTINGS_H

#include "support/Limits.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

namespace whale {

/// The learning-rate schedule: constant, or cosine decay to `minLr` after
/// `warmup` steps of linear warm-up.
struct LrSchedule {
  std::string kind; ///< "cosine", or anything else for a constant rate
  double warmup = 0, minLr = 0;

  /// The factor applied to base rate `lr` at `step` (0-based) of `steps`.
  double factor(double lr, int64_t step, int64_t steps) const {
    if (kind != "cosine")
      return 1.0;
    if (step < warmup)
      return (step + 1) / warmup;
    double floor = lr > 0 ? minLr / lr : 0;
    double span = std::max(1.0, steps - warmup);
    double progress = std::min(1.0, (step - warmup) / span);
    return floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * progress));
  }
};

/// What a train loop reads off a model's train block, with the run's
/// overrides applied: the same for one device, for a plan and for a
/// compiled plan.
struct TrainSettings {
  LrSchedule schedule;
  int64_t steps = 1;
  uint64_t seed = 0;
  double baseLr = 1e-3;
  /// Optimizer state tensors per parameter: SGD's velocity when it has
  /// momentum, Adam's two moments.
  int stateCount = 0;
  /// Checkpoint to the run's save path after every saveEvery-th step (0:
  /// only at the end).
  int64_t saveEvery = 0;
  /// The progress callback sees every logEvery-th step and the last.
  int64_t logEvery = 1;
  /// The held-out loss every evalEvery-th step and after the last (0:
  /// never), over the first evalSteps batches of eval_data.
  int64_t evalEvery = 0, evalSteps = 8;
  /// Whether the held-out loss is taken after `step` (1-based).
  bool evaluatesAfter(int64_t step) const {
    return evalEvery > 0 && (step % evalEvery == 0 || step == steps);
  }

  double lrFactor(int64_t step) const {
    return schedule.factor(baseLr, step, steps);
  }
  /// Whether the state after `step` (1-based) is saved before the end.
  bool savesAfter(int64_t step) const {
    return saveEvery > 0 && step % saveEvery == 0 && step < steps;
  }
  /// "" when `steps` of `batch` samples stay within kMaxSamples (the
  /// script's own steps were checked by Sema; --steps overrides them).
  std::string checkLength(int64_t batch) const {
    int64_t samples;
    if (steps >= 1 && productWithin(steps, batch, kMaxSamples, samples))
      return "";
    return std::to_string(steps) + " steps of a batch of " +
           std::to_string(batch) + " are more than 2^62 samples";
  }
};

} // namespace whale

#endif
