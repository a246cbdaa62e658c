//===- TrainParallel.cpp - a train block under a plan ---------------------===//
//
// train() with a cluster: the plan's ranks (lib/train/PlannedRun.h) stepped
// by the one train loop (runtime/run/TrainLoop.h).
//
//===----------------------------------------------------------------------===//

#include "lib/train/PlannedRun.h"
#include "whale/Train.h"

namespace whale {

TrainResult trainParallel(Interpreter &interp, const TrainOptions &options) {
  TrainResult result;
  auto fail = [&](std::string msg) {
    result.ok = false;
    result.error = std::move(msg);
    return std::move(result);
  };
  // Its destructor runs after the result is copied out: the trace of a
  // failed run is written all the same.
  PlannedRun run(interp, options, result);
  if (std::string err = run.start(); !err.empty())
    return fail(err);
  if (!TrainLoop::intoResult(run.runSteps(), result))
    return std::move(result);
  if (std::string err = run.finish(); !err.empty())
    return fail(err);
  result.ok = true;
  return std::move(result);
}

} // namespace whale
