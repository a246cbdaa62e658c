//===- Simulator.h - a discrete-event replay of the rank programs -*- C++
//-*-===//
//
// Each rank runs its stage's program step by step on its own clock: a
// compute step takes its event's time; a send hands its message to the
// link and goes on; a recv waits until the message has arrived; a
// collective starts when its last member arrives and ends, for all of them,
// after the collective's time over their group. GPipe and 1F1B bubbles,
// bridges, uneven shards and uneven batches on unequal devices come out of
// the replay as they happen on the runtime, not from a formula.
//
// Ranks that would run identically are replayed once: replicas whose
// devices and programs agree at every stage form a class, and one rank per
// class and stage stands for all of them, so the cost grows with the roles
// of a plan, not its devices.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SIM_SIMULATOR_H
#define WHALE_SIM_SIMULATOR_H

#include "sim/EventProgram.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace whale::sim {

/// The machines a plan runs on: each device's model and node, and the
/// links inside and between nodes.
struct Topology {
  std::vector<DeviceModel> devices;
  std::vector<int> node; ///< per device
  Link intraNode, interNode;
};

/// A plan as the simulator needs it: the grid of stages x replicas and the
/// programs each replica runs.
struct PlanShape {
  int64_t stages = 1, replicas = 1;
  std::vector<int64_t> grid; ///< grid[s * replicas + r]: the device
  /// The programs replica r runs (its micro-batch size and shard weight).
  std::vector<const ProgramSet *> programs;
};

/// Measured seconds of an event on a device model, where a profile has
/// them (ProfileDb); nullopt falls back to the device model.
using MeasuredTime =
    std::function<std::optional<double>(const Event &, const DeviceModel &)>;
/// The same for a collective over `ranks` ranks, on the first member's
/// device.
using MeasuredCollective = std::function<std::optional<double>(
    const Event &, int64_t ranks, const DeviceModel &)>;

struct SimOptions {
  bool trace = false; ///< keep every interval for a timeline
  MeasuredTime measured;
  MeasuredCollective measuredCollective;
};

/// One replayed rank: a stage of one class of replicas.
struct SimRank {
  int64_t stage = 0, replica = 0, device = 0;
  int64_t likeIt = 1; ///< replicas of its class (ranks it stands for)
  double computeSeconds = 0, commSeconds = 0, idleSeconds = 0;
  /// Of commSeconds, the collectives the rank waits in, each from its last
  /// member's arrival: their transfers alone, whatever the timing (not the
  /// waits for a message, which the timing decides).
  double collectiveSeconds = 0;
  double endSeconds = 0;
};

/// One timed step, for the timeline.
struct Interval {
  uint32_t rank = 0, event = 0;
  bool comm = false;
  double start = 0, duration = 0;
  /// The rank waiting for a collective it started: communication, on its
  /// compute track.
  bool waiting = false;
  /// A started collective, run beside the rank's work.
  bool aside = false;
};

/// Seconds spent per event over every rank a replayed rank stands for.
struct EventTotal {
  int64_t count = 0;
  double seconds = 0;
};

struct SimResult {
  double iterationSeconds = 0;
  std::vector<SimRank> ranks;
  std::vector<EventTotal> perEvent; ///< by event index
  std::vector<Interval> intervals;  ///< with SimOptions::trace
  int64_t replayedSteps = 0;
  /// The mean over all ranks of the idle share of the iteration.
  double bubbleFraction = 0;
};

/// Replays one iteration. False, with `error`, when the programs deadlock
/// (a recv whose send never comes, a collective a member never reaches).
bool simulate(const EventTable &events, const PlanShape &plan,
              const Topology &topology, const SimOptions &options,
              SimResult &out, std::string &error);

/// Seconds of one compute event on `device` (profile first, else model).
double computeSeconds(const Event &e, const DeviceModel &device,
                      const MeasuredTime &measured);

} // namespace whale::sim

#endif
