//===- Recovery.cpp - a planned run going on after a rank or process died -===//
//
// After a rank fails (one process), the survivors are re-planned and the
// state rebuilt from the in-memory store (a lost rank's boxes from the next
// rank's copy and from its data-parallel replicas) or else from this run's
// last checkpoint; the steps since that state run again. Under mpirun the
// survivors of lost processes make a communicator of their own and do the
// same, agreeing on which copy they all hold (runtime/state/ProcessStore.h).
//
//===----------------------------------------------------------------------===//

#include "lib/elastic/StateCollection.h"
#include "lib/train/PlannedRun.h"
#include "runtime/state/ProcessReshard.h"
#include "runtime/state/ProcessStore.h"
#include "runtime/state/RankCheckpoint.h"
#include "runtime/state/RankFiles.h"
#include "runtime/state/RecoveryState.h"

#include <chrono>
#include <thread>

namespace whale {

// After the rank on device `lost` failed: the store's state without
// that worker (its boxes from the next worker's copy and from its
// data-parallel replicas), or else this run's last checkpoint, on the
// survivors, re-planned.
std::string PlannedRun::recover(int64_t lost, RecoveryReport &report) {
  auto t0 = std::chrono::steady_clock::now();
  int64_t lostRank = -1;
  for (int64_t i = 0; i < static_cast<int64_t>(ranks.size()); ++i)
    if (ranks[i].place.device == lost)
      lostRank = i;
  SurvivingState surviving;
  if (std::string err = survivingState(store, lostRank, options.savePath,
                                       lastSaved(), surviving);
      !err.empty())
    return err;
  report.source = surviving.source;
  report.resumedAfter = surviving.step;
  HeldState &held = surviving.held;
  // The survivors, as many as the model plans on (from the end, the
  // fewest dropped).
  Cluster survivors = cluster;
  survivors.devices.erase(survivors.devices.begin() + lost);
  PlannedModel next;
  std::string why;
  while (!survivors.devices.empty() &&
         !planModel(interp, options.model, survivors, planOptions, next, why)) {
    survivors.devices.pop_back();
    replacePlan(next, PlannedModel());
  }
  if (survivors.devices.empty())
    return "the model plans on none of the remaining devices: " + why;
  StateCollection after;
  ReshardPlan reshard;
  HeldState moved;
  if (!stateOf(next, survivors, after, error) ||
      !planReshard(surviving.layout, after, reshard, error))
    return error;
  report.devicesBefore = static_cast<int64_t>(cluster.devices.size());
  cluster = survivors;
  if (std::string err = openRanks(std::move(next)); !err.empty())
    return err;
  if (!applyReshard(after, reshard, held, moved, error))
    return error;
  if (std::string err = injectState(moved); !err.empty())
    return err;
  report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
  report.movedBytes = reshard.movedBytes();
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

// Under mpirun, after processes died (their peers' connections tell,
// runtime/comm/PeerWatch.h): the survivors make a communicator of their
// own (MPI's world is not theirs any more), plan for their devices, and
// rebuild the state from the store (a lost process's boxes are with the
// process after it, runtime/state/ProcessStore.h), or else from the last
// checkpoint; then they go on from that state's step.
std::string PlannedRun::recoverProcesses(RecoveryReport &report) {
  auto t0 = std::chrono::steady_clock::now();
  // A moment for deaths that came together to be all known.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<int32_t> dead(static_cast<size_t>(processCount));
  const int32_t deaths =
      whale_rt_comm_lost_processes(comm.get(), dead.data(), processCount);
  dead.resize(static_cast<size_t>(std::min(deaths, processCount)));
  const ProcessLayout oldLayout = layout;
  const std::vector<int64_t> oldGrid = plan.grid;
  const ProcessLoss loss(dead, oldLayout, oldGrid);
  if (static_cast<int32_t>(loss.lost.size()) >= processCount)
    return "no process is left";
  // The store's updates held here, where they cover what was lost; the
  // survivors agree on one below.
  HeldState held;
  StateCollection before;
  std::vector<int64_t> stepsHere = store.stepsHeld();
  std::string inMemory = stepsHere[0] < 0
                             ? "no copy of the state is kept in memory "
                               "(--replicate-every)"
                             : loss.uncovered(processCount);
  if (!inMemory.empty())
    stepsHere = {-1, -1};

  // The survivors' communicator, numbers and devices: each keeps its
  // own, in order, so that process q runs the q-th block of them.
  void *survivors = nullptr;
  char why[512] = "";
  if (whale_rt_mpi_survivors(mpiBase, dead.data(),
                             static_cast<int32_t>(dead.size()), &survivors, why,
                             sizeof why) != WHALE_RT_OK)
    return why;
  std::unique_ptr<void, void (*)(void *)> previousComm(survivorsComm.release(),
                                                       whale_rt_mpi_comm_free);
  survivorsComm.reset(survivors);
  mpiBase = survivors;
  if (whale_rt_mpi_init_on(mpiBase, &processRank, &processCount, why,
                           sizeof why) != WHALE_RT_OK)
    return why;
  // Every survivor keeps its devices, or, where the model does not plan
  // on them all, the same fewer of them each (its first ones).
  Cluster remaining = cluster;
  PlannedModel next;
  std::string planError;
  int64_t keep = oldLayout.perProcess;
  for (; keep > 0; --keep) {
    remaining.devices.clear();
    for (size_t d = 0; d < cluster.devices.size(); ++d) {
      const int64_t device = static_cast<int64_t>(d);
      if (!loss.lost.count(oldLayout.ownerOf(device)) &&
          device % oldLayout.perProcess < keep)
        remaining.devices.push_back(cluster.devices[d]);
    }
    if (planModel(interp, options.model, remaining, planOptions, next, error))
      break;
    if (planError.empty())
      planError = error;
    replacePlan(next, PlannedModel());
  }
  if (!next.ranks)
    return "the model plans on none of the survivors' devices (" +
           std::to_string(processCount) +
           " processes, the same number "
           "each): " +
           planError;
  if (std::string err = layoutProcesses(
          processRank, processCount,
          static_cast<int64_t>(remaining.devices.size()), layout);
      !err.empty())
    return err;
  report.devicesBefore = static_cast<int64_t>(cluster.devices.size());
  report.processesLost = static_cast<int64_t>(loss.lost.size());
  cluster = remaining;
  abandoned.ranks.push_back(std::move(ranks));
  ranks.clear();
  abandoned.comms.push_back(std::move(comm));
  if (std::string err = openRanks(std::move(next)); !err.empty())
    return err;
  previousComm.reset(); // after the communicator made over it

  // Memory only when every survivor has its part of it, of one step: the
  // newest update all of them hold whole (one may have finished an
  // update that another did not when the process died).
  std::vector<double> steps;
  if (!gatherFromProcesses(comm.get(), layout,
                           {double(stepsHere[0]), double(stepsHere[1])}, steps))
    return "the survivors could not compare their copies of the state";
  int64_t fromMemory = -1;
  for (int64_t candidate : stepsHere) {
    bool everywhere = candidate >= 0 && candidate >= lastSaved();
    for (size_t p = 0; everywhere && p < steps.size(); p += 2)
      everywhere =
          steps[p] == double(candidate) || steps[p + 1] == double(candidate);
    if (everywhere) {
      fromMemory = candidate;
      break;
    }
  }
  if (fromMemory < 0 && inMemory.empty())
    inMemory = stepsHere[0] >= 0 && stepsHere[0] < lastSaved()
                   ? "the copy in memory is older than the last checkpoint"
                   : "the survivors hold no update of the state in common";
  // Every survivor takes the same answer from the same numbers; one whose
  // copy is damaged makes all fall back.
  std::string taken;
  if (fromMemory >= 0 &&
      !store.takeSurviving(loss.lostRanks, fromMemory, before, held, taken))
    held.clear();
  std::vector<double> takenEverywhere;
  if (!gatherFromProcesses(comm.get(), layout, {taken.empty() ? 1.0 : 0.0},
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
    report.source = "memory";
    report.resumedAfter = fromMemory;
  } else {
    if (inMemory.empty())
      inMemory = "another process's copy of the state is not usable";
    // Its layout here; the data this process needs once planned.
    const std::set<int64_t> none;
    SurvivingState saved;
    if (std::string err = checkpointState(options.savePath, lastSaved(),
                                          inMemory, saved, &none);
        !err.empty())
      return err;
    before = std::move(saved.layout);
    held = std::move(saved.held);
    report.source = saved.source;
    report.resumedAfter = saved.step;
  }
  if (fromMemory >= 0) {
    // Each old rank's boxes are where its holder runs now: a survivor's
    // own on its device (by its new name), a lost one's with its keeper
    // (on the keeper's first device), so that the plan moves what truly
    // moves.
    const std::vector<RankPlace> places = devicePlaces(cluster);
    for (size_t r = 0; r < before.ranks.size() && r < oldGrid.size(); ++r) {
      const int64_t device = oldGrid[r];
      const int32_t owner = oldLayout.ownerOf(device);
      const int64_t slot = device % oldLayout.perProcess;
      const int64_t now =
          !loss.lost.count(owner) && slot < keep
              ? loss.renumbered[static_cast<size_t>(owner)] * keep + slot
              : loss.holderOf(static_cast<int64_t>(r), oldLayout, oldGrid) *
                    keep;
      before.ranks[r] = places[static_cast<size_t>(now)];
    }
  }
  StateCollection after;
  ReshardPlan reshard;
  HeldState moved;
  if (!stateOf(plan, cluster, after, error) ||
      !planReshard(before, after, reshard, error))
    return error;
  report.movedBytes = reshard.movedBytes();
  // From memory the boxes are spread over the survivors and cross
  // between them; from a checkpoint each survivor reads, once planned,
  // the files of the old ranks its own new ranks read from.
  if (fromMemory >= 0)
    if (std::string err = exchangePiecesBetween(
            comm.get(), layout.process, layout.perProcess,
            [&](int64_t rank) {
              return loss.holderOf(rank, oldLayout, oldGrid);
            },
            [&](int64_t rank) {
              return layout.ownerOf(plan.grid[static_cast<size_t>(rank)]);
            },
            after, reshard, held, report.processBytes);
        !err.empty())
      return err;
  keepLocalPieces(layout, plan.grid, after, reshard);
  if (fromMemory < 0) {
    StateCheckpoint sources;
    sources.model = plan.model;
    sources.nextStep = report.resumedAfter;
    if (std::string err = readPieceSources(options.savePath, reshard, sources);
        !err.empty())
      return err;
    held = std::move(sources.held);
  }
  if (!applyReshard(after, reshard, held, moved, error))
    return error;
  if (std::string err = injectState(moved); !err.empty())
    return err;
  report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

TrainLoop::StepEnd PlannedRun::recoverFromLoss(int64_t step,
                                               const std::string &failure) {
  StepEnd end;
  if (whale_rt_comm_lost_processes(comm.get(), nullptr, 0) == 0 ||
      (store.step() < 0 && lastSaved() < 0)) {
    end.error = failure;
    return end;
  }
  RecoveryReport report;
  report.failedStep = step + 1;
  report.failure = failure;
  const bool reported = processRank <= 0;
  if (std::string err = recoverProcesses(report); !err.empty()) {
    end.error = failure + "; recovering failed: " + err;
    return end;
  }
  // Process 0 may have been lost: its successor reports from now on.
  if (processRank == 0 && !reported)
    if (std::string err = startReporting(); !err.empty()) {
      end.error = err;
      return end;
    }
  result.recoveries.push_back(report);
  injected = true;
  end.resumedAfter = report.resumedAfter;
  return end;
}

} // namespace whale
