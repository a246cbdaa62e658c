//===- DeviceChange.cpp - a planned run moving to other devices -----------===//
//
// Under an elastic schedule, when a person writes a cluster spec into the
// control file, or when a CPU device's share of its cores is rewritten
// under the job (its cgroup's quota: the device now runs at another
// speed), the job pauses at a step boundary, re-plans for the new devices
// (a changed share re-probed, so the balance follows its new rate) and
// moves its state from the old ranks to the new by a reshard plan
// (runtime/state/Reshard.h), in memory.
//
//===----------------------------------------------------------------------===//

#include "lib/compile/DeviceProbe.h"
#include "lib/elastic/StateCollection.h"
#include "lib/train/PlannedRun.h"
#include "runtime/state/MoveState.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>

namespace whale {
namespace {

/// Tags of the driver's own messages under mpirun, above any a rank
/// program uses (runtime/state/ProcessReshard.cpp's are at 2^40).
constexpr int64_t kControlTag = int64_t(1) << 42;

/// Seconds since `t`.
double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t)
      .count();
}

/// Whether every device of `c` is a CPU (its tensors host memory).
bool onHost(const Cluster &c) {
  return std::all_of(c.devices.begin(), c.devices.end(),
                     [](const DeviceSpec &d) { return !d.gpu; });
}

} // namespace

std::string checkProcessThreads(const Cluster &cluster, int totalThreads) {
  // Every device's threads live in this process, and past a bound the
  // system would refuse them halfway (after gigabytes of stacks).
  const int shared = sharedThreads(cluster, totalThreads);
  int64_t processThreads = 0;
  for (const DeviceSpec &d : cluster.devices)
    processThreads += !d.gpu ? threadsOf(d, shared) : 1;
  if (processThreads <= kMaxProcessThreads)
    return "";
  return "the cluster's devices have " + std::to_string(processThreads) +
         " threads together, more than the " +
         std::to_string(kMaxProcessThreads) +
         " one process runs; give its devices fewer (@threads=)";
}

bool PlannedRun::checkDevices(const std::string &spec, Cluster &next,
                              PlannedModel &nextPlan, std::string &why) {
  if (!parseCluster(spec, next, why) || !checkClusterDevices(next, why))
    return false;
  if ((why = checkProcessThreads(next, options.threads)).empty() &&
      planModel(interp, options.model, next, planOptions, nextPlan, why) &&
      options.processes) {
    ProcessLayout blocks;
    why = layoutProcesses(processRank, processCount,
                          static_cast<int64_t>(next.devices.size()), blocks);
  }
  return why.empty();
}

ControlFile deviceControlFile(const std::string &path) {
  return ControlFile(path, "one cluster spec such as cpu:4",
                     [](const std::string &line) {
                       Cluster parsed;
                       std::string why;
                       return parseCluster(line, parsed, why) ? "" : why;
                     });
}

std::string PlannedRun::beforeStep(int64_t step) {
  // A change asked for by hand, checked before anything is stopped: a spec
  // the model cannot be planned on is reported and the job goes on.
  std::optional<ElasticChange> byHand;
  std::string spec, why;
  if (step > first && !options.controlPath.empty() &&
      control.pollEverywhere(step, processRank, comm.get(),
                             options.processes ? &layout : nullptr, spec,
                             why)) {
    Cluster asked;
    PlannedModel trial;
    if (!why.empty())
      result.controlErrors.push_back("after step " + std::to_string(step) +
                                     ": " + why);
    else if (!spec.empty() && !checkDevices(spec, asked, trial, why))
      result.controlErrors.push_back("after step " + std::to_string(step) +
                                     ", " + spec + ": " + why);
    else if (!spec.empty())
      byHand = ElasticChange{step, spec};
    replacePlan(trial, PlannedModel());
  }
  if (byHand)
    return changeDevices(*byHand, step);
  if (nextChange < options.elastic.size() &&
      options.elastic[nextChange].afterStep == step)
    return changeDevices(options.elastic[nextChange++], step);
  Cluster reshared;
  std::string changed;
  auto seeing = std::chrono::steady_clock::now();
  if (step > first && sharesChanged(reshared, changed)) {
    // The probing counts as planning: the change's time includes it.
    const double probing = since(seeing);
    const size_t done = result.reshards.size();
    std::string err =
        moveTo(reshared, "the devices at their new shares", step, changed);
    if (err.empty()) {
      result.reshards.back().seconds += probing;
      result.reshards.back().planSeconds += probing;
    } else if (result.reshards.size() == done &&
               err.rfind("re-planning", 0) == 0) {
      // No plan fits the devices at their new speeds: nothing has moved,
      // so the job goes on where it is, as after a control file's spec
      // that cannot be planned, and the change is not tried again.
      result.controlErrors.push_back(err + " (" + changed + ")");
      for (size_t d = 0; d < cluster.devices.size(); ++d)
        cluster.devices[d].cpuShare = reshared.devices[d].cpuShare;
      return "";
    }
    return err;
  }
  return "";
}

