//===- StepCapture.h - a train step held by the device and replayed -*- C++
//-*-===//
//
// A GPU step of GPT-2 small is about 1,700 kernels, copies and fills, each
// launched by the host through the C ABI: the launches alone take longer
// than a small model's kernels. A device that can hold a step's work (CUDA
// graphs) records it once and replays it with one launch a step.
//
// What replays must be the same step: the same kernels on the same memory.
// Three things make that so.
//  - Memory. The captured step's blocks stay the capture's
//    (CachingAllocator::beginHold): its replays keep writing there.
//  - What changes from step to step. Only the train state does (the step,
//    for Adam's bias corrections and dropout's draws; the learning rate's
//    scale). An op that reads it says so (AdamParams::scheduled,
//    DropoutDraw::at), and the device recomputes its arguments from each
//    replay's state.
//  - Waiting for the device. A step that reads a result on the host in
//    the middle (a gradient norm the host compares, an all-reduce through
//    host memory) cannot be held: the host must see each step's value. A
//    probing step notes the first such wait, and the driver says why it
//    runs without a graph (runtime/run/StepGraphs.h).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CORE_STEPCAPTURE_H
#define WHALE_RUNTIME_CORE_STEPCAPTURE_H

#include "runtime/core/Status.h"

#include <cstdint>
#include <string>

namespace whale::rt {

/// What changes from one train step to the next for its kernels.
struct TrainState {
  int64_t step = 1;
  double lrScale = 1;
};

/// What a captured step holds: the work one launch now replays.
struct CapturedStep {
  int64_t operations = 0; ///< everything the step put on the device
  int64_t kernels = 0;
  int64_t copies = 0;
  int64_t fills = 0;
};

/// A device's capture of a step (Device::stepCapture). Calls come from the
/// thread that runs the step, in the order below.
class StepCapture {
public:
  virtual ~StepCapture() = default;

  /// While on, the device notes the first thing the step does that a
  /// capture could not hold (blocker), and still does it.
  virtual void probe(bool on) = 0;
  /// Why the probed (or the capturing) step cannot be held; "" when it can.
  virtual const std::string &blocker() const = 0;

  /// Starts holding the step's work instead of running it.
  virtual Status begin() = 0;
  virtual bool capturing() const = 0;
  /// Ends the capture; nothing of the step has run yet.
  virtual Status end(CapturedStep &held) = 0;
  /// Runs the held step at `state`, and reports a data error (an id or
  /// label out of range) that any of its ops found.
  virtual Status replay(const TrainState &state) = 0;
  /// Forgets the held step (or the capture under way) and hands its memory
  /// back.
  virtual void drop() = 0;
};

} // namespace whale::rt

#endif
