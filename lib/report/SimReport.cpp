//===- SimReport.cpp - what `whale sim` shows -----------------------------===//

#include "lib/perf/Simulate.h"

#include "runtime/core/Allocator.h"
#include "runtime/core/Profiler.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace whale {
namespace {

/// The figures every form of the report shows.
struct Figures {
  double samplesPerSecond = 0, tokensPerSecond = 0;
  double flopsPerDevice = 0, mfu = 0;
  double computeShare = 0, commShare = 0, idleShare = 0, driverShare = 0;
  /// Seconds per op name over all ranks, largest first.
  std::vector<std::pair<std::string, double>> byKind;
  double busySeconds = 0;
};

Figures figuresOf(const Simulation &s) {
  Figures f;
  const double t = s.iterationSeconds();
  const double devices = static_cast<double>(s.topology.devices.size());
  if (t > 0) {
    f.samplesPerSecond = s.globalBatch / t;
    f.tokensPerSecond = f.samplesPerSecond * s.tokensPerSample;
    f.flopsPerDevice = s.modelFlops / t / std::max(1.0, devices);
    f.mfu = s.mfu();
  }
  double ranks = 0, compute = 0, comm = 0, idle = 0;
  for (const sim::SimRank &r : s.result.ranks) {
    ranks += r.likeIt;
    compute += r.likeIt * r.computeSeconds;
    comm += r.likeIt * r.commSeconds;
    idle += r.likeIt * r.idleSeconds;
  }
  if (t > 0 && ranks > 0) {
    f.computeShare = compute / ranks / t;
    f.commShare = comm / ranks / t;
    f.idleShare = idle / ranks / t;
    f.driverShare = s.driverSeconds / t;
  }
  std::map<std::string, double> kinds;
  for (size_t e = 0; e < s.events.size(); ++e) {
    kinds[s.events[e].op] += s.result.perEvent[e].seconds;
    f.busySeconds += s.result.perEvent[e].seconds;
  }
  f.byKind.assign(kinds.begin(), kinds.end());
  std::stable_sort(f.byKind.begin(), f.byKind.end(),
                   [](auto &a, auto &b) { return a.second > b.second; });
  return f;
}

std::string deviceName(const Simulation &s, int64_t device) {
  return s.topology.devices[device].name;
}

/// Element `device` of a per-device list (0 past its end).
int64_t perDevice(const std::vector<int64_t> &v, int64_t device) {
  return device < static_cast<int64_t>(v.size()) ? v[device] : 0;
}

int64_t memoryOf(const Simulation &s, int64_t device) {
  return perDevice(s.deviceMemory, device);
}

/// Of a device's peak, its activations: what the step keeps for the
/// backward, in flight, and the gradients made of it.
int64_t activationsOf(const Simulation &s, int64_t device) {
  return perDevice(s.deviceActivations, device);
}

/// Devices the replay gave their own profiled times.
int64_t ownTimesDevices(const Simulation &s) {
  int64_t n = 0;
  for (const perf::DeviceModel &d : s.topology.devices)
    n += !d.ownTimes.empty();
  return n;
}

} // namespace

