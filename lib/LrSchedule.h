//===- LrSchedule.h - the learning-rate factor of a step ----------*- C++
//-*-===//

#ifndef WHALE_LIB_LRSCHEDULE_H
#define WHALE_LIB_LRSCHEDULE_H

#include "lib/Attrs.h"

#include <algorithm>
#include <cmath>

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


} // namespace whale

#endif
