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
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/checkpoint/RankFiles.h"
#include "runtime/state/MoveState.h"
#include "runtime/state/ProcessRecovery.h"
#include "runtime/state/ProcessReshard.h"
#include "runtime/state/ProcessStore.h"
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
  // The state moves into the new ranks as whale-exec's recovery moves it
  // (runtime/state/MoveState.h): the pieces are in memory already.
  StateCollection after;
  StateMove move;
  if (!stateOf(next, survivors, after, error))
    return error;
  if (std::string err =
          planMove(std::move(surviving.layout), std::move(after), move);
      !err.empty())
    return err;
  move.held = std::move(surviving.held);
  report.devicesBefore = static_cast<int64_t>(cluster.devices.size());
  cluster = survivors;
  if (std::string err = openRanks(std::move(next)); !err.empty())
    return err;
  if (std::string err = putPieces(move, localRanks()); !err.empty())
    return err;
  report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
  report.movedBytes = move.reshard.movedBytes();
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
  const LostProcesses lost(store, dead, layout, plan.grid, processCount);
  if (static_cast<int32_t>(lost.loss.lost.size()) >= processCount)
    return "no process is left";
  const ProcessLayout &oldLayout = lost.oldLayout;

  // The survivors' communicator, numbers and devices: each keeps its
  // own, in order, so that process q runs the q-th block of them.
  MpiComm previousComm(nullptr, whale_rt_mpi_comm_free);
  if (std::string err = joinSurvivors(dead, mpiBase, survivorsComm,
                                      previousComm, processRank, processCount);
      !err.empty())
    return err;
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
      if (!lost.loss.lost.count(oldLayout.ownerOf(device)) &&
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
  report.processesLost = static_cast<int64_t>(lost.loss.lost.size());
  cluster = remaining;
  abandoned.ranks.push_back(std::move(ranks));
  ranks.clear();
  abandoned.comms.push_back(std::move(comm));
  if (std::string err = openRanks(std::move(next)); !err.empty())
    return err;
  previousComm.reset(); // after the communicator made over it

  SurvivorsPlan now;
  now.comm = comm.get();
  now.layout = layout;
  now.grid = plan.grid;
  now.places = devicePlaces(cluster);
  if (!stateOf(plan, cluster, now.state, error))
    return error;
  now.contextOf = localRanks().contextOf;
  now.keep = keep;
  RebuiltState rebuilt;
  if (std::string err = rebuildAfterLoss(
          store, lost, now, plan.model, options.savePath, lastSaved(), rebuilt);
      !err.empty())
    return err;
  report.source = rebuilt.source;
  report.resumedAfter = rebuilt.resumedAfter;
  report.movedBytes = rebuilt.movedBytes;
  report.processBytes = rebuilt.processBytes;
  report.devicesAfter = static_cast<int64_t>(cluster.devices.size());
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

TrainLoop::StepEnd PlannedRun::recoverFromLoss(int64_t step,
                                               const std::string &failure) {
  StepEnd end;
  // Whatever was lost, --fail-rank's failure is behind the job: a process
  // that had not reached its step when the others found the loss (it was
  // behind, on a loaded machine) must not kill the rank that now holds
  // the device when the step runs again.
  injected = true;
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
