//===- BalancedSharesTest.cpp - balancing devices the kernel slows --------===//
//
// Issue 88's check on a short run: two one-thread devices, one under a
// quarter of its core's time (cpu:1@share=0.25, the kernel's CPU
// controller), probed under their shares as `whale devices --probe` probes
// them; the balanced plan gives the quarter device a quarter of the rows
// and beats the even plan, which waits on it every step. Skipped, with the
// reason, where the controller cannot be used.
//
//===----------------------------------------------------------------------===//

#include "test/unit/ShareProbe.h"
#include "whale/Train.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace {

/// bench/hetero_mlp.whl at a global batch of 1,536.
whale::InterpreterOptions heteroMlpOptions() {
  whale::InterpreterOptions options;
  options.defines["BATCH"] = "1536";
  return options;
}
bool loadHeteroMlp(whale::Interpreter &interp) {
  return interp.loadFile(std::string(WHALE_SOURCE_DIR) +
                         "/bench/hetero_mlp.whl");
}

double medianRate(const std::vector<double> &rates) {
  std::vector<double> r = rates;
  std::sort(r.begin(), r.end());
  return r.empty() ? 0 : r[r.size() / 2];
}

TEST(BalancedShares, ABalancedPlanOverAFullAndAQuarterShareBeatsTheEvenOne) {
  const whale::testing::ShareRates r = whale::testing::probeFullAndQuarter();
  if (!r.skip.empty())
    GTEST_SKIP() << r.skip;
  ASSERT_GT(r.full, 0) << r.error;
  ASSERT_GT(r.quarter, 0) << r.error;
  const double full = r.full, quarter = r.quarter;
  char spec[256];
  std::snprintf(spec, sizeof spec,
                "cpu:1@threads=1,flops=%.6g,cpu:1@threads=1,share=0.25,"
                "flops=%.6g",
                full, quarter);

  whale::Interpreter interp(heteroMlpOptions());
  ASSERT_TRUE(loadHeteroMlp(interp)) << interp.renderDiagnostics();
  auto rate = [&](bool even, std::vector<int64_t> &rows) {
    whale::TrainOptions train;
    train.cluster = spec;
    train.steps = 8;
    train.evenPlan = even;
    std::vector<double> rates;
    train.onStep = [&](const whale::StepReport &r) {
      if (r.step > 2) // after the warm-up
        rates.push_back(r.samplesPerSecond);
    };
    whale::TrainResult result = whale::train(interp, train);
    EXPECT_TRUE(result.ok) << result.error;
    rows = result.localBatches;
    return medianRate(rates);
  };
  std::vector<int64_t> balancedRows, evenRows;
  const double balanced = rate(false, balancedRows);
  const double even = rate(true, evenRows);
  ASSERT_EQ(balancedRows.size(), 2u);
  EXPECT_EQ(evenRows, (std::vector<int64_t>{768, 768}));
  // The quarter device's share follows its probed rate (about a fifth).
  EXPECT_LT(balancedRows[1] * 3, balancedRows[0])
      << balancedRows[0] << " / " << balancedRows[1];
  // The even plan waits on the quarter device each step (0.25 x 2 = 0.5
  // of a full device's rate); balanced, the pair approaches 1.25: 2.5x at
  // best, 2.2x measured here (bench/balance_hetero.py). 1.3x leaves room
  // for another test taking part of the full device's core.
  EXPECT_GT(balanced, 1.3 * even)
      << "balanced " << balanced << " samples/s, even " << even << "; rows "
      << balancedRows[0] << " / " << balancedRows[1] << ", probed "
      << full / 1e9 << " and " << quarter / 1e9 << " GFLOP/s";
}

/// The group of this process whose quota is `quota` microseconds a period
/// (a device's, as CpuShare made it); "" where none is.
std::string groupWithQuota(long long quota) {
  const std::string home = whale::rt::CpuShare::home();
  const std::string prefix = "whale-" + std::to_string(::getpid()) + "-";
  std::error_code ec;
  for (const auto &e : std::filesystem::directory_iterator(home, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) != 0)
      continue;
    std::ifstream in(e.path() / "cpu.cfs_quota_us");
    long long q = 0;
    if (in >> q && q == quota)
      return e.path().string();
  }
  return "";
}

// The elastic path (issue 88): a device's share rewritten under a running
// job (its cgroup's quota, as an administrator or a co-tenant's scheduler
// would) is noticed at the next step boundary; the device is probed anew
// under its new quota and the job rebalances through the elastic change,
// in memory, without losing a step: the same losses as a run whose
// devices never changed (the global batch and its order are the same; the
// rows only move between the replicas), within the contract's 1e-4.
TEST(BalancedShares, AShareRewrittenMidRunRebalancesWithoutLosingAStep) {
  std::string why;
  if (!whale::rt::CpuShare::open(0.5, 1, why))
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  whale::Interpreter interp(heteroMlpOptions());
  ASSERT_TRUE(loadHeteroMlp(interp)) << interp.renderDiagnostics();
  // Declared rates 2:1: the run re-probes only the device whose share
  // changed. The whole device declares the memory a core of this kind
  // streams (23-24 GB/s probed on the 2-core EPYC VM), as the probe gives
  // the other: with the model's 8 GB/s a thread its GEMMs' copies would
  // be priced at three times theirs (perfmodel/DeviceModel.h,
  // cpuPackingUse), and the two devices described unlike.
  const char *spec = "cpu:1@threads=1,flops=1e11,membw=24e9,cpu:1@threads=1,"
                     "share=0.5,flops=5e10";
  whale::TrainOptions train;
  train.cluster = spec;
  train.steps = 6;
  std::string group, rewritten;
  train.onStep = [&](const whale::StepReport &r) {
    if (r.step != 2)
      return;
    // Half a core's 100 ms period for the one-thread device: a quarter.
    group = groupWithQuota(50000);
    if (group.empty())
      return;
    std::ofstream quota(group + "/cpu.cfs_quota_us");
    quota << 25000;
    quota.flush();
    rewritten = quota ? "yes" : "";
  };
  const whale::TrainResult changed = whale::train(interp, train);
  ASSERT_TRUE(changed.ok) << changed.error;
  ASSERT_FALSE(group.empty()) << "no group of this process has the quota of "
                                 "half a core";
  ASSERT_EQ(rewritten, "yes") << "cannot rewrite " << group;
  ASSERT_EQ(changed.reshards.size(), 1u);
  EXPECT_EQ(changed.reshards[0].afterStep, 2);
  EXPECT_NE(changed.reshards[0].why.find(
                "device 1's share of its cores went from 0.5 to 0.25"),
            std::string::npos)
      << changed.reshards[0].why;
  // Balanced 2:1 before (1024 / 512 rows); after, by its probed rate at a
  // quarter of the core, well under a third of the rows.
  ASSERT_EQ(changed.localBatches.size(), 2u);
  EXPECT_LT(changed.localBatches[1] * 3, changed.localBatches[0])
      << changed.localBatches[0] << " / " << changed.localBatches[1];

  whale::TrainOptions still = train;
  still.onStep = nullptr;
  const whale::TrainResult unchanged = whale::train(interp, still);
  ASSERT_TRUE(unchanged.ok) << unchanged.error;
  EXPECT_TRUE(unchanged.reshards.empty());
  ASSERT_EQ(changed.losses.size(), 6u);
  ASSERT_EQ(unchanged.losses.size(), 6u);
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(changed.losses[i], unchanged.losses[i],
                1e-4 * std::fabs(unchanged.losses[i]))
        << "step " << i + 1;
}

} // namespace