std::string simulationText(const Simulation &s, const PlannedModel &plan) {
  Figures f = figuresOf(s);
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv(
      "{0}: {1} stage{2} x {3} replica{4} on {5} devices, {6}, {7} "
      "micro-batch{8} (global batch {9})\n",
      plan.model, plan.stages, plan.stages == 1 ? "" : "s", plan.replicas,
      plan.replicas == 1 ? "" : "s", plan.devices,
      plan.chunks > 1 ? plan.schedule + " interleaved over " +
                            std::to_string(plan.chunks) + " chunks a stage"
                      : plan.schedule,
      plan.microBatches, plan.microBatches == 1 ? "" : "es", plan.globalBatch);
  os << llvm::formatv(
      "iteration     {0:F3} ms (predicted: ranks {1:F3} ms, "
      "driver {2})\n",
      s.iterationSeconds() * 1e3, s.result.iterationSeconds * 1e3,
      s.driverMeasured ? llvm::formatv("{0:F3} ms", s.driverSeconds * 1e3).str()
                       : std::string("not profiled"));
  os << llvm::formatv("throughput    {0:F1} samples/s", f.samplesPerSecond);
  if (s.tokensPerSample > 0)
    os << llvm::formatv(", {0:F0} tokens/s", f.tokensPerSecond);
  os << "\n";
  // A CPU's rate reads as 0.00 in TFLOP/s: below a teraFLOP/s, GFLOP/s.
  const bool tera = f.flopsPerDevice >= 1e12;
  os << llvm::formatv("model FLOP/s  {0:F2} {1}FLOP/s per device, ",
                      f.flopsPerDevice / (tera ? 1e12 : 1e9), tera ? "T" : "G");
  if (f.mfu >= 0)
    os << llvm::formatv("MFU {0:F1}%\n", f.mfu * 100);
  else
    os << "MFU unknown (a device declares no peak rate: flops= in "
          "--cluster)\n";
  os << llvm::formatv("time shares   compute {0:F1}%, communication {1:F1}%, "
                      "idle (bubble) {2:F1}%, driver {3:F1}%\n",
                      f.computeShare * 100, f.commShare * 100,
                      f.idleShare * 100, f.driverShare * 100);
  os << llvm::formatv(
      "events        {0} distinct, {1} steps replayed by {2} rank{3} for {4} "
      "devices; read in {5:F3} s, replayed in {6:F3} s\n",
      s.events.size(), s.result.replayedSteps, s.result.ranks.size(),
      s.result.ranks.size() == 1 ? "" : "s", s.topology.devices.size(),
      s.extractSeconds, s.replaySeconds);
  if (s.profiled)
    os << llvm::formatv("profile       {0} of {1} compute events measured, {2} "
                        "from the nearest timed event of their family, "
                        "{3} from the device model\n",
                        s.measuredEvents,
                        s.measuredEvents + s.nearestEvents + s.modelledEvents,
                        s.nearestEvents, s.modelledEvents);
  if (int64_t own = ownTimesDevices(s))
    os << llvm::formatv("profile       each device's own times for {0} of {1} "
                        "devices (the profile was taken on this cluster)\n",
                        own, s.topology.devices.size());
  os << "\n"
     << llvm::formatv("{0,5} {1,7} {2,6} {3,-10} {4,11} {5,11} {6,11} {7,12} "
                      "{8,12} {9}\n",
                      "stage", "replica", "device", "model", "compute ms",
                      "comm ms", "idle ms", "peak memory", "activations",
                      "ranks alike");
  for (const sim::SimRank &r : s.result.ranks)
    os << llvm::formatv("{0,5} {1,7} {2,6} {3,-10} {4,11:F3} {5,11:F3} "
                        "{6,11:F3} {7,12} {8,12} {9}\n",
                        r.stage, r.replica, r.device, deviceName(s, r.device),
                        r.computeSeconds * 1e3, r.commSeconds * 1e3,
                        r.idleSeconds * 1e3,
                        rt::formatBytes(memoryOf(s, r.device)),
                        rt::formatBytes(activationsOf(s, r.device)), r.likeIt);
  os << "\ntime by event kind (all devices)\n";
  for (auto &[kind, seconds] : f.byKind)
    if (seconds > 0)
      os << llvm::formatv("  {0,-32} {1,5:F1}%  {2:F3} ms\n", kind,
                          f.busySeconds > 0 ? 100 * seconds / f.busySeconds : 0,
                          seconds * 1e3);
  return out;
}

