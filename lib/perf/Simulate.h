//===- Simulate.h - a planned model through the simulator ---------*- C++
//-*-===//
//
// What `whale sim` does between planning and printing: the cluster as a
// topology of device models, the rank programs of every shape of rank as
// event sequences, one replay, and the figures derived from it (samples and
// tokens per second, model FLOP/s and MFU, per-rank time shares, peak
// memory, time by event kind), as text, JSON and a Chrome trace.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PERF_SIMULATE_H
#define WHALE_LIB_PERF_SIMULATE_H

#include "lib/compile/Planner.h"
#include "sim/ProfileDb.h"
#include "sim/Simulator.h"

#include <memory>
#include <string>
#include <vector>

namespace whale {

struct Cluster;

struct SimulateOptions {
  bool trace = false;     ///< keep the timeline (for --trace)
  int defaultThreads = 1; ///< threads of a CPU device that declares none
  /// Measured times (whale profile): its events' and the driver's.
  const sim::ProfileDb *profile = nullptr;
};

/// The profile's name for the driver's work in one step of `plan` (its
/// data, the inputs it hands the ranks, their threads): it depends on the
/// model's inputs, the global batch and the number of ranks.
std::string driverEventKey(const PlannedModel &plan);
/// The class the driver's time is kept under in a profile.
inline const char *kDriverDevice = "host";

struct Simulation {
  sim::EventTable events;
  std::vector<std::unique_ptr<sim::ProgramSet>> programSets;
  sim::PlanShape shape;
  sim::Topology topology;
  sim::SimResult result;
  /// Seconds spent reading the rank programs and replaying them.
  double extractSeconds = 0, replaySeconds = 0;
  int64_t globalBatch = 0;
  int64_t tokensPerSample = 0; ///< a token model's sequence length, else 0
  /// The driver's work per step, as profiled (0 without a profile).
  double driverSeconds = 0;
  bool driverMeasured = false;
  /// The replayed rank programs and the driver's work.
  double iterationSeconds() const {
    return result.iterationSeconds + driverSeconds;
  }
  double modelFlops = 0; ///< FLOPs of one iteration over all devices
  double peakFlops = 0;  ///< the devices' summed matrix peak
  /// Every device's peak is known: a GPU model's data sheet or a rate the
  /// cluster declares. A CPU that declares none is given a nominal rate
  /// (enough for the balancer's ratios), against which an MFU means
  /// nothing, so none is reported.
  bool peakKnown = true;
  /// The MFU, or a negative number where a device's peak is not known.
  double mfu() const {
    const double t = iterationSeconds();
    return peakKnown && peakFlops > 0 && t > 0 ? modelFlops / t / peakFlops
                                               : -1;
  }
  std::vector<int64_t> deviceMemory; ///< peak bytes per device (the plan's)
  std::vector<int64_t> deviceActivations; ///< of which activations
  /// With a profile: the compute events it priced on every device class
  /// (measured), those some class priced from the nearest timed event of
  /// their family, and those some class left to the device model.
  bool profiled = false;
  int64_t measuredEvents = 0, nearestEvents = 0, modelledEvents = 0;
};

/// The devices of `cluster` as the simulator prices them: a GPU by its
/// data sheet when it names a model, a CPU (or a GPU without a model) by
/// its rate and threads.
sim::Topology topologyOf(const Cluster &cluster, int defaultThreads);

/// Simulates one iteration of `plan` on `cluster`.
bool simulatePlan(const PlannedModel &plan, const Cluster &cluster,
                  const SimulateOptions &options, Simulation &out,
                  std::string &error);

std::string simulationText(const Simulation &sim, const PlannedModel &plan);
/// The same figures as JSON (docs/simulation.md lists the keys).
std::string simulationJson(const Simulation &sim, const PlannedModel &plan);
/// The replayed timeline: one process per replayed rank, compute and
/// communication threads, as `whale run --trace` writes a run's.
std::string simulationTrace(const Simulation &sim);
/// The distinct events with their instance counts and times, one a line.
std::string simulationEvents(const Simulation &sim);

} // namespace whale

#endif
