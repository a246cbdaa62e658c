//===- RecoveryState.h - the state a run goes on from after a failure -*- C++
//-*-===//
//
// A run in one process that keeps its state in memory (StateStore.h) or
// saves checkpoints can lose a rank and go on: the state with the lost
// worker's boxes taken from the next worker's copy, or else the state of
// the run's last checkpoint, resharded into the survivors' plan. `whale
// run` re-plans for the survivors (lib/train/Recovery.cpp); `whale-exec`
// takes the compiled plan given for them (runtime/bundle/BundleRecovery.cpp).
// Both keep and take the state here. Across processes the store's copies
// go between processes (ProcessStore.h), which `whale run` does.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_RECOVERYSTATE_H
#define WHALE_RUNTIME_STATE_RECOVERYSTATE_H

#include "runtime/bundle/PlanManifest.h"
#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/StateStore.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace whale {

/// The boxes of `layout` that this process's ranks hold, out of them into
/// `into` (buffers of the right sizes reused), as after step `step` of
/// `seed`; "" or why not.
std::string takeOwnBoxes(const StateCollection &layout, int64_t step,
                         uint64_t seed, const LocalRanks &ranks,
                         HeldState &into);

/// Keeps the state of the ranks holding `layout` (this process's, all of
/// them) after step `step` of `seed` in `store`: each worker's boxes, and a
/// copy with the next worker. `version` names the plan (a new one after a
/// change). "" or why not; the store then holds no update.
std::string keepInStore(StateStore &store, const StateCollection &layout,
                        int64_t version, int64_t step, uint64_t seed,
                        const LocalRanks &ranks);

/// The state a run goes on from, and where it came from.
struct SurvivingState {
  StateCollection layout;
  HeldState held;
  int64_t step = -1;             ///< the steps it is the state after
  std::string source = "memory"; ///< or "checkpoint PATH"
};

/// The state of the run's last checkpoint, at `path` and saved after step
/// `saved` (-1: none), into `out`; "" or why there is none, after `why`
/// memory did not serve. With `only`, the data of those ranks alone is
/// read (loadStateCheckpoint).
std::string checkpointState(const std::string &path, int64_t saved,
                            const std::string &why, SurvivingState &out,
                            const std::set<int64_t> *only = nullptr);

/// In one process, after worker `lost` of the store failed: the store's
/// state without it when the store holds one at least as new as the last
/// checkpoint (`path`, after step `saved`), else that checkpoint's; "" or
/// why neither serves.
std::string survivingState(StateStore &store, int64_t lost,
                           const std::string &path, int64_t saved,
                           SurvivingState &out);

/// "" when a plan on the devices `needed` can run on the devices `left`
/// (those of the failed plan but the lost one); else why not. A GPU is the
/// device its node and runtime name say ("cuda:2": the same GPU in both
/// plans); CPU devices are threads of a node, numbered afresh by every
/// plan, so a node with k of them left runs a plan's first k there.
std::string runsOnSurvivors(const std::vector<RankDevice> &needed,
                            const std::vector<RankDevice> &left);

} // namespace whale

#endif
