//===- PlanState.h - the state a plan's ranks hold, as boxes ------*- C++
//-*-===//
//
// The state a plan's ranks hold between steps, as runtime/state/Reshard.h
// describes it: every parameter and each of its optimizer tensors
// (NAME.optimizer_K, as checkpoints name them) with the box each rank holds
// (the whole, or its part of a shard group's split, uneven shards
// included), and the step and the seed every rank keeps (the data position
// follows from them). Read from the stage programs' descriptions, which the
// JIT-driven run makes from its rank programs and a compiled plan's
// manifest carries, so that `whale run` and `whale-exec` agree on it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_PLANSTATE_H
#define WHALE_RUNTIME_STATE_PLANSTATE_H

#include "runtime/bundle/PlanManifest.h"
#include "runtime/state/Reshard.h"

#include <functional>
#include <string>
#include <vector>

namespace whale {

/// A plan's grid and what each of its ranks runs.
struct PlanGrid {
  std::string model;
  int64_t stages = 1, replicas = 1;
  /// grid[s * replicas + r]: the device of stage s, replica r (empty: r).
  std::vector<int64_t> grid;
  /// Each device's place, the same for the same device in two plans.
  std::vector<RankPlace> devices;
  /// Optimizer tensors per parameter.
  int stateCount = 0;
  /// The program of stage s, replica r.
  std::function<const StageProgram &(int64_t stage, int64_t replica)> program;
};

/// The state of `plan`; false, with `error`, when a rank's device is not
/// one of the plan's or a shard cannot be placed (weights that do not
/// divide the extent).
bool planState(const PlanGrid &plan, StateCollection &out, std::string &error);

/// Each device of a compiled plan, placed: its node's name and the
/// device's kind and index there (as the manifest records them).
std::vector<RankPlace> manifestPlaces(const PlanManifest &m);

/// The state a compiled plan's ranks hold.
bool manifestState(const PlanManifest &m, StateCollection &out,
                   std::string &error);

/// A state tensor's name as a rank knows it: the parameter's name, with
/// `state` set to which of its optimizer tensors it is (NAME.optimizer_K),
/// or -1.
std::string rankTensorName(const std::string &name, int &state);

/// The boxes of `layout` that the pieces of `reshard` (into `next`) read,
/// out of the ranks whose contexts `contextOf` gives (null: another
/// process's rank, skipped); the step and the seed as given.
std::string
extractState(const StateCollection &layout, int64_t step, uint64_t seed,
             const ReshardPlan &reshard, const StateCollection &next,
             const std::function<whale_rt_context *(int64_t rank)> &contextOf,
             HeldState &held);

/// Writes every box of `held` into its rank (skipping other processes'
/// ranks, whose `contextOf` is null).
std::string
injectState(const HeldState &held,
            const std::function<whale_rt_context *(int64_t rank)> &contextOf);

} // namespace whale

#endif
