//===- LoopSetup.h - a train loop's setup from a run's options -*- C++ -*-===//
//
// What runtime/run/TrainLoop.h reads (the schedule, the save path, the
// metrics and sample logs, the progress callback), taken from the options
// `whale run` and a host give train(): the same for one device and a plan.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_TRAIN_LOOPSETUP_H
#define WHALE_LIB_TRAIN_LOOPSETUP_H

#include "runtime/run/TrainLoop.h"
#include "whale/Train.h"

namespace whale {

TrainLoop::Setup loopSetup(const TrainOptions &options,
                           const TrainSettings &settings, int64_t globalBatch);

} // namespace whale

#endif
