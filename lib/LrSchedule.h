//===- LrSchedule.h - the learning-rate factor of a step ----------*- C++
//-*-===//

#ifndef WHALE_LIB_LRSCHEDULE_H
#define WHALE_LIB_LRSCHEDULE_H

#include "dialects/Whale/IR/TrainAttrs.h"
#include "runtime/Limits.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace whale {

/// The factor the learning-rate schedule applies at `step` (0-based).
inline double scheduleFactor(mlir::DictionaryAttr schedule, double lr, int64_t step,
                      int64_t steps) {
  if (text(schedule, "kind") != "cosine")
    return 1.0;
  double warmup = number(schedule, "warmup", 0);
  if (step < warmup)
    return (step + 1) / warmup;
  double floor = lr > 0 ? number(schedule, "min_lr", 0) / lr : 0;
  double span = std::max(1.0, steps - warmup);
  double progress = std::min(1.0, (step - warmup) / span);
  return floor + (1 - floor) * 0.5 * (1 + std::cos(M_PI * progress));
}


/// What a train loop reads off a model's train block, with the run's
/// overrides applied: the same for one device and for a plan.
struct TrainSettings {
  mlir::DictionaryAttr optimizer, schedule;
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
    return scheduleFactor(schedule, baseLr, step, steps);
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

inline TrainSettings trainSettings(mlir::DictionaryAttr trainBlock,
                                   std::optional<int64_t> steps,
                                   std::optional<uint64_t> seed) {
  TrainSettings t;
  t.optimizer = trainBlock.getAs<mlir::DictionaryAttr>("optimizer");
  t.schedule = trainBlock.getAs<mlir::DictionaryAttr>("lr_schedule");
  t.steps = steps ? *steps
                  : static_cast<int64_t>(number(trainBlock, "steps", 1));
  t.seed = seed ? *seed : static_cast<uint64_t>(number(trainBlock, "seed", 0));
  t.baseLr = number(t.optimizer, "lr", 1e-3);
  t.stateCount = optimizerStateCount(t.optimizer);
  t.saveEvery = static_cast<int64_t>(number(trainBlock, "save_every", 0));
  t.evalEvery = static_cast<int64_t>(number(trainBlock, "eval_every", 0));
  t.evalSteps = static_cast<int64_t>(number(trainBlock, "eval_steps", 8));
  t.logEvery = std::max<int64_t>(
      1, static_cast<int64_t>(number(trainBlock, "log_every", 1)));
  return t;
}

} // namespace whale

#endif
