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
#include <cstdio>

namespace {

double medianRate(const std::vector<double> &rates) {
  std::vector<double> r = rates;
  std::sort(r.begin(), r.end());
  return r.empty() ? 0 : r[r.size() / 2];
}

TEST(BalancedShares, ABalancedPlanOverAFullAndAQuarterShareBeatsTheEvenOne) {
  std::string why;
  if (!whale::rt::CpuShare::open(0.25, 1, why))
    GTEST_SKIP() << "the kernel's CPU controller cannot be used here: " << why;
  std::string error;
  const double full = whale::probeGemmFlops("probe", 1, 512, 0.3, error);
  ASSERT_GT(full, 0) << error;
  const double quarter = whale::probeGemmFlops("probe@share=0.25", 1, 512, 1.0,
                                               error, /*sustained=*/true);
  ASSERT_GT(quarter, 0) << error;
  char spec[256];
  std::snprintf(spec, sizeof spec,
                "cpu:1@threads=1,flops=%.6g,cpu:1@threads=1,share=0.25,"
                "flops=%.6g",
                full, quarter);

  whale::InterpreterOptions options;
  options.defines["BATCH"] = "1536";
  whale::Interpreter interp(options);
  ASSERT_TRUE(
      interp.loadFile(std::string(WHALE_SOURCE_DIR) + "/bench/hetero_mlp.whl"))
      << interp.renderDiagnostics();
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

} // namespace