bool PlannedRun::sharesChanged(Cluster &next, std::string &why) {
  // Ranks of one process only: under mpirun each process would see its
  // own devices' groups, and all must agree on the change.
  if (options.processes)
    return false;
  std::vector<double> now(cluster.devices.size(), 0);
  bool changed = false;
  for (const OpenedRank &r : ranks) {
    const int64_t d = r.place.device;
    const DeviceSpec &spec = cluster.devices[static_cast<size_t>(d)];
    if (spec.gpu || !(spec.cpuShare < 1) || now[d] != 0)
      continue;
    double share = 0;
    char group[512] = "";
    if (whale_rt_context_cpu_share(r.ctx.get(), &share, group, sizeof group) !=
        WHALE_RT_OK)
      continue; // its group's files unreadable: nothing to go by
    now[d] = share;
    // A quota is whole microseconds: a change is more than rounding.
    if (std::fabs(share - spec.cpuShare) > 0.01 * spec.cpuShare)
      changed = true;
  }
  if (!changed)
    return false;
  next = cluster;
  for (size_t d = 0; d < now.size(); ++d) {
    DeviceSpec &spec = next.devices[d];
    if (now[d] == 0 ||
        std::fabs(now[d] - spec.cpuShare) <= 0.01 * spec.cpuShare)
      continue;
    char text[160];
    std::snprintf(text, sizeof text,
                  "%sdevice %zu's share of its cores went from %.3g to %.3g "
                  "(its cgroup's quota)",
                  why.empty() ? "" : "; ", d, spec.cpuShare, now[d]);
    why += text;
    const bool measured = spec.flops > 0;
    spec.cpuShare = now[d];
    if (!measured)
      continue; // a nominal rate follows the share by itself
    // Its rate and bandwidth under the new quota, as --probe measures them.
    Cluster one;
    one.devices = {spec};
    one.devices[0].flops = 0;
    one.devices[0].memoryBandwidth = 0;
    std::ostringstream log;
    std::string error;
    if (!probeCluster(one, shared, log, error)) {
      why += " (its rate not probed: " + error + "; scaled by the share)";
      spec.flops *= now[d] / cluster.devices[d].cpuShare;
      if (spec.memoryBandwidth > 0)
        spec.memoryBandwidth *= now[d] / cluster.devices[d].cpuShare;
      continue;
    }
    std::snprintf(text, sizeof text, ", probed at %.1f GFLOP/s",
                  one.devices[0].flops / 1e9);
    why += text;
    spec.flops = one.devices[0].flops;
    spec.memoryBandwidth = one.devices[0].memoryBandwidth;
  }
  return true;
}

