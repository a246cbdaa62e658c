//===- DeviceProbe.h - measuring a device's compute rate ----------*- C++
//-*-===//
//
// `whale devices --probe` times a square f32 GEMM on a device (a CPU device
// of the given threads, or a GPU), through the same runtime the rank
// programs call, and reports its rate in FLOP/s (a GPU's best run, a CPU
// device's sustained rate: ProbeMeasure; a device under a share of its
// cores' time, its full rate times the part of the time the kernel lets
// it run); the rate the planner prices the device at is the one at which
// the cost model predicts that GEMM in the time it took
// (modelRateOfProbe).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_DEVICEPROBE_H
#define WHALE_LIB_COMPILE_DEVICEPROBE_H

#include "perfmodel/DeviceSpeed.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace whale {

/// How a probe turns its timed runs (after one warm-up run) into a rate.
enum class ProbeMeasure {
  /// The best run: what a GPU reaches once its queue and clocks are warm.
  Best,
  /// All runs' work over their time: what a CPU device sustains (its best
  /// GEMM was 3-5% above that here, which a training step does not see).
  Mean,
};

/// How long a share is probed: twenty of the kernel's periods.
constexpr double kShareProbeSeconds = 2.0;

/// FLOP/s of an n x n x n GEMM on `device` ("cpu:N" with `threads`, or
/// "cuda:N"), runs over about `seconds` taken as `measure` says; 0 with
/// `error` set on failure.
double probeGemmFlops(const std::string &device, int threads, int64_t n,
                      double seconds, std::string &error,
                      ProbeMeasure measure = ProbeMeasure::Best);

/// Bytes a second `device` moves through its memory, the best of runs as
/// the probe times a GEMM: an add of two f32 tensors of `bytes` each into
/// a third, the traffic of the elementwise ops and optimizer updates the
/// model prices by bandwidth. Tensors larger than the caches measure
/// memory, not cache. (A device under a share: probeCluster takes this
/// times the fraction probeShareFraction measures.)
double probeMemoryBandwidth(const std::string &device, int threads,
                            int64_t bytes, double seconds, std::string &error);

/// The part of its threads' time a CPU device under a share of its cores'
/// time (`device` "probe@share=S" with `threads`) runs under the kernel's
/// quota, busy with n x n x n GEMMs for about `seconds`: their running
/// time, as the kernel counts it, over whole periods of the quota. The
/// share itself where the kernel gives all of it, less where others take
/// the cores (the fraction of its full speed the device keeps). 0 with
/// `error` set on failure.
double probeShareFraction(const std::string &device, int threads, int64_t n,
                          double seconds, std::string &error);

/// The rate the cost model prices `d` at (its peak, before the GEMM
/// efficiency perf::gemmEfficiency takes off a product of a shape) such
/// that it predicts the probe's n x n x n GEMM in the time it took:
/// `measured` over the efficiency the model gives that GEMM on `d` at that
/// rate (on a CPU the efficiency depends on the rate and `d`'s memory
/// bandwidth, which the caller sets: perf::cpuPackingUse). The probe's
/// rate as it stands would be discounted twice (a 1,024-cube GEMM on a
/// one-thread CPU device at 93 GFLOP/s and 23 GB/s: 0.95 of it again),
/// and every plan priced about 5% slow.
double modelRateOfProbe(double measured, const perf::DeviceDescription &d,
                        int64_t n);

struct Cluster;

/// Measures every device of `cluster` that declares no rate (`flops`): its
/// GEMM rate, as the cost model's rate (modelRateOfProbe), and its memory
/// bandwidth where none is declared, each distinct device once (CPU
/// devices of one thread count and share alike; each GPU on its own), a
/// device under a share as the fraction of its full speed it keeps under
/// its quota (probeShareFraction). `shared`: the threads a device
/// that names none runs with (sharedThreads). What it probes goes to
/// `log`. False with `error` set when a probe fails.
bool probeCluster(Cluster &cluster, int shared, std::ostream &log,
                  std::string &error);

} // namespace whale

#endif
