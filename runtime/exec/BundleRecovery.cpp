//===- BundleRecovery.cpp - a compiled plan's run after a failed rank -----===//
//
// The state kept in memory every --replicate-every steps, and, when a rank
// fails in one process, the job going on under the first --fallback plan
// whose devices are left, from that state or the last checkpoint
// (runtime/state/RecoveryState.h, as `whale run` recovers).
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/BundleRun.h"
#include "runtime/state/MoveState.h"
#include "runtime/state/RecoveryState.h"

#include <chrono>

namespace whale {

TrainLoop::StepEnd BundleRun::afterStep(int64_t done) {
  // The store after every replicateEvery-th step (none before the first:
  // the parameters are made by the first step's programs).
  StepEnd end;
  if (options.replicateEvery <= 0 ||
      (done - startStep) % options.replicateEvery != 0 ||
      done >= schedule.steps)
    return end;
  if (std::string err = keepInStore(store, plan->state, planVersion, done,
                                    schedule.seed, plan->local());
      !err.empty())
    end.error = "keeping the state in memory after step " +
                std::to_string(done) + ": " + err;
  else
    ++result.storeUpdates;
  return end;
}

std::string BundleRun::checkRecovery(int64_t firstStep) {
  const bool asked = options.replicateEvery > 0 || !options.fallbacks.empty() ||
                     options.failStep >= 0;
  if (asked && world.processes)
    return "--replicate-every, --fallback and --fail-rank recover a failed "
           "rank in one process; under mpirun whale-exec does not recover "
           "yet (whale run does)";
  const int64_t devices = static_cast<int64_t>(plan->m.devices.size());
  if (options.failStep >= 0 &&
      (options.failDevice < 0 || options.failDevice >= devices ||
       options.failStep <= firstStep || options.failStep > schedule.steps))
    return "--fail-rank " + std::to_string(options.failDevice) + "@" +
           std::to_string(options.failStep) + ": expected a device from 0 to " +
           std::to_string(devices - 1) + " and a step this run trains, from " +
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
  std::string folder, whyNot;
  for (const std::string &f : options.fallbacks) {
    next = std::make_unique<OpenedBundle>();
    if (std::string err = readBundle(f, overrides, *next); !err.empty())
      return "the fallback plan " + f + ": " + err;
    std::string why = runsOnSurvivors(next->m.devices, left);
    if (why.empty()) {
      folder = f;
      break;
    }
    whyNot += "; " + f + ": " + why;
  }
  if (folder.empty())
    return "no --fallback plan runs on the " + std::to_string(left.size()) +
           " devices left without " + gone.name + " on " + gone.node + whyNot;
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

} // namespace whale
