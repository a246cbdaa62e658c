//===- LrSchedule.h - the learning-rate factor of a step ----------*- C++
//-*-===//

#ifndef WHALE_LIB_COMPILE_LRSCHEDULE_H
#define WHALE_LIB_COMPILE_LRSCHEDULE_H

#include "dialects/Whale/IR/TrainAttrs.h"
#include "runtime/run/TrainSettings.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace whale {

/// What the train loops read off `model`'s train block, with a run's
/// overrides of its steps and seed.
inline TrainSettings trainSettings(mlir::Operation *model,
                                   std::optional<int64_t> steps,
                                   std::optional<uint64_t> seed) {
  const TrainBlock b = TrainBlock::of(model);
  TrainSettings t;
  t.schedule.kind = b.scheduleKind;
  t.schedule.warmup = b.warmup;
  t.schedule.minLr = b.minLr;
  t.steps = steps ? *steps : b.steps;
  t.seed = seed ? *seed : b.seed;
  t.baseLr = b.optimizer.lr;
  t.stateCount = b.optimizer.stateCount();
  t.saveEvery = b.saveEvery;
  t.evalEvery = b.evalEvery;
  t.evalSteps = b.evalSteps;
  t.logEvery = b.logEvery;
  return t;
}

} // namespace whale

#endif
