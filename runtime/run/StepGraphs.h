//===- StepGraphs.h - a plan's train steps held and replayed -----*- C++
//-*-===//
//
// Every driver of a plan runs its ranks' steps through here
// (runtime/run/RankStep.h), and where the devices can hold a step
// (runtime/core/StepCapture.h: CUDA graphs) the ranks go through four
// phases together:
//  1. the first step runs as it is: it makes the parameters and the
//     optimizer's state, compiles kernels and fills the allocator's cache;
//  2. the second is probed: it runs as usual while each device notes the
//     first thing the step does that a capture could not hold;
//  3. where no rank found one, the third is captured and then replayed;
//  4. every later step is one replay a rank.
// A rank whose capture fails runs that step again as it is, and the ranks
// go on without graphs; `graphReport` says why. WHALE_CUDA_GRAPHS=0 keeps
// them off (A/B runs).
//
// A held step is the same work on the same memory, so anything but a step
// that changes a rank's state (a checkpoint loaded into it) drops the held
// steps, and the next step captures afresh (forgetGraphs).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_STEPGRAPHS_H
#define WHALE_RUNTIME_RUN_STEPGRAPHS_H

#include "runtime/WhaleRuntime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

/// A rank program: `int32_t entry(ctx, inputs, &loss)`.
using RankEntry = int32_t (*)(whale_rt_context *, whale_rt_tensor *const *,
                              whale_rt_tensor **);

/// One rank's held step, and where it is in the phases above.
struct RankGraph {
  enum class Phase { Warmup, Probe, Capture, Replay, Off };
  Phase phase = Phase::Warmup;
  bool capable = false; ///< its device can hold a step (found by the probe)
  std::string why;      ///< what kept the step from being held
  bool holding = false; ///< the device holds a captured step
  whale_rt_tensor *loss = nullptr; ///< the held step's loss, kept
  /// What the captured step holds: operations, of which kernels, copies
  /// and fills (whale_rt_step_capture_end).
  int64_t held[4] = {0, 0, 0, 0};
  int64_t capturedAt = 0; ///< the step captured (1-based); 0: none
  int64_t replays = 0;
};

/// Runs `entry` on `ctx` for step `step` (1-based), as `graph`'s phase
/// says; `*loss` is the step's loss, which the caller releases unless it
/// is `graph.loss`.
whale_rt_status runGraphedStep(whale_rt_context *ctx, RankEntry entry,
                               whale_rt_tensor *const *inputs, RankGraph &graph,
                               int64_t step, whale_rt_tensor **loss);

/// After a step ran on every rank without failing: the ranks' next phase,
/// the same for all of them. `who[i]` names rank i in a reason.
void advanceGraphs(const std::vector<RankGraph *> &graphs,
                   const std::vector<std::string> &who,
                   const std::vector<whale_rt_context *> &contexts);

/// Drops `graph`'s held step on `ctx`, if any; a rank that replayed
/// captures again at its next step.
void forgetGraph(whale_rt_context *ctx, RankGraph &graph);

/// What the run's ranks did with their steps, in one line: how many
/// operations one launch replayed, or why the steps ran as they are; ""
/// where no rank's device can hold a step.
std::string graphReport(const std::vector<const RankGraph *> &graphs);

} // namespace whale

#endif
