//===- Profile.h - timing a plan's events on the real devices -----*- C++ -*-===//
//
// `whale profile`: every distinct compute event of a plan (an op at its
// shapes) is compiled as a one-op program through the same lowering and JIT
// that training uses, and run on a context of each class of device the
// cluster has, a few times; the median goes into a ProfileDb. Ops that
// need a communicator (the sharded cross entropy) and the collectives are
// left to the device and link models.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PROFILE_H
#define WHALE_LIB_PROFILE_H

#include "lib/Simulate.h"
#include "sim/ProfileDb.h"

#include <functional>
#include <string>

namespace whale {

struct ProfileOptions {
  int defaultThreads = 1;
  /// Each event runs at least this long in all (and at least minRuns times).
  double secondsPerEvent = 0.05;
  int minRuns = 3;
  /// Called after each event: done, total.
  std::function<void(size_t, size_t)> progress;
};

/// Times the compute events of `plan` on `cluster`'s devices into `db`
/// (machine, commit and date filled in). False with `error` when a device
/// cannot be opened or an event cannot be compiled.
bool profilePlan(const PlannedModel &plan, const Cluster &cluster,
                 const ProfileOptions &options, sim::ProfileDb &db,
                 std::string &error);

} // namespace whale

#endif