std::string simulationJson(const Simulation &s, const PlannedModel &plan) {
  Figures f = figuresOf(s);
  llvm::json::Array ranks;
  for (const sim::SimRank &r : s.result.ranks)
    ranks.push_back(
        llvm::json::Object{{"stage", r.stage},
                           {"replica", r.replica},
                           {"device", r.device},
                           {"model", deviceName(s, r.device)},
                           {"ranks_alike", r.likeIt},
                           {"compute_s", r.computeSeconds},
                           {"comm_s", r.commSeconds},
                           {"idle_s", r.idleSeconds},
                           {"peak_memory_bytes", memoryOf(s, r.device)},
                           {"activation_bytes", activationsOf(s, r.device)}});
  llvm::json::Object kinds;
  for (auto &[kind, seconds] : f.byKind)
    kinds[kind] = seconds;
  llvm::json::Object root{
      {"version", 1},
      {"model", plan.model},
      {"devices", plan.devices},
      {"stages", plan.stages},
      {"replicas", plan.replicas},
      {"schedule", plan.schedule},
      {"chunks", plan.chunks},
      {"micro_batches", plan.microBatches},
      {"global_batch", plan.globalBatch},
      {"iteration_s", s.iterationSeconds()},
      {"ranks_s", s.result.iterationSeconds},
      {"driver_s", s.driverSeconds},
      {"driver_profiled", s.driverMeasured},
      {"samples_per_s", f.samplesPerSecond},
      {"tokens_per_s", f.tokensPerSecond},
      {"model_flops_per_iteration", s.modelFlops},
      {"flops_per_device", f.flopsPerDevice},
      {"mfu",
       f.mfu >= 0 ? llvm::json::Value(f.mfu) : llvm::json::Value(nullptr)},
      {"compute_fraction", f.computeShare},
      {"comm_fraction", f.commShare},
      {"idle_fraction", f.idleShare},
      {"driver_fraction", f.driverShare},
      {"bubble_fraction", s.result.bubbleFraction},
      {"distinct_events", static_cast<int64_t>(s.events.size())},
      {"replayed_steps", s.result.replayedSteps},
      {"replayed_ranks", static_cast<int64_t>(s.result.ranks.size())},
      {"own_times_devices", ownTimesDevices(s)},
      {"profiled_events", s.profiled ? llvm::json::Value(llvm::json::Object{
                                           {"measured", s.measuredEvents},
                                           {"nearest", s.nearestEvents},
                                           {"model", s.modelledEvents}})
                                     : llvm::json::Value(nullptr)},
      {"extract_s", s.extractSeconds},
      {"replay_s", s.replaySeconds},
      {"ranks", std::move(ranks)},
      {"seconds_by_kind", std::move(kinds)}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
  return out;
}

std::string simulationTrace(const Simulation &s) {
  rt::Profiler trace;
  trace.setOrigin(0);
  for (size_t i = 0; i < s.result.ranks.size(); ++i) {
    const sim::SimRank &r = s.result.ranks[i];
    std::string who =
        "device " + std::to_string(r.device) + " (stage " +
        std::to_string(r.stage) + ", replica " + std::to_string(r.replica) +
        (r.likeIt > 1 ? ", and " + std::to_string(r.likeIt - 1) + " alike"
                      : "") +
        ")";
    int rank = static_cast<int>(i);
    trace.nameRank(rank, who);
    trace.nameTrack(2 * rank, who + " compute");
    trace.nameTrack(2 * rank + 1, who + " communication");
  }
  for (const sim::Interval &iv : s.result.intervals) {
    const sim::Event &e = s.events[iv.event];
    // Named as the runtime names a collective it runs aside.
    trace.record(iv.aside ? "overlapped " + e.op : e.op,
                 iv.comm ? "communication" : "compute",
                 2 * static_cast<int>(iv.rank) +
                     (iv.comm && !iv.waiting ? 1 : 0),
                 static_cast<int64_t>(iv.start * 1e9),
                 static_cast<int64_t>(iv.duration * 1e9));
  }
  return trace.chromeTraceJson();
}

std::string simulationEvents(const Simulation &s) {
  std::string out;
  llvm::raw_string_ostream os(out);
  for (size_t e = 0; e < s.events.size(); ++e) {
    const sim::EventTotal &t = s.result.perEvent[e];
    os << llvm::formatv("event {0}: {1} x{2} {3:F3} us\n", e, s.events[e].key(),
                        t.count, t.count ? t.seconds / t.count * 1e6 : 0.0);
  }
  return out;
}

} // namespace whale
