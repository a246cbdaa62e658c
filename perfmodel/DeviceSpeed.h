//===- DeviceSpeed.h - how fast a cluster's device is, decided once -*- C++
//-*-===//
//
// A device of a cluster is priced from what the cluster says of it: a data
// sheet's name, a declared or measured rate, its threads and memory. This
// is the one place that turns that into a rate and a device model, for the
// planner's balance, the search and the simulator alike.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_DEVICESPEED_H
#define WHALE_PERFMODEL_DEVICESPEED_H

#include "perfmodel/DeviceModel.h"

#include <cstdint>
#include <string>

namespace whale::perf {

/// FLOP/s a CPU core is assumed to reach when a device declares no rate:
/// only the ratios between devices steer the balance, and `whale devices
/// --probe` measures the real figure.
constexpr double kNominalCoreFlops = 5e10;
/// The same for a GPU: an H100's dense fp32 rate (67 TFLOP/s on its data
/// sheet) discounted to what whale's kernels are assumed to reach.
constexpr double kNominalGpuFlops = 4e13;

/// A device as a cluster describes it.
struct DeviceDescription {
  bool gpu = false;   ///< a cuda device
  std::string model;  ///< a data sheet's name (knownGpuModels), or empty
  double flops = 0;   ///< declared or measured FLOP/s; 0: none
  int threads = 1;    ///< the threads it runs with
  int64_t memory = 0; ///< bytes; 0: no limit
};

/// The rate a device is balanced by: declared or measured, else nominal
/// (a GPU's, or its threads times a core's).
double rateOf(const DeviceDescription &d);

/// The model that prices a device's ops:
/// - a named GPU: its data sheet, with the memory the cluster declares;
/// - a GPU known only by its rate: an H100 scaled to that rate;
/// - a CPU device: cpuModel at its rate and threads.
DeviceModel deviceModelOf(const DeviceDescription &d);

} // namespace whale::perf

#endif
