//===- DropoutTest.cpp - dropout by global rows ---------------------------===//

#include "../RandomValues.h"
#include "../RuntimeFixture.h"
#include "runtime/ops/DropoutMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace {

using whale::testing::randomValues;
using whale::testing::TestRuntime;

/// Dropout of `x` [rows, width] at `rate` with the context's rows starting
/// at `first`; training unless told.
std::vector<float> drop(TestRuntime &rt, const std::vector<float> &x,
                        int64_t rows, int64_t width, double rate,
                        int64_t key, int64_t first, int64_t rowOffset = 0,
                        bool training = true) {
  EXPECT_EQ(whale_rt_set_rows(rt.ctx, first, training ? 1 : 0), WHALE_RT_OK);
  whale_rt_tensor *in = rt.f32({rows, width}, x),
                  *out = rt.make(WHALE_RT_F32, {rows, width});
  EXPECT_EQ(whale_rt_dropout(rt.ctx, in, rate, key, rowOffset, out),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  const float *d = TestRuntime::data<float>(out);
  return std::vector<float>(d, d + rows * width);
}

TEST(Dropout, DropsTheRateAndScalesTheRest) {
  TestRuntime rt(5);
  const int64_t rows = 200, width = 500;
  std::vector<float> x(rows * width, 1.0f);
  std::vector<float> y = drop(rt, x, rows, width, 0.3, 11, 0);
  int64_t dropped = 0;
  for (float v : y) {
    if (v == 0.0f)
      ++dropped;
    else
      EXPECT_FLOAT_EQ(v, 1.0f / 0.7f);
  }
  // 100,000 draws: the share is within 1% of the rate.
  EXPECT_NEAR(double(dropped) / double(rows * width), 0.3, 0.01);
}

TEST(Dropout, RowsDropByTheirPlaceInTheGlobalBatch) {
  // Two ranks with four rows each, or one rank with micro-batches of two,
  // drop exactly what one rank with all eight rows drops.
  TestRuntime rt(9);
  const int64_t width = 37;
  std::vector<float> x = randomValues(8 * width, 3);
  std::vector<float> all = drop(rt, x, 8, width, 0.5, 77, 0);
  std::vector<float> first(x.begin(), x.begin() + 4 * width),
      second(x.begin() + 4 * width, x.end());
  std::vector<float> a = drop(rt, first, 4, width, 0.5, 77, 0),
                     b = drop(rt, second, 4, width, 0.5, 77, 4);
  std::vector<float> c(second.begin() + 2 * width, second.end());
  std::vector<float> micro = drop(rt, c, 2, width, 0.5, 77, 4, 2);
  for (int64_t i = 0; i < 4 * width; ++i) {
    EXPECT_EQ(a[i], all[i]) << i;
    EXPECT_EQ(b[i], all[4 * width + i]) << i;
  }
  for (int64_t i = 0; i < 2 * width; ++i)
    EXPECT_EQ(micro[i], all[6 * width + i]) << i;

  // Another key, another step or another seed draws anew.
  auto differs = [&](const std::vector<float> &other) {
    for (size_t i = 0; i < all.size(); ++i)
      if ((other[i] == 0.0f) != (all[i] == 0.0f))
        return true;
    return false;
  };
  EXPECT_TRUE(differs(drop(rt, x, 8, width, 0.5, 78, 0)));
  ASSERT_EQ(whale_rt_set_train_state(rt.ctx, 2, 1.0), WHALE_RT_OK);
  EXPECT_TRUE(differs(drop(rt, x, 8, width, 0.5, 77, 0)));
  TestRuntime other(10);
  EXPECT_TRUE(differs(drop(other, x, 8, width, 0.5, 77, 0)));
}

TEST(Dropout, ADrawAtAnotherStepIsThatStepsDraw) {
  // What a held step's replay draws with (runtime/core/StepCapture.h).
  using whale::rt::DropoutDraw;
  const DropoutDraw at5 = DropoutDraw::make(42, 5, 3, 0.3);
  const DropoutDraw at9 = DropoutDraw::make(42, 9, 3, 0.3), moved = at5.at(9);
  EXPECT_EQ(moved.base, at9.base);
  EXPECT_EQ(moved.threshold, at9.threshold);
  EXPECT_NE(moved.base, at5.base);
  int same = 0;
  for (int64_t i = 0; i < 1000; ++i)
    same += at9.keep(i) == moved.keep(i);
  EXPECT_EQ(same, 1000);
}

TEST(Dropout, EvaluatingPassesEverythingAndBadArgumentsAreErrors) {
  TestRuntime rt;
  std::vector<float> x = randomValues(6 * 5, 4);
  EXPECT_EQ(drop(rt, x, 6, 5, 0.9, 1, 0, 0, /*training=*/false), x);
  whale_rt_tensor *in = rt.f32({6, 5}, x), *out = rt.make(WHALE_RT_F32, {6, 5});
  EXPECT_EQ(whale_rt_dropout(rt.ctx, in, 1.0, 1, 0, out),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_dropout(rt.ctx, in, 0.5, 1, -1, out),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_set_rows(rt.ctx, -1, 1), WHALE_RT_INVALID_ARGUMENT);
}

} // namespace
