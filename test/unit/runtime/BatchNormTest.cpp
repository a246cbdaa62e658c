//===- BatchNormTest.cpp - batch normalization against its definition ----===//
//
// The C ABI's batch normalization on one device against the formulas
// computed in doubles: the statistics per channel over rows and positions,
// the running statistics' update (PyTorch's: biased variance to normalize,
// unbiased into the running variance), evaluation by the running
// statistics, and the gradient. Plans that sum over replicas are checked
// against one device in test/unit/EquivalenceTest.cpp.
//
//===----------------------------------------------------------------------===//

#include "../RandomValues.h"
#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using whale::testing::randomValues;
using whale::testing::TestRuntime;

struct Case {
  int64_t n, c, s; // rows, channels, positions per channel
  std::vector<float> x, gamma, beta;
  std::vector<int64_t> shape() const {
    return s == 1 ? std::vector<int64_t>{n, c}
                  : std::vector<int64_t>{n, c, s / 2, 2};
  }
  double at(int64_t r, int64_t ch, int64_t i) const {
    return x[(r * c + ch) * s + i];
  }
  /// The channel's mean and biased variance, in doubles.
  void moments(int64_t ch, double &mean, double &var) const {
    double sum = 0, sq = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < s; ++i)
        sum += at(r, ch, i);
    mean = sum / double(n * s);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < s; ++i)
        sq += (at(r, ch, i) - mean) * (at(r, ch, i) - mean);
    var = sq / double(n * s);
  }
};

Case makeCase(int64_t n, int64_t c, int64_t s, uint64_t seed) {
  Case k{n, c, s, randomValues(n * c * s, seed), randomValues(c, seed + 1),
         randomValues(c, seed + 2)};
  for (float &v : k.x)
    v = v * 3.0f + 1.5f; // away from zero mean and unit variance
  return k;
}

const float *data(whale_rt_tensor *t) { return TestRuntime::data<float>(t); }

struct Forward {
  whale_rt_tensor *x, *gamma, *beta, *rm, *rv, *y, *mean, *invstd;
};

