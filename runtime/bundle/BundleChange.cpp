//===- BundleChange.cpp - a compiled plan's run going on under another ----===//
//
// At the step boundaries an elastic schedule names, or when a person
// writes a compiled plan's folder into the control file, the job goes on
// under that plan of the model, its state moved in memory
// (runtime/state/MoveState.h), as `whale run`'s device changes move it.
//
//===----------------------------------------------------------------------===//

#include "runtime/bundle/BundleRun.h"
#include "runtime/state/MoveState.h"

#include <algorithm>
#include <chrono>

namespace whale {
namespace {

/// Whether every device of `m` is a CPU (its tensors host memory).
bool onHost(const PlanManifest &m) {
  return std::all_of(
      m.devices.begin(), m.devices.end(),
      [](const RankDevice &d) { return d.name.rfind("cpu:", 0) == 0; });
}

} // namespace

void BundleRun::replacePlan(std::unique_ptr<OpenedBundle> next) {
  plan = std::move(next);
  checked = false;
  // The store's next update fills buffers of its own. Until then its last
  // update, of the plan before, is still the job's state: in one process
  // its buffers are host memory, which the change left alone.
  ++planVersion;
}

std::string BundleRun::beforeStep(int64_t step) {
  // A change asked for by hand, checked before anything is stopped: a plan
  // that cannot take the run over is reported and the job goes on.
  std::string folder, why;
  if (control && step > startStep &&
      control->pollEverywhere(step, world.rank, plan->comm.get(),
                              world.processes ? &plan->layout : nullptr, folder,
                              why)) {
    const std::string after = "after step " + std::to_string(step);
    if (why.empty()) {
      OpenedBundle trial;
      why = readBundle(folder, overrides, trial);
      if (why.empty())
        why = checkSameJob(plan->m, trial.m);
      if (why.empty())
        return changePlan({step, folder}, step);
      result.controlErrors.push_back(after + ", " + folder + ": " + why);
    } else {
      result.controlErrors.push_back(after + ": " + why);
    }
  }
  if (nextChange < options.elastic.size() &&
      options.elastic[nextChange].afterStep == step)
    return changePlan(options.elastic[nextChange++], step);
  return "";
}

std::string BundleRun::changePlan(const ScheduledChange &change, int64_t step) {
  // Pause at this step boundary: the next plan's state, the move from the
  // old ranks' boxes to the new ones', the new ranks, the state into them.
  const auto t0 = std::chrono::steady_clock::now();
  const std::string after = " after step " + std::to_string(step);
  auto next = std::make_unique<OpenedBundle>();
  if (std::string err = readBundle(change.target, overrides, *next);
      !err.empty())
    return "changing to " + change.target + after + ": " + err;
  if (std::string err = checkSameJob(plan->m, next->m); !err.empty())
    return "changing to " + change.target + after + ": " + err;
  StateMove move;
  if (std::string err = planMove(plan->state, next->state, move); !err.empty())
    return "resharding" + after + ": " + err;
  // Under mpirun the same processes run the new plan's devices, each its
  // block of them.
  ProcessLayout nextLayout;
  if (world.processes)
    if (std::string err = layoutProcesses(
            world.rank, world.count,
            static_cast<int64_t>(next->m.devices.size()), nextLayout);
        !err.empty())
      return "changing to " + change.target + after + ": " + err +
             " (the new plan's)";
  const bool direct = onHost(plan->m) && onHost(next->m) && !world.processes;
  ExecChange report;
  report.afterStep = step;
  report.plan = change.target;
  report.ranksBefore = plan->m.stages * plan->m.replicas;
  report.ranksAfter = next->m.stages * next->m.replicas;
  LocalRanks old = plan->local();
  if (!direct)
    if (std::string err =
            takePieces(move, step, schedule.seed, old,
                       world.processes ? &nextLayout : nullptr, next->m.grid);
        !err.empty())
      return err + after;
  // Once its pieces are out, the old ranks go before the new ones open: a
  // device never holds both plans' state, and under mpirun the ranks bind
  // to MPI one plan at a time. Straight copies need both. The old
  // communicator stays until the state is in: a process that closed it
  // while another still used it would look lost to that one.
  if (!direct)
    plan->ranks.clear();
  if (std::string err = openBundle(*next, overrides, world, schedule.seed);
      !err.empty())
    return "opening the ranks of " + change.target + after + ": " + err;
  if (std::string err = direct ? copyPieces(move, old, next->local())
                               : putPieces(move, next->local());
      !err.empty())
    return err + after;
  replacePlan(std::move(next));
  report.movedBytes = move.reshard.movedBytes();
  report.stayedBytes = move.reshard.stayBytes;
  report.processBytes = move.processBytes;
  report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
          .count();
  result.changes.push_back(report);
  return "";
}

} // namespace whale
