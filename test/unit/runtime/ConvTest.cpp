//===- ConvTest.cpp - convolutions and pooling against direct loops -------===//
//
// The CPU device's convolution (im2col and the batched matmul, groups as its
// batch) and its pooling, through the C ABI, against the definitions
// written as plain nested loops, on random data over strides, padding,
// dilation and groups; and the backward passes against the loops' own
// adjoints.
//
//===----------------------------------------------------------------------===//

#include "test/unit/Worst.h"
#include "../RandomValues.h"
#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using whale::testing::randomValues;
using whale::testing::TestRuntime;

struct Conv {
  int64_t n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups;
  int64_t oh() const { return (h + 2 * ph - dh * (kh - 1) - 1) / sh + 1; }
  int64_t ow() const { return (w + 2 * pw - dw * (kw - 1) - 1) / sw + 1; }
  std::vector<int64_t> geometry() const { return {sh, sw, ph, pw, dh, dw, groups}; }
};

/// The input element under tap (i, j) of output (y, x), or -1 in the
/// padding.
int64_t tap(const Conv &k, int64_t y, int64_t x, int64_t i, int64_t j) {
  int64_t hh = y * k.sh - k.ph + i * k.dh, ww = x * k.sw - k.pw + j * k.dw;
  return hh < 0 || hh >= k.h || ww < 0 || ww >= k.w ? -1 : hh * k.w + ww;
}

/// y, dx and dw by the definition: y[n,o,y,x] = sum over the group's
/// channels and taps of x * w.
void direct(const Conv &k, const std::vector<float> &x,
            const std::vector<float> &w, const std::vector<float> &dy,
            std::vector<double> &y, std::vector<double> &dx,
            std::vector<double> &dw) {
  const int64_t cg = k.c / k.groups, og = k.o / k.groups;
  y.assign(k.n * k.o * k.oh() * k.ow(), 0);
  dx.assign(x.size(), 0);
  dw.assign(w.size(), 0);
  for (int64_t n = 0; n < k.n; ++n)
    for (int64_t o = 0; o < k.o; ++o)
      for (int64_t yy = 0; yy < k.oh(); ++yy)
        for (int64_t xx = 0; xx < k.ow(); ++xx) {
          int64_t out = ((n * k.o + o) * k.oh() + yy) * k.ow() + xx;
          for (int64_t ci = 0; ci < cg; ++ci) {
            int64_t c = (o / og) * cg + ci;
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                int64_t at = tap(k, yy, xx, i, j);
                if (at < 0)
                  continue;
                int64_t xi = (n * k.c + c) * k.h * k.w + at;
                int64_t wi = ((o * cg + ci) * k.kh + i) * k.kw + j;
                y[out] += double(x[xi]) * w[wi];
                dx[xi] += double(dy[out]) * w[wi];
                dw[wi] += double(dy[out]) * x[xi];
              }
          }
        }
}

double worst(const float *got, const std::vector<double> &want) {
  double scale = 1e-6, diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    scale = worseOf(scale, std::fabs(want[i]));
    diff = worseOf(diff, std::fabs(got[i] - want[i]));
  }
  return diff / scale;
}

class ConvShapes : public ::testing::TestWithParam<Conv> {};