Forward run(TestRuntime &rt, const Case &k, bool training, double momentum,
            std::vector<float> runMean, std::vector<float> runVar) {
  EXPECT_EQ(whale_rt_set_rows(rt.ctx, 0, training ? 1 : 0), WHALE_RT_OK);
  Forward f{rt.f32(k.shape(), k.x),   rt.f32({k.c}, k.gamma),
            rt.f32({k.c}, k.beta),    rt.f32({k.c}, runMean),
            rt.f32({k.c}, runVar),    rt.make(WHALE_RT_F32, k.shape()),
            rt.make(WHALE_RT_F32, {k.c}), rt.make(WHALE_RT_F32, {k.c})};
  EXPECT_EQ(whale_rt_batch_norm(rt.ctx, f.x, f.gamma, f.beta, f.rm, f.rv,
                                momentum, 1e-5, 1, f.y, f.mean, f.invstd),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  return f;
}

TEST(BatchNorm, TrainingNormalizesByTheBatchAndMovesTheRunningStatistics) {
  for (int64_t s : {1, 6}) {
    TestRuntime rt(3);
    Case k = makeCase(5, 3, s, 40 + s);
    std::vector<float> rm = {0.5f, -1.0f, 2.0f}, rv = {1.0f, 2.0f, 0.5f};
    Forward f = run(rt, k, /*training=*/true, 0.1, rm, rv);
    for (int64_t ch = 0; ch < k.c; ++ch) {
      double mean, var;
      k.moments(ch, mean, var);
      double inv = 1 / std::sqrt(var + 1e-5);
      EXPECT_NEAR(data(f.mean)[ch], mean, 1e-5 * (1 + std::fabs(mean)));
      EXPECT_NEAR(data(f.invstd)[ch], inv, 1e-5 * inv);
      for (int64_t r = 0; r < k.n; ++r)
        for (int64_t i = 0; i < s; ++i) {
          double want = (k.at(r, ch, i) - mean) * inv * k.gamma[ch] +
                        k.beta[ch];
          EXPECT_NEAR(data(f.y)[(r * k.c + ch) * s + i], want, 1e-5)
              << "channel " << ch << " row " << r;
        }
      // The running variance takes the unbiased variance.
      double count = double(k.n * s);
      EXPECT_NEAR(data(f.rm)[ch], 0.9 * rm[ch] + 0.1 * mean, 1e-5);
      EXPECT_NEAR(data(f.rv)[ch],
                  0.9 * rv[ch] + 0.1 * var * count / (count - 1), 1e-5);
    }
  }
}

TEST(BatchNorm, EvaluatingNormalizesByTheRunningStatistics) {
  TestRuntime rt(5);
  Case k = makeCase(4, 2, 4, 7);
  std::vector<float> rm = {0.25f, -2.0f}, rv = {4.0f, 0.5f};
  Forward f = run(rt, k, /*training=*/false, 0.1, rm, rv);
  for (int64_t ch = 0; ch < k.c; ++ch) {
    double inv = 1 / std::sqrt(double(rv[ch]) + 1e-5);
    for (int64_t r = 0; r < k.n; ++r)
      for (int64_t i = 0; i < k.s; ++i)
        EXPECT_NEAR(data(f.y)[(r * k.c + ch) * k.s + i],
                    (k.at(r, ch, i) - rm[ch]) * inv * k.gamma[ch] + k.beta[ch],
                    1e-5);
    // Nothing is updated while evaluating.
    EXPECT_EQ(data(f.rm)[ch], rm[ch]);
    EXPECT_EQ(data(f.rv)[ch], rv[ch]);
  }
}

TEST(BatchNorm, MomentumZeroLeavesTheRunningStatistics) {
  // As a recomputed forward runs: the step's statistics moved them once.
  TestRuntime rt(6);
  Case k = makeCase(3, 2, 2, 9);
  Forward f = run(rt, k, /*training=*/true, 0.0, {1.0f, 2.0f}, {3.0f, 4.0f});
  EXPECT_EQ(data(f.rm)[0], 1.0f);
  EXPECT_EQ(data(f.rm)[1], 2.0f);
  EXPECT_EQ(data(f.rv)[0], 3.0f);
  EXPECT_EQ(data(f.rv)[1], 4.0f);
}

TEST(BatchNorm, GradientFollowsItsFormula) {
  TestRuntime rt(8);
  Case k = makeCase(4, 3, 4, 21);
  Forward f = run(rt, k, /*training=*/true, 0.1, {0, 0, 0}, {1, 1, 1});
  std::vector<float> dyv = randomValues(k.n * k.c * k.s, 99);
  whale_rt_tensor *dy = rt.f32(k.shape(), dyv),
                  *dx = rt.make(WHALE_RT_F32, k.shape()),
                  *dg = rt.make(WHALE_RT_F32, {k.c}),
                  *db = rt.make(WHALE_RT_F32, {k.c});
  ASSERT_EQ(whale_rt_batch_norm_grad(rt.ctx, f.x, f.gamma, f.mean, f.invstd,
                                     dy, dx, dg, db),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  const double count = double(k.n * k.s);
  for (int64_t ch = 0; ch < k.c; ++ch) {
    double mean, var;
    k.moments(ch, mean, var);
    double inv = 1 / std::sqrt(var + 1e-5), sumDy = 0, sumDyXhat = 0;
    auto idx = [&](int64_t r, int64_t i) { return (r * k.c + ch) * k.s + i; };
    for (int64_t r = 0; r < k.n; ++r)
      for (int64_t i = 0; i < k.s; ++i) {
        sumDy += dyv[idx(r, i)];
        sumDyXhat += dyv[idx(r, i)] * (k.at(r, ch, i) - mean) * inv;
      }
    EXPECT_NEAR(data(db)[ch], sumDy, 1e-4);
    EXPECT_NEAR(data(dg)[ch], sumDyXhat, 1e-4);
    for (int64_t r = 0; r < k.n; ++r)
      for (int64_t i = 0; i < k.s; ++i) {
        double xhat = (k.at(r, ch, i) - mean) * inv;
        double want = k.gamma[ch] * inv *
                      (dyv[idx(r, i)] - sumDy / count -
                       xhat * sumDyXhat / count);
        EXPECT_NEAR(data(dx)[idx(r, i)], want, 1e-4);
      }
  }
}

TEST(BatchNorm, RefusesShapesThatDoNotFit) {
  TestRuntime rt(2);
  ASSERT_EQ(whale_rt_set_rows(rt.ctx, 0, 1), WHALE_RT_OK);
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {4, 3}),
                  *c3 = rt.make(WHALE_RT_F32, {3}),
                  *c2 = rt.make(WHALE_RT_F32, {2}),
                  *y = rt.make(WHALE_RT_F32, {4, 3});
  EXPECT_EQ(whale_rt_batch_norm(rt.ctx, x, c2, c3, c3, c3, 0.1, 1e-5, 1, y,
                                c3, c3),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("'gamma' is [2], expected [3]"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *flat = rt.make(WHALE_RT_F32, {12});
  EXPECT_EQ(whale_rt_batch_norm(rt.ctx, flat, c3, c3, c3, c3, 0.1, 1e-5, 1,
                                flat, c3, c3),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_batch_norm(rt.ctx, x, c3, c3, c3, c3, 0.1, 0.0, 1, y, c3,
                                c3),
            WHALE_RT_INVALID_ARGUMENT);
}

} // namespace
