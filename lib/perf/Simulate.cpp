//===- Simulate.cpp - a planned model through the simulator ---------------===//

#include "lib/perf/Simulate.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Cluster.h"
#include "sim/Extract.h"
#include "support/Stopwatch.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/raw_ostream.h"

#include "llvm/Support/FormatVariadic.h"

#include <chrono>
#include <cmath>
#include <set>

namespace whale {
namespace {

/// A token model's sequence length: its first input is integer [B, T].
int64_t tokensPerSample(const PlannedModel &plan) {
  auto fn = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model);
  if (!fn || fn.getNumArguments() == 0)
    return 0;
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(fn.getArgumentTypes()[0]);
  if (!t || t.getRank() != 2 || !t.getElementType().isInteger())
    return 0;
  return t.getShape()[1];
}

/// How the profile priced each compute event: by the worst of the ways it
/// did on the cluster's classes of device.
void countPricing(const sim::ProfileDb &profile, Simulation &out) {
  using Pricing = sim::ProfileDb::Pricing;
  std::vector<const perf::DeviceModel *> classes;
  std::set<std::string> seen;
  for (const perf::DeviceModel &d : out.topology.devices)
    if (seen.insert(sim::ProfileDb::deviceKey(d) + "\n" + d.ownTimes).second)
      classes.push_back(&d);
  out.profiled = true;
  for (const sim::Event &e : out.events.all()) {
    if (e.kind != sim::StepKind::Compute)
      continue;
    Pricing worst = Pricing::Measured;
    for (const perf::DeviceModel *d : classes)
      worst = std::max(worst, profile.pricing(e, *d));
    ++(worst == Pricing::Measured  ? out.measuredEvents
       : worst == Pricing::Nearest ? out.nearestEvents
                                   : out.modelledEvents);
  }
}

} // namespace

std::string driverEventKey(const PlannedModel &plan) {
  std::string key = "whale.driver_step " + plan.model;
  auto fn = plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model);
  if (fn) {
    llvm::raw_string_ostream os(key);
    os << " ";
    llvm::interleaveComma(fn.getArgumentTypes(), os);
  }
  return key + ", global batch " + std::to_string(plan.globalBatch) +
         " on " + std::to_string(plan.devices) + " ranks";
}

sim::Topology topologyOf(const Cluster &cluster, int defaultThreads) {
  sim::Topology t;
  for (const DeviceSpec &d : cluster.devices) {
    t.devices.push_back(perf::deviceModelOf(describe(d, defaultThreads)));
    t.node.push_back(d.node);
  }
  t.intraNode = {cluster.intraNode.bandwidth, cluster.intraNode.latency};
  t.interNode = {cluster.interNode.bandwidth, cluster.interNode.latency};
  return t;
}

bool simulatePlan(const PlannedModel &plan, const Cluster &cluster,
                  const SimulateOptions &options, Simulation &out,
                  std::string &error) {
  auto start = std::chrono::steady_clock::now();
  out.topology = topologyOf(cluster, options.defaultThreads);
  if (options.profile) {
    // A profile of this very cluster gives each device its own times.
    const int64_t n = static_cast<int64_t>(out.topology.devices.size());
    for (int64_t d = 0; d < n; ++d)
      out.topology.devices[d].ownTimes =
          options.profile->ownTimesOf(out.topology, d);
  }
  out.shape.stages = plan.stages;
  out.shape.replicas = plan.replicas;
  out.shape.grid = plan.grid;
  // The programs of each shape of rank, read once each.
  std::vector<mlir::ModuleOp> modules;
  for (int64_t r = 0; r < plan.replicas; ++r) {
    mlir::ModuleOp m = plan.ranksOf(r);
    size_t at = std::find(modules.begin(), modules.end(), m) - modules.begin();
    if (at == modules.size()) {
      modules.push_back(m);
      auto set = std::make_unique<sim::ProgramSet>();
      if (!sim::extractPrograms(m, plan.model, plan.stages, out.events, *set,
                                error))
        return false;
      out.programSets.push_back(std::move(set));
    }
    out.shape.programs.push_back(out.programSets[at].get());
  }
  out.extractSeconds = secondsSince(start);

  start = std::chrono::steady_clock::now();
  sim::SimOptions simOptions;
  simOptions.trace = options.trace;
  if (options.profile) {
    simOptions.measured = options.profile->measuredTime();
    simOptions.measuredCollective = options.profile->measuredCollective();
    if (std::optional<double> d =
            options.profile->lookup(kDriverDevice, driverEventKey(plan))) {
      out.driverSeconds = *d;
      out.driverMeasured = true;
    }
  }
  if (!sim::simulate(out.events, out.shape, out.topology, simOptions,
                     out.result, error))
    return false;
  out.replaySeconds = secondsSince(start);

  out.globalBatch = plan.globalBatch;
  out.tokensPerSample = tokensPerSample(plan);
  bool bf16 = false;
  for (size_t e = 0; e < out.events.size(); ++e) {
    const sim::Event &ev = out.events[e];
    if (ev.kind == sim::StepKind::Compute) {
      out.modelFlops += ev.cost.flops * out.result.perEvent[e].count;
      bf16 = bf16 || ev.cost.bf16;
    }
  }
  for (const perf::DeviceModel &d : out.topology.devices)
    out.peakFlops += bf16 ? d.matmulFlopsBf16 : d.matmulFlops;
  out.peakKnown = std::all_of(
      cluster.devices.begin(), cluster.devices.end(), [](const DeviceSpec &d) {
        return d.flops > 0 || (!d.model.empty() && perf::findGpuModel(d.model));
      });
  out.deviceMemory = plan.deviceMemory;
  out.deviceActivations = plan.deviceActivations;
  if (options.profile)
    countPricing(*options.profile, out);
  // Rates and times are each in range, but their products may not be (a
  // rate of 1e-300 FLOP/s): a prediction that is not a positive time under
  // a billion seconds (30 years; its figures in ms and µs stay finite) is
  // an error, never "INF" or "nan" in a report or its JSON.
  constexpr double kLongestStep = 1e9;
  const double seconds = out.iterationSeconds();
  if (!(seconds > 0 && seconds <= kLongestStep) ||
      !std::isfinite(out.modelFlops) || !std::isfinite(out.peakFlops)) {
    error = llvm::formatv("the predicted step time is {0:e} s, not a time "
                          "from 0 to 1e9 s: a device's rate, a link or a "
                          "profiled time is out of range",
                          seconds)
                .str();
    return false;
  }
  return true;
}

} // namespace whale
