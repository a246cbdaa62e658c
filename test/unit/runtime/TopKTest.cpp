//===- TopKTest.cpp - the k largest entries of each row -------------------===//

#include "../RandomValues.h"
#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace {

using whale::testing::randomValues;
using whale::testing::TestRuntime;

TEST(TopK, ValuesAndPositionsFollowOneOrderTiesAndNaNIncluded) {
  TestRuntime rt;
  const int64_t rows = 5, n = 9, k = 4;
  std::vector<float> xv = randomValues(rows * n, 41, -1, 1);
  // Ties resolve to the lower position; a NaN comes first.
  xv[3] = xv[7] = 2.0f;
  xv[n + 4] = std::nanf("");
  whale_rt_tensor *x = rt.f32({rows, n}, xv),
                  *v = rt.make(WHALE_RT_F32, {rows, k}),
                  *p = rt.make(WHALE_RT_I32, {rows, k});
  ASSERT_EQ(whale_rt_topk(rt.ctx, x, k, v, p), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    const float *row = xv.data() + r * n;
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      if (std::isnan(row[a]) != std::isnan(row[b]))
        return std::isnan(row[a]);
      return row[a] > row[b];
    });
    for (int64_t j = 0; j < k; ++j) {
      EXPECT_EQ(TestRuntime::data<int32_t>(p)[r * k + j], order[j])
          << "row " << r << " place " << j;
      float got = TestRuntime::data<float>(v)[r * k + j];
      EXPECT_TRUE(got == row[order[j]] ||
                  (std::isnan(got) && std::isnan(row[order[j]])));
    }
  }
  EXPECT_EQ(TestRuntime::data<int32_t>(p)[0], 3); // 2.0 at 3 before 7
  EXPECT_EQ(TestRuntime::data<int32_t>(p)[1], 7);
  EXPECT_EQ(TestRuntime::data<int32_t>(p)[k], 4); // the NaN
}

TEST(TopK, TheGradientGoesBackToTheChosenPositions) {
  TestRuntime rt;
  const int64_t rows = 3, n = 6, k = 2;
  std::vector<float> xv = randomValues(rows * n, 42, -1, 1),
                     dyv = randomValues(rows * k, 43, -1, 1);
  whale_rt_tensor *x = rt.f32({rows, n}, xv), *dy = rt.f32({rows, k}, dyv),
                  *p = rt.make(WHALE_RT_I32, {rows, k}),
                  *dx = rt.make(WHALE_RT_F32, {rows, n});
  ASSERT_EQ(whale_rt_topk(rt.ctx, x, k, nullptr, p), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_topk_grad(rt.ctx, x, k, dy, dx), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < n; ++i) {
      float want = 0;
      for (int64_t j = 0; j < k; ++j)
        if (TestRuntime::data<int32_t>(p)[r * k + j] == i)
          want = dyv[r * k + j];
      EXPECT_EQ(TestRuntime::data<float>(dx)[r * n + i], want);
    }
}

TEST(TopK, AKOutsideTheRowIsAnErrorThatSaysSo) {
  TestRuntime rt;
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {2, 3}),
                  *v = rt.make(WHALE_RT_F32, {2, 4});
  EXPECT_NE(whale_rt_topk(rt.ctx, x, 4, v, nullptr), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("1 <= k <= that dimension"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  EXPECT_NE(whale_rt_topk(rt.ctx, x, 2, nullptr, nullptr), WHALE_RT_OK);
}

} // namespace
