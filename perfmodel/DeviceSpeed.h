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
  int sms = 0;        ///< a GPU's SMs it may use (a share); 0: all
  /// A CPU device's share of each of its threads' cores, enforced by the
  /// kernel (cpu:N@share=S); 1: whole.
  double cpuShare = 1;
  /// Bytes a second its memory traffic moves, measured (`whale devices
  /// --probe`: a streaming add, under its share) or declared; 0: the
  /// model's estimate (cpuModel's per core, a data sheet's).
  double memoryBandwidth = 0;
  /// Without sms: the contexts side by side on its GPU, itself included;
  /// each is priced as that fraction of the GPU (its flops, if given, is
  /// already its own).
  int contexts = 1;
};

/// Whether two devices compute and hold alike: the same kind, data sheet,
/// rate, threads, memory and share of their GPU. The one answer to "are
/// these devices alike" (the planner's device models, the search's even
/// layouts, the auto_parallel cut's bound).
bool sameDevice(const DeviceDescription &a, const DeviceDescription &b);

/// The SMs of a GPU known by rate alone: an H100's, whose rate the nominal
/// GPU rate is.
constexpr int kNominalGpuSms = 132;

/// The fraction of its GPU a device may use: its SMs over the GPU's (the
/// data sheet's, else kNominalGpuSms), at most 1; one over the contexts
/// that share a GPU without shares of its SMs (they run side by side, and
/// while all are busy each has about that much of it: an estimate, low
/// where one waits and another has the GPU to itself); 1 for a whole GPU
/// or a CPU device.
double smShare(const DeviceDescription &d);

/// The rate a device is balanced by: declared or measured, else nominal
/// (a GPU's times its SM share, or its threads times a core's).
double rateOf(const DeviceDescription &d);

/// Whether rateOf gives a nominal rate: none declared, measured or taken
/// from a data sheet (the cluster parser turns a sheet into a rate).
bool rateIsNominal(const DeviceDescription &d);

/// The model that prices a device's ops:
/// - a named GPU: its data sheet, with the memory the cluster declares;
/// - a GPU known only by its rate: an H100 scaled to that rate;
/// - a share of a GPU (sms, or one of its contexts): its arithmetic and
///   memory bandwidth scaled by the share, and its share of the SMs for
///   its GEMMs' waves;
/// - a CPU device: cpuModel at its rate and threads.
DeviceModel deviceModelOf(const DeviceDescription &d);

} // namespace whale::perf

#endif
