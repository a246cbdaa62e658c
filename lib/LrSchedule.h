//===- LrSchedule.h - the learning-rate factor of a step ----------*- C++
//-*-===//

#ifndef WHALE_LIB_LRSCHEDULE_H
#define WHALE_LIB_LRSCHEDULE_H

#include "dialects/Whale/IR/TrainAttrs.h"

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

  double lrFactor(int64_t step) const {
    return scheduleFactor(schedule, baseLr, step, steps);
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
  return t;
}

} // namespace whale

#endif
