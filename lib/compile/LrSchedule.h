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

inline TrainSettings trainSettings(mlir::DictionaryAttr trainBlock,
                                   std::optional<int64_t> steps,
                                   std::optional<uint64_t> seed) {
  TrainSettings t;
  auto optimizer = trainBlock.getAs<mlir::DictionaryAttr>("optimizer");
  auto schedule = trainBlock.getAs<mlir::DictionaryAttr>("lr_schedule");
  t.schedule.kind = text(schedule, "kind");
  t.schedule.warmup = number(schedule, "warmup", 0);
  t.schedule.minLr = number(schedule, "min_lr", 0);
  t.steps = steps ? *steps
                  : static_cast<int64_t>(number(trainBlock, "steps", 1));
  t.seed = seed ? *seed : static_cast<uint64_t>(number(trainBlock, "seed", 0));
  t.baseLr = number(optimizer, "lr", 1e-3);
  t.stateCount = optimizerStateCount(optimizer);
  t.saveEvery = static_cast<int64_t>(number(trainBlock, "save_every", 0));
  t.evalEvery = static_cast<int64_t>(number(trainBlock, "eval_every", 0));
  t.evalSteps = static_cast<int64_t>(number(trainBlock, "eval_steps", 8));
  t.logEvery = std::max<int64_t>(
      1, static_cast<int64_t>(number(trainBlock, "log_every", 1)));
  return t;
}

} // namespace whale

#endif
