//===- RmsNormTest.cpp - Llama's RMSNorm and its gradients ----------------===//

#include "GradCheck.h"
#include "../RuntimeFixture.h"

#include <cmath>
#include <cstring>

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

// Rows of 37: two blocks of 16 lanes and a tail; 70 rows: three blocks of
// the backward's 32-row parts, the last short.
const Shape kShape = {7, 10, 37}, kWeight = {37};
constexpr int64_t kRows = 70, kWidth = 37;

TEST(RmsNorm, IsTheRowOverItsRootMeanSquareTimesTheWeight) {
  Vec x = randomVec(kRows * kWidth, -2, 3, 5), w = randomVec(kWidth, -1, 2, 6),
      y(kRows * kWidth);
  const double eps = 1e-6;
  rmsNorm<double>(testDevice(), cview(x, kShape), cview(w, kWeight), eps,
                  mview(y, kShape));
  for (int64_t r = 0; r < kRows; ++r) {
    double squares = 0;
    for (int64_t j = 0; j < kWidth; ++j)
      squares += x[r * kWidth + j] * x[r * kWidth + j];
    const double scale = 1 / std::sqrt(squares / kWidth + eps);
    for (int64_t j = 0; j < kWidth; ++j)
      EXPECT_NEAR(y[r * kWidth + j], x[r * kWidth + j] * scale * w[j], 1e-12);
  }
}

TEST(RmsNorm, GradientsOfTheInputAndTheWeight) {
  gradCheck(
      {randomVec(kRows * kWidth, -2, 2, 7), randomVec(kWidth, -1, 2, 8)},
      [&](const std::vector<Vec> &in) {
        Vec y(kRows * kWidth);
        rmsNorm<double>(testDevice(), cview(in[0], kShape),
                        cview(in[1], kWeight), 1e-5, mview(y, kShape));
        return y;
      },
      [&](const std::vector<Vec> &in, const Vec &dy) {
        Vec dx(kRows * kWidth), dw(kWidth);
        rmsNormBackward<double>(testDevice(), cview(in[0], kShape),
                                cview(in[1], kWeight), 1e-5, cview(dy, kShape),
                                mview(dx, kShape), mview(dw, kWeight));
        return std::vector<Vec>{dx, dw};
      });
}

// The weight's gradient sums over rows in a fixed order: a plan that runs
// the op on more threads computes the same bits.
TEST(RmsNorm, TheWeightGradientIsTheSameBitsOnAnyThreads) {
  std::vector<float> x(kRows * kWidth), w(kWidth), dy(kRows * kWidth);
  Vec xs = randomVec(x.size(), -2, 2, 9), ws = randomVec(w.size(), -1, 1, 10),
      dys = randomVec(dy.size(), -1, 1, 11);
  std::copy(xs.begin(), xs.end(), x.begin());
  std::copy(ws.begin(), ws.end(), w.begin());
  std::copy(dys.begin(), dys.end(), dy.begin());
  std::vector<std::vector<float>> dws;
  for (int threads : {1, 3}) {
    CpuDevice dev("cpu:rms", CpuDeviceOptions{threads, 0});
    std::vector<float> dx(x.size()), dw(w.size());
    rmsNormBackward<float>(dev, View<const float>{x.data(), kShape},
                           View<const float>{w.data(), kWeight}, 1e-5,
                           View<const float>{dy.data(), kShape},
                           View<float>{dx.data(), kShape},
                           View<float>{dw.data(), kWeight});
    dws.push_back(dw);
  }
  EXPECT_EQ(0,
            std::memcmp(dws[0].data(), dws[1].data(), sizeof(float) * kWidth));
}

// The C ABI names what does not fit rather than reading past a tensor.
TEST(RmsNorm, TheCallRefusesShapesThatDoNotFit) {
  whale::testing::TestRuntime rt(1);
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {3, 4});
  whale_rt_tensor *w = rt.make(WHALE_RT_F32, {3});
  EXPECT_NE(whale_rt_rms_norm(rt.ctx, x, w, 1e-5, x), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("rms_norm: weight must be [4] and eps positive"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *dw = rt.make(WHALE_RT_F32, {4});
  EXPECT_NE(whale_rt_rms_norm_grad(rt.ctx, x, w, 1e-5, x, x, dw), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("rms_norm_grad: shapes do not fit"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

} // namespace