std::string PlannedRun::changeDevices(const ElasticChange &change,
                                      int64_t step) {
  // Pause at this step boundary: a plan for the new devices, the reshard
  // plan from the old ranks' boxes to the new ones', the boxes it reads out
  // of the old ranks, the new ranks, the state into them.
  Cluster next;
  if (!parseCluster(change.cluster, next, error) ||
      !checkClusterDevices(next, error))
    return "changing the devices to " + change.cluster + " after step " +
           std::to_string(step) + ": " + error;
  return moveTo(next, change.cluster, step);
}

std::string PlannedRun::moveTo(const Cluster &next, const std::string &name,
                               int64_t step, const std::string &reason) {
  auto t0 = std::chrono::steady_clock::now();
  PlannedModel nextPlan;
  ReshardReport report;
  report.afterStep = step;
  report.ranksBefore = static_cast<int64_t>(ranks.size());
  report.why = reason;
  auto why = [&](const std::string &what) {
    return what + " after step " + std::to_string(step) + ": " + error;
  };
  if (!planModel(interp, options.model, next, planOptions, nextPlan, error))
    return why("re-planning for " + name);
  // Under mpirun the same processes run the new devices, each its block of
  // them.
  ProcessLayout nextLayout;
  if (options.processes)
    if (std::string err = layoutProcesses(
            processRank, processCount,
            static_cast<int64_t>(next.devices.size()), nextLayout);
        !err.empty()) {
      error = err + " (the new cluster's)";
      return why("changing the devices to " + name);
    }
  report.planSeconds = since(t0);
  StateCollection before, after;
  StateMove move;
  if (!stateOf(plan, cluster, before, error) ||
      !stateOf(nextPlan, next, after, error))
    return why("resharding");
  if (std::string err = planMove(std::move(before), std::move(after), move);
      !err.empty()) {
    error = err;
    return why("resharding");
  }
  // On CPU devices in one process each piece is copied straight from the
  // old rank's tensor into the new rank's, the old ranks kept open until
  // then; elsewhere through host copies, which under mpirun cross
  // processes over the old plan's communicator (runtime/state/MoveState.h).
  const bool direct = onHost(cluster) && onHost(next) && !options.processes;
  std::vector<OpenedRank> oldRanks;
  LocalRanks old = localRanks();
  CommPtr oldComm = std::move(comm);
  if (direct) {
    oldRanks = std::move(ranks);
    ranks.clear();
    old.contextOf = [&oldRanks](int64_t rank) {
      return oldRanks[rank].ctx.get();
    };
  } else if (std::string err = takePieces(
                 move, step, settings.seed, old,
                 options.processes ? &nextLayout : nullptr, nextPlan.grid);
             !err.empty()) {
    return err + " after step " + std::to_string(step);
  }
  if (options.processes) {
    // The old ranks go before the new communicator binds: both are MPI's,
    // one at a time.
    ranks.clear();
    layout = nextLayout;
  }
  cluster = next;
  auto opening = std::chrono::steady_clock::now();
  if (std::string err = openRanks(std::move(nextPlan)); !err.empty())
    return "opening the ranks for " + name + " after step " +
           std::to_string(step) + ": " + err;
  report.planSeconds += since(opening);
  if (std::string err = direct ? copyPieces(move, old, localRanks())
                               : putPieces(move, localRanks());
      !err.empty())
    return err + " after step " + std::to_string(step);
  oldRanks.clear(); // before the communicator they were bound to
  oldComm.reset();
  report.ranksAfter = static_cast<int64_t>(ranks.size());
  report.processBytes = move.processBytes;
  if (options.processes) {
    // Every process's ranks, and the plan's bytes (this process kept only
    // its own pieces).
    report.ranksBefore = static_cast<int64_t>(move.before.ranks.size());
    report.ranksAfter = static_cast<int64_t>(move.after.ranks.size());
  }
  const ReshardPlan &reshard = move.reshard;
  report.movedBytes = reshard.movedBytes();
  report.lowerBoundBytes = reshard.lowerBoundBytes;
  report.stayedBytes = reshard.stayBytes;
  report.seconds = since(t0);
  result.reshards.push_back(report);
  return "";
}

} // namespace whale
