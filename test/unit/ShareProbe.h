//===- ShareProbe.h - a full and a quarter-share device, probed ---*- C++
//-*-===//
//
// What the tests of devices slowed by the kernel (cpu:1@share=0.25) start
// from: whether the CPU controller can be used here (else the reason to
// skip), and the two one-thread devices' GEMM rates as `whale devices
// --probe` measures them (the shared one at the fraction of
// its full speed it keeps under its quota).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_SHAREPROBE_H
#define WHALE_TEST_UNIT_SHAREPROBE_H

#include "lib/compile/DeviceProbe.h"
#include "runtime/core/CpuShare.h"

#include <string>

namespace whale::testing {

struct ShareRates {
  std::string skip;  ///< why the controller cannot be used ("" where it can)
  std::string error; ///< why probing failed
  double full = 0, quarter = 0;
};

inline ShareRates probeFullAndQuarter() {
  ShareRates r;
  std::string why;
  if (!rt::CpuShare::open(0.25, 1, why)) {
    r.skip = "the kernel's CPU controller cannot be used here: " + why;
    return r;
  }
  r.full = probeGemmFlops("probe", 1, 512, 0.3, r.error, ProbeMeasure::Mean);
  if (r.full > 0)
    r.quarter = r.full * probeShareFraction("probe@share=0.25", 1, 512,
                                            kShareProbeSeconds, r.error);
  return r;
}

} // namespace whale::testing

#endif
