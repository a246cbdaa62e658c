//===- ProcessRecovery.cpp - the state rebuilt after processes died -------===//

#include "runtime/state/ProcessRecovery.h"

#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/PlanState.h"
#include "runtime/state/ProcessReshard.h"
#include "runtime/state/RecoveryState.h"

#include <set>

namespace whale {

std::string keepAcrossProcesses(StateStore &store,
                                const StateCollection &layout, int64_t version,
                                int64_t step, uint64_t seed,
                                const LocalRanks &ranks, int64_t &sentBytes) {
  HeldState &mine = store.pendingOwn(layout, version);
  if (std::string err = takeOwnBoxes(layout, step, seed, ranks, mine);
      !err.empty()) {
    store.dropPending();
    return err;
  }
  // The copy goes to the next process: a process's death takes all of
  // its ranks.
  if (std::string err = exchangeStoreCopies(ranks.comm, *ranks.processes, mine,
                                            store.pendingCopy(), sentBytes);
      !err.empty()) {
    store.dropPending();
    return err;
  }
  store.commitPending(step);
  return "";
}

std::string joinSurvivors(const std::vector<int32_t> &dead, const void *&base,
                          MpiComm &owned, MpiComm &previous, int32_t &rank,
                          int32_t &count) {
  void *survivors = nullptr;
  char why[512] = "";
  if (whale_rt_mpi_survivors(base, dead.data(),
                             static_cast<int32_t>(dead.size()), &survivors, why,
                             sizeof why) != WHALE_RT_OK)
    return why;
  previous.reset(owned.release());
  owned.reset(survivors);
  base = survivors;
  if (whale_rt_mpi_init_on(base, &rank, &count, why, sizeof why) != WHALE_RT_OK)
    return why;
  return "";
}

LostProcesses::LostProcesses(StateStore &store,
                             const std::vector<int32_t> &dead,
                             const ProcessLayout &oldLayout,
                             const std::vector<int64_t> &oldGrid,
                             int32_t processes)
    : loss(dead, oldLayout, oldGrid), oldLayout(oldLayout), oldGrid(oldGrid),
      stepsHere(store.stepsHeld()) {
  // The store's updates held here, where they cover what was lost; the
  // survivors agree on one once they can talk.
  inMemory = stepsHere[0] < 0 ? "no copy of the state is kept in memory "
                                "(--replicate-every)"
                              : loss.uncovered(processes);
  if (!inMemory.empty())
    stepsHere = {-1, -1};
}

std::string rebuildAfterLoss(StateStore &store, const LostProcesses &lost,
                             const SurvivorsPlan &now, const std::string &model,
                             const std::string &savePath, int64_t lastSaved,
                             RebuiltState &out) {
  const ProcessLoss &loss = lost.loss;
  const ProcessLayout &oldLayout = lost.oldLayout;
  const std::vector<int64_t> &oldGrid = lost.oldGrid;
  std::string inMemory = lost.inMemory;
  // Memory only when every survivor has its part of it, of one step: the
  // newest update all of them hold whole (one may have finished an
  // update that another did not when the process died).
  std::vector<double> steps;
  if (!gatherFromProcesses(
          now.comm, now.layout,
          {double(lost.stepsHere[0]), double(lost.stepsHere[1])}, steps))
    return "the survivors could not compare their copies of the state";
  int64_t fromMemory = -1;
  for (int64_t candidate : lost.stepsHere) {
    bool everywhere = candidate >= 0 && candidate >= lastSaved;
    for (size_t p = 0; everywhere && p < steps.size(); p += 2)
      everywhere =
          steps[p] == double(candidate) || steps[p + 1] == double(candidate);
    if (everywhere) {
      fromMemory = candidate;
      break;
    }
  }
  if (fromMemory < 0 && inMemory.empty())
    inMemory = lost.stepsHere[0] >= 0 && lost.stepsHere[0] < lastSaved
                   ? "the copy in memory is older than the last checkpoint"
                   : "the survivors hold no update of the state in common";
  // Every survivor takes the same answer from the same numbers; one whose
  // copy is damaged makes all fall back.
  StateCollection before;
  HeldState held;
  std::string taken;
  if (fromMemory >= 0 &&
      !store.takeSurviving(loss.lostRanks, fromMemory, before, held, taken))
    held.clear();
  std::vector<double> takenEverywhere;
  if (!gatherFromProcesses(now.comm, now.layout, {taken.empty() ? 1.0 : 0.0},
                           takenEverywhere))
    return "the survivors could not compare their copies of the state";
  for (double ok : takenEverywhere)
    if (ok != 1.0 && fromMemory >= 0) {
      fromMemory = -1;
      inMemory = taken.empty() ? "another survivor's copy of the state is "
                                 "not usable"
                               : taken;
    }
  if (fromMemory >= 0) {
    out.source = "memory";
    out.resumedAfter = fromMemory;
    // Each old rank's boxes are where its holder runs now: a survivor's
    // own on its device (by its new name), a lost one's with its keeper
    // (on the keeper's first device), so that the plan moves what truly
    // moves.
    for (size_t r = 0; r < before.ranks.size() && r < oldGrid.size(); ++r) {
      const int64_t device = oldGrid[r];
      const int32_t owner = oldLayout.ownerOf(device);
      const int64_t slot = device % oldLayout.perProcess;
      const int64_t at =
          !loss.lost.count(owner) && slot < now.keep
              ? loss.renumbered[static_cast<size_t>(owner)] * now.keep + slot
              : loss.holderOf(static_cast<int64_t>(r), oldLayout, oldGrid) *
                    now.keep;
      before.ranks[r] = now.places[static_cast<size_t>(at)];
    }
  } else {
    if (inMemory.empty())
      inMemory = "another process's copy of the state is not usable";
    // Its layout here; the data this process needs once planned.
    const std::set<int64_t> none;
    SurvivingState saved;
    if (std::string err =
            checkpointState(savePath, lastSaved, inMemory, saved, &none);
        !err.empty())
      return err;
    before = std::move(saved.layout);
    held = std::move(saved.held);
    out.source = saved.source;
    out.resumedAfter = saved.step;
  }
  // The survivors' plan's state, which keepLocalPieces narrows to this
  // process's part.
  StateCollection after = now.state;
  ReshardPlan reshard;
  std::string error;
  if (!planReshard(before, after, reshard, error))
    return error;
  out.movedBytes = reshard.movedBytes();
  // From memory the boxes are spread over the survivors and cross
  // between them; from a checkpoint each survivor reads, once planned,
  // the files of the old ranks its own new ranks read from.
  if (fromMemory >= 0)
    if (std::string err = exchangePiecesBetween(
            now.comm, now.layout.process, now.layout.perProcess,
            [&](int64_t rank) {
              return loss.holderOf(rank, oldLayout, oldGrid);
            },
            [&](int64_t rank) {
              return now.layout.ownerOf(now.grid[static_cast<size_t>(rank)]);
            },
            after, reshard, held, out.processBytes);
        !err.empty())
      return err;
  keepLocalPieces(now.layout, now.grid, after, reshard);
  if (fromMemory < 0) {
    StateCheckpoint sources;
    sources.model = model;
    sources.nextStep = out.resumedAfter;
    if (std::string err = readPieceSources(savePath, reshard, sources);
        !err.empty())
      return err;
    held = std::move(sources.held);
  }
  HeldState moved;
  if (!applyReshard(after, reshard, held, moved, error))
    return error;
  return injectState(moved, now.contextOf);
}

} // namespace whale
