//===- BundleRecovery.cpp - a compiled plan's run after a failed rank -----===//
//
// The state kept in memory every --replicate-every steps, and, when a rank
// fails in one process or processes die under mpirun, the job going on
// under the first --fallback plan whose devices are left, from that state
// or the last checkpoint, as `whale run` recovers
// (runtime/state/RecoveryState.h, ProcessRecovery.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/BundleRun.h"
#include "runtime/state/MoveState.h"
#include "runtime/state/PlanState.h"
#include "runtime/state/ProcessRecovery.h"
#include "runtime/state/RecoveryState.h"

#include <algorithm>
#include <chrono>
#include <thread>

namespace whale {

TrainLoop::StepEnd BundleRun::afterStep(int64_t done) {
  // The store after every replicateEvery-th step (none before the first:
  // the parameters are made by the first step's programs).
  StepEnd end;
  if (options.replicateEvery <= 0 ||
      (done - startStep) % options.replicateEvery != 0 ||
      done >= schedule.steps)
    return end;
  const LocalRanks ranks = plan->local();
  int64_t sent = 0;
  if (std::string err =
          world.processes && plan->layout.processes > 1
              ? keepAcrossProcesses(store, plan->state, planVersion, done,
                                    schedule.seed, ranks, sent)
              : keepInStore(store, plan->state, planVersion, done,
                            schedule.seed, ranks);
      !err.empty()) {
    // The failure is after step `done`, not during it.
    end = recoverFrom(
        done, "keeping the state in memory after step " + std::to_string(done),
        err, -1);
    return end;
  }
  ++result.storeUpdates;
  return end;
}

std::string BundleRun::checkRecovery(int64_t firstStep) {
  // The device is one of its step's: those of the plan of the last
  // scheduled change before it, else the first plan's (as whale run
  // checks it, issue 92 item 18).
  int64_t devices = static_cast<int64_t>(plan->m.devices.size());
  for (size_t i = 0; i < options.elastic.size() && i < scheduledDevices.size();
       ++i)
    if (options.elastic[i].afterStep < options.failStep)
      devices = scheduledDevices[i];
  if (options.failStep >= 0 &&
      (options.failDevice < 0 || options.failDevice >= devices ||
       options.failStep <= firstStep || options.failStep > schedule.steps))
    return "--fail-rank " + std::to_string(options.failDevice) + "@" +
           std::to_string(options.failStep) + ": expected a device from 0 to " +
           std::to_string(devices - 1) + " (the devices of step " +
           std::to_string(options.failStep) +
           ") and a step this run trains, from " +
           std::to_string(firstStep + 1) + " to " +
           std::to_string(schedule.steps);
  // Every fallback is read before the first step, as the schedule's plans
  // are: a plan of another job is refused now, not when a rank fails.
  for (const std::string &folder : options.fallbacks) {
    OpenedBundle next;
    std::string why = readBundle(folder, overrides, next);
    if (why.empty())
      why = checkSameJob(plan->m, next.m);
    if (!why.empty())
      return "the fallback plan " + folder + " cannot take the job: " + why;
  }
  return "";
}

std::string BundleRun::firstFallback(const std::vector<RankDevice> &left,
                                     int32_t processes,
                                     std::unique_ptr<OpenedBundle> &next) {
  std::string whyNot;
  for (const std::string &folder : options.fallbacks) {
    next = std::make_unique<OpenedBundle>();
    if (std::string err = readBundle(folder, overrides, *next); !err.empty())
      return "; the fallback plan " + folder + ": " + err;
    std::string why = runsOnSurvivors(next->m.devices, left);
    if (why.empty() && next->m.devices.size() % size_t(processes) != 0)
      why = "its " + std::to_string(next->m.devices.size()) +
            " devices are no equal blocks for " + std::to_string(processes) +
            " processes";
    if (why.empty())
      return "";
    whyNot += "; " + folder + ": " + why;
  }
  next.reset();
  return whyNot.empty() ? "; none was given" : whyNot;
}

TrainLoop::StepEnd BundleRun::recoverFrom(int64_t step, const std::string &name,
                                          const std::string &failure,
                                          int64_t lostDevice) {
  StepEnd end;
  end.error = name + ": " + failure;
  // --fail-rank's failure is behind the job now: a process that had not
  // reached its step when the others found the loss (behind, on a loaded
  // machine) must not kill the device's new rank when the step runs again.
  injected = true;
  const bool lostProcesses =
      world.processes &&
      whale_rt_comm_lost_processes(plan->comm.get(), nullptr, 0) > 0;
  const bool failedRank = !world.processes && lostDevice >= 0;
  if ((!lostProcesses && !failedRank) || (store.step() < 0 && lastSaved() < 0))
    return end;
  if (options.fallbacks.empty()) {
    end.error += " (with no --fallback plan to go on under, the job ends)";
    return end;
  }
  ExecRecovery report;
  report.failedStep = step + 1;
  report.failure = failure;
  const bool reported = world.rank <= 0;
  if (std::string err = lostProcesses ? recoverProcesses(report)
                                      : recover(lostDevice, report);
      !err.empty()) {
    end.error += "; recovering failed: " + err;
    return end;
  }
  // Process 0 may have been lost: its successor reports from now on.
  result.processRank = world.rank;
  if (world.processes && world.rank == 0 && !reported)
    if (std::string err = startReporting(); !err.empty()) {
      end.error = err;
      return end;
    }
  result.recoveries.push_back(report);
  end.error.clear();
  end.resumedAfter = report.resumedAfter;
  return end;
}

std::string BundleRun::recover(int64_t lost, ExecRecovery &report) {
  const auto t0 = std::chrono::steady_clock::now();
  // The state to go on from: the store's workers are the plan's ranks.
  int64_t lostRank = -1;
  for (size_t i = 0; i < plan->ranks.size(); ++i)
    if (plan->ranks[i].place.device == lost)
      lostRank = static_cast<int64_t>(i);
  SurvivingState surviving;
  if (std::string err = survivingState(store, lostRank, options.savePath,
                                       lastSaved(), surviving);
      !err.empty())
    return err;
  // The first fallback that runs on the devices left.
  std::vector<RankDevice> left = plan->m.devices;
  const RankDevice gone = left[static_cast<size_t>(lost)];
  left.erase(left.begin() + lost);
  std::unique_ptr<OpenedBundle> next;
  if (std::string err = firstFallback(left, 1, next); !err.empty())
    return "no --fallback plan runs on the " + std::to_string(left.size()) +
           " devices left without " + gone.name + " on " + gone.node + err;
  const std::string folder = next->folder;
  StateMove move;
  if (std::string err =
          planMove(std::move(surviving.layout), next->state, move);
      !err.empty())
    return "resharding: " + err;
  move.held = std::move(surviving.held);
  report.source = surviving.source;
  report.resumedAfter = surviving.step;
  report.plan = folder;
  report.ranksBefore = plan->m.stages * plan->m.replicas;
  report.ranksAfter = next->m.stages * next->m.replicas;
  // The failed plan's ranks go before the fallback's open.
  plan->ranks.clear();
  if (std::string err = openBundle(*next, overrides, world, schedule.seed);
      !err.empty())
    return "opening the ranks of " + folder + ": " + err;
  if (std::string err = putPieces(move, next->local()); !err.empty())
    return err;
  replacePlan(std::move(next));
  report.movedBytes = move.reshard.movedBytes();
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

std::string BundleRun::recoverProcesses(ExecRecovery &report) {
  const auto t0 = std::chrono::steady_clock::now();
  // A moment for deaths that came together to be all known.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  std::vector<int32_t> dead(static_cast<size_t>(world.count));
  const int32_t deaths =
      whale_rt_comm_lost_processes(plan->comm.get(), dead.data(), world.count);
  dead.resize(static_cast<size_t>(std::min(deaths, world.count)));
  const LostProcesses lost(store, dead, plan->layout, plan->m.grid,
                           world.count);
  if (static_cast<int32_t>(lost.loss.lost.size()) >= world.count)
    return "no process is left";
  // The devices left: those of the processes that live.
  std::vector<RankDevice> left;
  for (size_t d = 0; d < plan->m.devices.size(); ++d)
    if (!lost.loss.lost.count(plan->layout.ownerOf(static_cast<int64_t>(d))))
      left.push_back(plan->m.devices[d]);

  // The first fallback that runs on the devices left, in equal blocks: each
  // survivor runs the first devices of its old block. Chosen before the
  // survivors make a communicator: every survivor chooses alike.
  const int32_t survivors =
      world.count - static_cast<int32_t>(lost.loss.lost.size());
  std::unique_ptr<OpenedBundle> next;
  if (std::string err = firstFallback(left, survivors, next); !err.empty())
    return "no --fallback plan runs on the " + std::to_string(left.size()) +
           " devices of the " + std::to_string(survivors) + " processes left" +
           err;
  const std::string folder = next->folder;
  // The survivors' communicator and numbers.
  MpiComm previousComm(nullptr, whale_rt_mpi_comm_free);
  if (std::string err = joinSurvivors(dead, world.base, survivorsComm,
                                      previousComm, world.rank, world.count);
      !err.empty())
    return err;
  report.plan = folder;
  report.ranksBefore = plan->m.stages * plan->m.replicas;
  report.ranksAfter = next->m.stages * next->m.replicas;
  abandoned.push_back(std::move(plan));
  if (std::string err = openBundle(*next, overrides, world, schedule.seed);
      !err.empty())
    return "opening the ranks of " + folder + ": " + err;
  previousComm.reset(); // after the communicator made over it

  SurvivorsPlan now;
  now.comm = next->comm.get();
  now.layout = next->layout;
  now.grid = next->m.grid;
  now.places = manifestPlaces(next->m);
  now.state = next->state;
  now.contextOf = next->local().contextOf;
  now.keep = next->layout.perProcess;
  RebuiltState rebuilt;
  if (std::string err =
          rebuildAfterLoss(store, lost, now, next->m.model, options.savePath,
                           lastSaved(), rebuilt);
      !err.empty())
    return err;
  replacePlan(std::move(next));
  report.source = rebuilt.source;
  report.resumedAfter = rebuilt.resumedAfter;
  report.movedBytes = rebuilt.movedBytes;
  report.processesLost = static_cast<int64_t>(lost.loss.lost.size());
  report.processBytes = rebuilt.processBytes;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  return "";
}

} // namespace whale
