//===- RankState.cpp - a planned run's state out of its ranks and in ------===//
//
// The state the ranks hold, by the boxes of the plan's state collection
// (its rank i is the grid's rank i), read out of them or written into
// them; the step and the seed are the driver's. Saves (one file, or one
// per rank), the load of a rank checkpoint of any plan, and the in-memory
// store's updates go through here.
//
//===----------------------------------------------------------------------===//

#include "lib/elastic/StateCollection.h"
#include "lib/train/PlannedRun.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/ProcessRecovery.h"
#include "runtime/state/ProcessStore.h"
#include "runtime/state/RecoveryState.h"

#include <chrono>

namespace whale {

std::string PlannedRun::saveState(int64_t nextStep, bool gatherAnyway) {
  if (!options.savePath.empty())
    phase("saving the checkpoint to " + options.savePath);
  struct Done {
    const PlannedRun &run;
    ~Done() { run.phase(""); }
  } done{*this};
  if (!options.savePath.empty() && options.saveRanks) {
    StateCollection layout;
    if (!stateOf(plan, cluster, layout, error))
      return error;
    if (std::string err = saveRankFiles(options.savePath, layout, nextStep,
                                        settings.seed, localRanks());
        !err.empty())
      return err;
  }
  const bool wholeSave = !options.savePath.empty() && !options.saveRanks;
  if (!wholeSave && !gatherAnyway)
    return "";
  if (std::string err = gatherToHost(); !err.empty())
    return err;
  if (!wholeSave || processRank > 0)
    return "";
  return saveCheckpoint(host.get(), options.savePath, plan.model, nextStep,
                        settings.seed, allParams, settings.stateCount);
}

LocalRanks PlannedRun::localRanks() {
  return localRanksOf(ranks, plan.replicas,
                      options.processes ? &layout : nullptr, comm.get(),
                      plan.grid);
}

std::string PlannedRun::loadRankCheckpoint() {
  // One file per rank, of any plan: a reshard from its boxes to ours.
  StateCollection ours;
  if (!stateOf(plan, cluster, ours, error))
    return "loading " + options.loadPath + ": " + error;
  return loadRankFiles(options.loadPath, ours, localRanks(), first);
}

std::string PlannedRun::updateStore(int64_t step) {
  auto t0 = std::chrono::steady_clock::now();
  StateCollection collection;
  if (!stateOf(plan, cluster, collection, error))
    return error;
  const bool acrossProcesses = options.processes && layout.processes > 1;
  int64_t sent = 0;
  if (std::string err =
          acrossProcesses
              ? keepAcrossProcesses(store, collection, planVersion, step,
                                    settings.seed, localRanks(), sent)
              : keepInStore(store, collection, planVersion, step, settings.seed,
                            localRanks());
      !err.empty())
    return err;
  result.storeSentBytes += sent;
  ++result.storeUpdates;
  result.storeSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

} // namespace whale
