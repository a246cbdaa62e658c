//===- ProcessRecovery.h - the state rebuilt after processes died -*- C++
//-*-===//
//
// Under mpirun a process's death takes its ranks. The survivors make a
// communicator of their own, open a plan on their devices (`whale run`
// plans one; `whale-exec` takes a fallback compiled plan), and then
// rebuild the state in its ranks here, alike for both: from the newest
// update of the in-memory store that every survivor holds whole (a lost
// process's boxes from its keeper, ProcessStore.h), or else from the last
// checkpoint, each survivor reading the files its new ranks need.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STATE_PROCESSRECOVERY_H
#define WHALE_RUNTIME_STATE_PROCESSRECOVERY_H

#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/ProcessStore.h"
#include "runtime/state/StateStore.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace whale {

/// Keeps the state of this process's ranks (of `ranks`, holding `layout`)
/// after step `step` of `seed` in `store` as an update across processes:
/// the boxes, and the previous process's copy received while the next
/// process receives this one's. Until both directions are whole the
/// store's previous update stays the latest, so a process that dies in the
/// middle leaves every survivor an update to go back to. `sentBytes`: the
/// bytes this process sent. "" or why not.
std::string keepAcrossProcesses(StateStore &store,
                                const StateCollection &layout, int64_t version,
                                int64_t step, uint64_t seed,
                                const LocalRanks &ranks, int64_t &sentBytes);

/// An MPI communicator the runtime made for survivors.
using MpiComm = std::unique_ptr<void, void (*)(void *)>;

/// After the processes `dead` (numbers in `base`; null: MPI's world) died:
/// the survivors' own communicator, which `base` and `owned` become, and
/// this process's number and the survivors' count in it (`rank`,
/// `count`). What `owned` held before moves to `previous`, to be freed
/// once the communicators made over it are. "" or why not.
std::string joinSurvivors(const std::vector<int32_t> &dead, const void *&base,
                          MpiComm &owned, MpiComm &previous, int32_t &rank,
                          int32_t &count);

/// What was lost, as the survivors see it before they open their plan.
struct LostProcesses {
  ProcessLoss loss;
  ProcessLayout oldLayout;
  std::vector<int64_t> oldGrid;
  /// The steps of the store's updates held here, newest first ({-1, -1}
  /// when memory cannot serve), and why it cannot ("" when it may).
  std::vector<int64_t> stepsHere;
  std::string inMemory;

  /// Reads the store for a loss of `dead` (old process numbers) of
  /// `processes` processes running `oldGrid` on `oldLayout`.
  LostProcesses(StateStore &store, const std::vector<int32_t> &dead,
                const ProcessLayout &oldLayout,
                const std::vector<int64_t> &oldGrid, int32_t processes);
};

/// The survivors' plan, opened: its communicator, the processes' blocks
/// of its devices, each of its ranks' devices and each device's place,
/// what its ranks hold, this process's ranks, and how many of its old
/// devices each survivor kept (their first ones).
struct SurvivorsPlan {
  whale_rt_comm *comm = nullptr;
  ProcessLayout layout;
  std::vector<int64_t> grid;
  std::vector<RankPlace> places;
  StateCollection state;
  std::function<whale_rt_context *(int64_t rank)> contextOf;
  int64_t keep = 1;
};

/// Where the rebuilt state came from, and what moving it took.
struct RebuiltState {
  std::string source;       ///< "memory" or "checkpoint PATH"
  int64_t resumedAfter = 0; ///< the steps it is the state after
  int64_t movedBytes = 0, processBytes = 0;
};

/// Rebuilds the state of `now`'s ranks after `lost`, from the store or
/// else the checkpoint at `savePath` (saved after step `lastSaved`; -1:
/// none) of the model `model`; "" or why not. Every survivor calls it, and
/// every survivor takes the same source.
std::string rebuildAfterLoss(StateStore &store, const LostProcesses &lost,
                             const SurvivorsPlan &now, const std::string &model,
                             const std::string &savePath, int64_t lastSaved,
                             RebuiltState &out);

} // namespace whale

#endif
