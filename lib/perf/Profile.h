//===- Profile.h - timing a plan's events on the real devices -----*- C++
//-*-===//
//
// `whale profile` times the compute events of a plan (ops at their shapes)
// in two ways, through the same lowering and JIT that training uses:
//
//  - in context: the plan trains a few steps with a trace whose every op
//    names its place in its rank program; each event's time is the mean
//    of its ops' times there (after the first step), with the caches, the
//    other ranks and the data as a run has them;
//  - alone: each event compiled as a one-op program and run on a context of
//    each class of device a few times, for the events a traced run does
//    not time (it leaves them to the device model otherwise).
//
// In context, a collective is timed too, from its last member's arrival to
// its end; collectives a run does not time are left to the link models.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PERF_PROFILE_H
#define WHALE_LIB_PERF_PROFILE_H

#include "lib/perf/Simulate.h"
#include "sim/ProfileDb.h"

#include <functional>
#include <string>

namespace whale {

struct ProfileOptions {
  int defaultThreads = 1;
  /// Steps of the traced run (0: time events alone only); the first is
  /// left out, and of the rest the middle half by length is kept.
  int64_t contextSteps = 12;
  /// Where the traced run's Chrome trace is kept ("": a temporary file).
  std::string tracePath;
  /// The traced run traces only every n-th step and runs contextSteps * n
  /// steps; the steps between run untraced (TrainOptions::traceEvery), so
  /// its trace also tells what tracing cost its steps.
  int64_t traceEvery = 1;
  /// A profiling run's trace made elsewhere (whale-exec --profile-trace on
  /// the plan compiled with trace sites): the times come from it alone,
  /// nothing runs here, and the events it does not time are not in the
  /// database (the simulator prices them from their nearest timed ones,
  /// else by the device model).
  std::string fromTrace;
  /// The run's --even and --threads.
  bool even = false;
  int threads = 0;
  /// Each event runs at least this long in all (and at least minRuns times).
  double secondsPerEvent = 0.05;
  int minRuns = 3;
  /// Called after each event: done, total.
  std::function<void(size_t, size_t)> progress;
};

/// Times the compute events of `plan` (the loaded script `interp` planned
/// over `cluster`, given as `clusterSpec`) on the cluster's devices into
/// `db` (machine, commit and date filled in). False with `error` when a
/// device cannot be opened, an event cannot be compiled or the run fails.
bool profilePlan(Interpreter &interp, const std::string &clusterSpec,
                 const PlannedModel &plan, const Cluster &cluster,
                 const ProfileOptions &options, sim::ProfileDb &db,
                 std::string &error);

} // namespace whale

#endif
