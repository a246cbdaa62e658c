//===- StepProgress.h - a train step's progress line on stderr ----*- C++
//-*-===//
//
// The line `whale run` and `whale-exec` print per step. On a terminal it
// updates in place; in a log, one line per tenth of the run (and every
// held-out loss).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TOOLS_STEPPROGRESS_H
#define WHALE_TOOLS_STEPPROGRESS_H

#include "whale/Train.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>

namespace whale::cli {

inline void printStepProgress(const StepReport &r, bool tty) {
  int64_t every = std::max<int64_t>(1, r.steps / 10);
  if (!tty && r.step % every != 0 && r.step != r.steps &&
      std::isnan(r.evalLoss))
    return;
  char line[192], val[48] = "";
  if (!std::isnan(r.evalLoss))
    std::snprintf(val, sizeof val, "  val %.4f", r.evalLoss);
  std::snprintf(line, sizeof line,
                "step %lld/%lld  loss %.4f%s  %.0f samples/s  %.1fs",
                static_cast<long long>(r.step), static_cast<long long>(r.steps),
                r.loss, val, r.samplesPerSecond, r.elapsedSeconds);
  std::cerr << (tty ? "\r" : "") << line << (tty ? "" : "\n") << std::flush;
}

} // namespace whale::cli

#endif
