//===- DeviceProbe.h - measuring a device's compute rate ----------*- C++
//-*-===//
//
// `whale devices --probe` times a square f32 GEMM on a device (a CPU device
// of the given threads, or a GPU), through the same runtime the rank
// programs call, and reports the best of several runs in FLOP/s; the
// rate the planner prices the device at is the one at which the cost model
// predicts that GEMM in the time it took (modelRateOfProbe).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_DEVICEPROBE_H
#define WHALE_LIB_COMPILE_DEVICEPROBE_H

#include "perfmodel/DeviceSpeed.h"

#include <cstdint>
#include <ostream>
#include <string>

namespace whale {

/// FLOP/s of an n x n x n GEMM on `device` ("cpu:N" with `threads`, or
/// "cuda:N"), the best of runs over about `seconds`; 0 with `error` set on
/// failure. `sustained`: the work of every run after the first over their
/// whole time instead, for a device under a quota of its cores' time
/// (`@share=S`), whose runs that fit in a period's quota run at full speed
/// (`seconds` should then span many of the kernel's 100 ms periods).
double probeGemmFlops(const std::string &device, int threads, int64_t n,
                      double seconds, std::string &error,
                      bool sustained = false);

/// Bytes a second `device` moves through its memory, the best of runs as
/// the probe times a GEMM: an add of two f32 tensors of `bytes` each into
/// a third, the traffic of the elementwise ops and optimizer updates the
/// model prices by bandwidth. Tensors larger than the caches measure
/// memory, not cache. (A device under a share: probeCluster takes this
/// times the share.)
double probeMemoryBandwidth(const std::string &device, int threads,
                            int64_t bytes, double seconds, std::string &error);

/// The rate the cost model prices `d` at (its peak, before the GEMM
/// efficiency perf::gemmEfficiency takes off a product of a shape) such
/// that it predicts the probe's n x n x n GEMM in the time it took:
/// `measured` over the efficiency the model gives that GEMM on `d`. The
/// probe's rate as it stands would be discounted twice (a 1,024-cube
/// GEMM on a one-thread CPU device: 0.94 of it again), and every plan
/// priced about 6% slow.
double modelRateOfProbe(double measured, const perf::DeviceDescription &d,
                        int64_t n);

struct Cluster;

/// Measures every device of `cluster` that declares no rate (`flops`): its
/// GEMM rate, as the cost model's rate (modelRateOfProbe), and its memory
/// bandwidth where none is declared, each distinct device once (CPU
/// devices of one thread count and share alike; each GPU on its own), a
/// device under a share under its quota. `shared`: the threads a device
/// that names none runs with (sharedThreads). What it probes goes to
/// `log`. False with `error` set when a probe fails.
bool probeCluster(Cluster &cluster, int shared, std::ostream &log,
                  std::string &error);

} // namespace whale

#endif
