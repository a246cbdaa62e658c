//===- DeviceProbeTest.cpp - a device's rate as the probe measures it -----===//

#include "test/unit/ShareProbe.h"

#include <gtest/gtest.h>

namespace {

// A device under a quarter of a core's time is measured under its quota
// (issue 88 item 2): its sustained rate, not the best of GEMMs that each
// fit in one period's quota and run at full speed.
TEST(DeviceProbe, AShareIsMeasuredUnderItsQuota) {
  std::string why;
  if (!whale::rt::CpuShare::open(0.25, 1, why))
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  std::string error;
  const double full = whale::probeGemmFlops("probe", 1, 512, 0.3, error);
  ASSERT_GT(full, 0) << error;
  const double quarter = whale::probeGemmFlops("probe@share=0.25", 1, 512, 1.0,
                                               error, /*sustained=*/true);
  ASSERT_GT(quarter, 0) << error;
  // A quarter, give or take a period's overrun; at most 0.6 of the full
  // rate even where another test took half a core from the full probe.
  EXPECT_LT(quarter, 0.6 * full)
      << quarter / 1e9 << " against " << full / 1e9 << " GFLOP/s";
  EXPECT_GT(quarter, 0.05 * full);
}

} // namespace
