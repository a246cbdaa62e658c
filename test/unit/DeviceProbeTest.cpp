//===- DeviceProbeTest.cpp - a device's rate as the probe measures it -----===//

#include "test/unit/ShareProbe.h"

#include "lib/compile/Cluster.h"
#include "perfmodel/DeviceModel.h"

#include <gtest/gtest.h>

#include <sstream>

namespace {

// A device under a quarter of a core's time is measured under its quota
// (issue 88 item 2): its sustained rate, not the best of GEMMs that each
// fit in one period's quota and run at full speed.
TEST(DeviceProbe, AShareIsMeasuredUnderItsQuota) {
  const whale::testing::ShareRates r = whale::testing::probeFullAndQuarter();
  if (!r.skip.empty())
    GTEST_SKIP() << r.skip;
  ASSERT_GT(r.full, 0) << r.error;
  ASSERT_GT(r.quarter, 0) << r.error;
  // A quarter, give or take a period's overrun; at most 0.6 of the full
  // rate even where another test took half a core from the full probe.
  EXPECT_LT(r.quarter, 0.6 * r.full)
      << r.quarter / 1e9 << " against " << r.full / 1e9 << " GFLOP/s";
  EXPECT_GT(r.quarter, 0.05 * r.full);
  // The part of its time a quarter share runs, as the kernel counts it
  // over whole periods of the quota: never over a quarter, however the
  // runs fell in the periods, give or take the window's ends (where
  // another process held the thread just after the kernel let it run
  // again, the correction to whole periods counts that time as run: a few
  // ms in a second's window).
  std::string error;
  const double part =
      whale::probeShareFraction("probe@share=0.25", 1, 512, 1.0, error);
  ASSERT_GT(part, 0) << error;
  EXPECT_LE(part, 0.27);
  // Its memory traffic too, as `whale devices --probe` prices it: bytes
  // move only while the quota lets it run.
  whale::Cluster c;
  ASSERT_TRUE(whale::parseCluster("cpu:1@threads=1,cpu:1@threads=1,share=0.25",
                                  c, error))
      << error;
  std::ostringstream log;
  ASSERT_TRUE(whale::probeCluster(c, 1, log, error)) << error;
  const double fullBytes = c.devices[0].memoryBandwidth,
               quarterBytes = c.devices[1].memoryBandwidth;
  ASSERT_GT(quarterBytes, 0) << log.str();
  EXPECT_LT(quarterBytes, 0.6 * fullBytes)
      << quarterBytes / 1e9 << " against " << fullBytes / 1e9 << " GB/s";
}

// The rate a probe gives the planner is the one at which the cost model
// prices the probe's own GEMM at the time it took: on a one-thread CPU
// device at 100 GFLOP/s and 25 GB/s of memory the model takes a 1,024-cube
// GEMM at 1 / (1 + 4 r / 25e9 x 3 / 1024) of its rate r (its BLAS's
// copies, perf::cpuPackingUse), so r is the measured rate over that, and
// pricing the GEMM at r gives back the measured time.
TEST(DeviceProbe, TheModelsRatePricesTheProbesGemmAtItsMeasuredTime) {
  whale::perf::DeviceDescription d;
  d.threads = 1;
  d.memoryBandwidth = 25e9;
  const double measured = 100e9;
  const double rate = whale::modelRateOfProbe(measured, d, 1024);
  // r = measured (1 + 4 r s / B), s = 3 / 1024: r = measured / (1 - 4
  // measured s / B).
  const double s = 3.0 / 1024;
  EXPECT_NEAR(rate, measured / (1 - 4 * measured * s / 25e9), 1e-6 * rate);
  EXPECT_GT(rate, measured * 1.04);
  d.flops = rate;
  whale::perf::OpCost gemm;
  gemm.matmul = true;
  gemm.m = gemm.n = gemm.k = 1024;
  gemm.flops = 2.0 * 1024 * 1024 * 1024;
  const whale::perf::DeviceModel model = whale::perf::deviceModelOf(d);
  EXPECT_NEAR(whale::perf::opSeconds(gemm, model) - model.launchSeconds,
              gemm.flops / measured, 1e-9 * gemm.flops / measured);
  // Under a share too: its rate and its bandwidth are already the share's.
  d.cpuShare = 0.25;
  d.memoryBandwidth = 25e9 / 4;
  EXPECT_NEAR(whale::modelRateOfProbe(measured / 4, d, 1024), rate / 4,
              1e-9 * rate);
}

} // namespace
