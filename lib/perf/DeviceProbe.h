//===- DeviceProbe.h - measuring a device's compute rate ----------*- C++
//-*-===//
//
// `whale devices --probe` times a square f32 GEMM on a device (a CPU device
// of the given threads, or a GPU), through the same runtime the rank
// programs call, and reports the best of several runs in FLOP/s: the rate
// the balance pass divides work by.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PERF_DEVICEPROBE_H
#define WHALE_LIB_PERF_DEVICEPROBE_H

#include <cstdint>
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

} // namespace whale

#endif