TEST_P(ConvShapes, ForwardAndGradientsMatchTheDefinition) {
  const Conv k = GetParam();
  TestRuntime rt;
  std::vector<float> xv = randomValues(k.n * k.c * k.h * k.w, 1, -1, 1),
                     wv = randomValues(k.o * (k.c / k.groups) * k.kh * k.kw, 2,
                                       -1, 1),
                     dyv = randomValues(k.n * k.o * k.oh() * k.ow(), 3, -1, 1);
  whale_rt_tensor *x = rt.f32({k.n, k.c, k.h, k.w}, xv),
                  *w = rt.f32({k.o, k.c / k.groups, k.kh, k.kw}, wv),
                  *dy = rt.f32({k.n, k.o, k.oh(), k.ow()}, dyv),
                  *y = rt.make(WHALE_RT_F32, {k.n, k.o, k.oh(), k.ow()}),
                  *dx = rt.make(WHALE_RT_F32, {k.n, k.c, k.h, k.w}),
                  *dw = rt.make(WHALE_RT_F32, {k.o, k.c / k.groups, k.kh, k.kw});
  std::vector<int64_t> g = k.geometry();
  ASSERT_EQ(whale_rt_conv2d(rt.ctx, x, w, g.data(), y), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  ASSERT_EQ(whale_rt_conv2d_grad(rt.ctx, x, w, dy, g.data(), dx, dw),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  std::vector<double> wy, wdx, wdw;
  direct(k, xv, wv, dyv, wy, wdx, wdw);
  EXPECT_LT(worst(TestRuntime::data<float>(y), wy), 1e-5);
  EXPECT_LT(worst(TestRuntime::data<float>(dx), wdx), 1e-5);
  EXPECT_LT(worst(TestRuntime::data<float>(dw), wdw), 1e-5);
  // Each gradient alone (the other null, as the lowering passes it where
  // nothing reads it): the same values; neither is refused.
  whale_rt_tensor *dxAlone = rt.make(WHALE_RT_F32, {k.n, k.c, k.h, k.w}),
                  *dwAlone =
                      rt.make(WHALE_RT_F32, {k.o, k.c / k.groups, k.kh, k.kw});
  ASSERT_EQ(whale_rt_conv2d_grad(rt.ctx, x, w, dy, g.data(), dxAlone, nullptr),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  ASSERT_EQ(whale_rt_conv2d_grad(rt.ctx, x, w, dy, g.data(), nullptr, dwAlone),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  EXPECT_LT(worst(TestRuntime::data<float>(dxAlone), wdx), 1e-5);
  EXPECT_LT(worst(TestRuntime::data<float>(dwAlone), wdw), 1e-5);
  EXPECT_EQ(whale_rt_conv2d_grad(rt.ctx, x, w, dy, g.data(), nullptr, nullptr),
            WHALE_RT_INVALID_ARGUMENT);
}

INSTANTIATE_TEST_SUITE_P(
    Windows, ConvShapes,
    ::testing::Values(
        // n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw, groups
        Conv{2, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1},   // same padding
        Conv{3, 4, 9, 7, 6, 3, 2, 2, 1, 0, 1, 1, 1, 2},   // stride, groups
        Conv{1, 2, 10, 10, 2, 3, 3, 1, 2, 2, 0, 2, 1, 1}, // dilation
        Conv{2, 6, 5, 5, 6, 3, 3, 1, 1, 1, 1, 1, 1, 6},   // depthwise
        Conv{2, 3, 7, 7, 5, 7, 7, 2, 2, 3, 3, 1, 1, 1},   // a ResNet stem
        Conv{4, 8, 4, 4, 16, 1, 1, 1, 1, 0, 0, 1, 1, 1},  // 1x1
        // Weights outweighing the batch's input: their gradient cut by
        // output channels on oneDNN's path (48 = 16 + 32, 64 = 32 + 32).
        Conv{2, 32, 3, 3, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1},
        Conv{3, 64, 2, 2, 64, 1, 1, 1, 1, 0, 0, 1, 1, 1},
        // 38 MB of columns a sample: one sample per chunk of the composed
        // convolution (64 MB), the weight gradient added over chunks.
        Conv{2, 64, 128, 128, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1}));

TEST(Conv, ImToColAndBackAreAdjoint) {
  // <im2col(x), c> = <x, col2im(c)> for every x and c: col2im is the
  // transpose im2col's gradient needs.
  TestRuntime rt;
  const Conv k{1, 3, 6, 5, 1, 3, 2, 2, 1, 1, 1, 2, 1, 1};
  std::vector<float> xv = randomValues(3 * 6 * 5, 4, -1, 1);
  std::vector<float> wv(3 * 3 * 2, 0);
  // With one output channel of all-zero weights but for one tap, the
  // convolution's dx is col2im of dy at that tap: compare dot products
  // through the C ABI for each tap.
  for (int64_t tapIndex = 0; tapIndex < 3 * 3 * 2; ++tapIndex) {
    std::fill(wv.begin(), wv.end(), 0.0f);
    wv[tapIndex] = 1.0f;
    std::vector<float> dyv = randomValues(k.oh() * k.ow(), 5 + tapIndex, -1, 1);
    whale_rt_tensor *x = rt.f32({1, 3, 6, 5}, xv), *w = rt.f32({1, 3, 3, 2}, wv),
                    *dy = rt.f32({1, 1, k.oh(), k.ow()}, dyv),
                    *y = rt.make(WHALE_RT_F32, {1, 1, k.oh(), k.ow()}),
                    *dx = rt.make(WHALE_RT_F32, {1, 3, 6, 5}),
                    *dw = rt.make(WHALE_RT_F32, {1, 3, 3, 2});
    std::vector<int64_t> g = k.geometry();
    ASSERT_EQ(whale_rt_conv2d(rt.ctx, x, w, g.data(), y), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_conv2d_grad(rt.ctx, x, w, dy, g.data(), dx, dw),
              WHALE_RT_OK);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < k.oh() * k.ow(); ++i)
      lhs += double(TestRuntime::data<float>(y)[i]) * dyv[i];
    for (size_t i = 0; i < xv.size(); ++i)
      rhs += double(xv[i]) * TestRuntime::data<float>(dx)[i];
    EXPECT_NEAR(lhs, rhs, 1e-4) << "tap " << tapIndex;
    for (whale_rt_tensor *t : {x, w, dy, y, dx, dw})
      whale_rt_tensor_release(rt.ctx, t);
  }
}

TEST(Pool, MaxAndAverageMatchTheDefinitionWithTheirGradients) {
  TestRuntime rt;
  const int64_t n = 2, c = 3, h = 7, w = 6;
  struct Case {
    int64_t kh, kw, sh, sw, ph, pw;
  } cases[] = {{2, 2, 2, 2, 0, 0}, {3, 3, 2, 2, 1, 1}, {3, 2, 1, 2, 1, 0}};
  std::vector<float> xv = randomValues(n * c * h * w, 6, -1, 1);
  for (const Case &k : cases)
    for (int kind : {WHALE_RT_POOL_MAX, WHALE_RT_POOL_AVG}) {
      const int64_t oh = (h + 2 * k.ph - k.kh) / k.sh + 1,
                    ow = (w + 2 * k.pw - k.kw) / k.sw + 1;
      std::vector<float> dyv = randomValues(n * c * oh * ow, 7, -1, 1);
      whale_rt_tensor *x = rt.f32({n, c, h, w}, xv),
                      *dy = rt.f32({n, c, oh, ow}, dyv),
                      *y = rt.make(WHALE_RT_F32, {n, c, oh, ow}),
                      *dx = rt.make(WHALE_RT_F32, {n, c, h, w});
      std::vector<int64_t> g = {k.kh, k.kw, k.sh, k.sw, k.ph, k.pw};
      ASSERT_EQ(whale_rt_pool2d(rt.ctx, kind, x, g.data(), y), WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      ASSERT_EQ(whale_rt_pool2d_grad(rt.ctx, kind, x, dy, g.data(), dx),
                WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      std::vector<double> wy(n * c * oh * ow, 0), wdx(xv.size(), 0);
      for (int64_t p = 0; p < n * c; ++p)
        for (int64_t yy = 0; yy < oh; ++yy)
          for (int64_t xx = 0; xx < ow; ++xx) {
            double best = -INFINITY, sum = 0;
            int64_t at = -1;
            for (int64_t i = 0; i < k.kh; ++i)
              for (int64_t j = 0; j < k.kw; ++j) {
                int64_t hh = yy * k.sh - k.ph + i, ww = xx * k.sw - k.pw + j;
                if (hh < 0 || hh >= h || ww < 0 || ww >= w)
                  continue;
                double v = xv[p * h * w + hh * w + ww];
                sum += v;
                if (v > best) {
                  best = v;
                  at = p * h * w + hh * w + ww;
                }
              }
            int64_t out = (p * oh + yy) * ow + xx;
            double g = dyv[out];
            if (kind == WHALE_RT_POOL_MAX) {
              wy[out] = best;
              wdx[at] += g;
            } else {
              wy[out] = sum / double(k.kh * k.kw);
              for (int64_t i = 0; i < k.kh; ++i)
                for (int64_t j = 0; j < k.kw; ++j) {
                  int64_t hh = yy * k.sh - k.ph + i, ww = xx * k.sw - k.pw + j;
                  if (hh >= 0 && hh < h && ww >= 0 && ww < w)
                    wdx[p * h * w + hh * w + ww] += g / double(k.kh * k.kw);
                }
            }
          }
      EXPECT_LT(worst(TestRuntime::data<float>(y), wy), 1e-6)
          << "kind " << kind << " kernel " << k.kh << "x" << k.kw;
      EXPECT_LT(worst(TestRuntime::data<float>(dx), wdx), 1e-6)
          << "kind " << kind << " kernel " << k.kh << "x" << k.kw;
    }
}

TEST(Conv, BadShapesAndWindowsAreErrorsThatSaySo) {
  TestRuntime rt;
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {2, 4, 5, 5}),
                  *w = rt.make(WHALE_RT_F32, {6, 3, 3, 3}),
                  *y = rt.make(WHALE_RT_F32, {2, 6, 3, 3});
  std::vector<int64_t> g = {1, 1, 0, 0, 1, 1, 1};
  EXPECT_NE(whale_rt_conv2d(rt.ctx, x, w, g.data(), y), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("does not fit x [2, 4, 5, 5] in 1 groups"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *big = rt.make(WHALE_RT_F32, {6, 4, 7, 7}),
                  *y1 = rt.make(WHALE_RT_F32, {2, 6, 1, 1});
  EXPECT_NE(whale_rt_conv2d(rt.ctx, x, big, g.data(), y1), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("does not fit the padded input"),
            std::string::npos);
  std::vector<int64_t> zeroStride = {0, 1, 0, 0, 1, 1, 1};
  EXPECT_NE(whale_rt_conv2d(rt.ctx, x, w, zeroStride.data(), y), WHALE_RT_OK);
  std::vector<int64_t> pool = {2, 2, 0, 2, 0, 0};
  EXPECT_NE(whale_rt_pool2d(rt.ctx, WHALE_RT_POOL_MAX, x, pool.data(), y),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("stride >= 1"),
            std::string::npos);
}

} // namespace
