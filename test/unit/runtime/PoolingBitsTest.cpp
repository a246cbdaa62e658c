//===- PoolingBitsTest.cpp - the CPU's pooling is ConvMath's, bit for bit -===//
//
// The CPU device pools a row at a time; the GPU's kernels call
// support/ConvMath.h's poolAt and poolGradAt per element. The two must give
// the same bits, or plans on the two devices part: which of equal maxima
// takes a window's gradient (the first in row-major order), a NaN winning
// and staying, a window of -inf only, a window wholly in the padding
// (output 0, no gradient), dilation, and the order of each input's
// gradient sum. Inputs are drawn from a few values, so that most windows
// hold ties.
//
//===----------------------------------------------------------------------===//

#include "runtime/cpu/CpuDevice.h"
#include "support/ConvMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace whale::rt;

namespace pooling_bits_test {
namespace {

struct Case {
  int64_t n, c, h, w;
  Window2d win;
};

std::string describe(const Case &k, bool max) {
  const Window2d &w = k.win;
  return std::string(max ? "max" : "avg") + " " + std::to_string(k.h) + "x" +
         std::to_string(k.w) + " kernel " + std::to_string(w.kernelH) + "x" +
         std::to_string(w.kernelW) + " stride " + std::to_string(w.strideH) +
         "," + std::to_string(w.strideW) + " pad " + std::to_string(w.padH) +
         "," + std::to_string(w.padW) + " dilation " +
         std::to_string(w.dilationH) + "," + std::to_string(w.dilationW);
}

/// A few values, -inf among them, and now and then a NaN.
std::vector<float> tiedValues(int64_t count, unsigned seed, bool withNaN) {
  std::mt19937 gen(seed);
  const float choices[] = {-INFINITY, -1.0f, 0.0f, -0.0f, 0.5f, 2.0f, 2.0f};
  std::vector<float> v(count);
  for (float &x : v) {
    x = choices[gen() % 7];
    if (withNaN && gen() % 97 == 0)
      x = NAN;
  }
  return v;
}

bool sameBits(float a, float b) {
  if (a != a || b != b)
    return a != a && b != b;
  return std::memcmp(&a, &b, sizeof a) == 0;
}

void checkCase(CpuDevice &dev, const Case &k, bool max, bool withNaN) {
  const Window2d &w = k.win;
  const int64_t oh = w.outH(k.h), ow = w.outW(k.w);
  ASSERT_GT(oh, 0);
  ASSERT_GT(ow, 0);
  const Shape xs = {k.n, k.c, k.h, k.w}, ys = {k.n, k.c, oh, ow};
  std::vector<float> x = tiedValues(k.n * k.c * k.h * k.w, 11, withNaN);
  std::vector<float> dy(k.n * k.c * oh * ow);
  std::mt19937 gen(12);
  std::uniform_real_distribution<float> uni(-1, 1);
  for (float &g : dy)
    g = uni(gen);
  std::vector<float> y(dy.size()), dx(x.size());
  ASSERT_TRUE(dev.pool2d(max, View<const float>{x.data(), xs}, w,
                         View<float>{y.data(), ys})
                  .isOk());
  ASSERT_TRUE(dev.pool2dBackward(max, View<const float>{x.data(), xs},
                                 View<const float>{dy.data(), ys}, w,
                                 View<float>{dx.data(), xs})
                  .isOk());
  const Planes p = planesOf(xs, ys);
  int64_t wrongY = 0, wrongDx = 0;
  for (int64_t c = 0; c < p.channels; ++c) {
    const float *plane = x.data() + c * k.h * k.w;
    const float *g = dy.data() + c * oh * ow;
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        wrongY +=
            !sameBits(y[(c * oh + i) * ow + j], poolAt(max, plane, p, w, i, j));
    for (int64_t i = 0; i < k.h; ++i)
      for (int64_t j = 0; j < k.w; ++j)
        wrongDx += !sameBits(dx[(c * k.h + i) * k.w + j],
                             poolGradAt(max, plane, g, p, w, i, j));
  }
  EXPECT_EQ(wrongY, 0) << describe(k, max);
  EXPECT_EQ(wrongDx, 0) << describe(k, max);
}

std::vector<Case> cases() {
  auto win = [](int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph,
                int64_t pw, int64_t dh, int64_t dw) {
    Window2d w;
    w.kernelH = kh, w.kernelW = kw, w.strideH = sh, w.strideW = sw;
    w.padH = ph, w.padW = pw, w.dilationH = dh, w.dilationW = dw;
    return w;
  };
  return {
      {2, 3, 9, 8, win(3, 3, 2, 2, 1, 1, 1, 1)},   // ResNet's stem pool
      {1, 4, 7, 6, win(2, 2, 2, 2, 0, 0, 1, 1)},   // halving
      {2, 2, 7, 9, win(3, 2, 1, 2, 1, 0, 1, 1)},   // overlapping rows
      {1, 3, 11, 10, win(3, 3, 1, 3, 2, 1, 2, 2)}, // dilated
      {1, 2, 5, 5, win(2, 2, 3, 3, 3, 3, 1, 1)},   // windows in the padding
      {1, 2, 6, 40, win(1, 5, 1, 1, 0, 2, 1, 1)},  // a long row, stride 1
      {3, 1, 4, 4, win(4, 4, 1, 1, 0, 0, 1, 1)},   // global pooling
  };
}

TEST(PoolingBits, TheCpuRowsEqualConvMathsDefinitionBitForBit) {
  for (int threads : {1, 3}) {
    CpuDevice dev("cpu:pool-bits", CpuDeviceOptions{threads, 0});
    for (const Case &k : cases())
      for (bool max : {true, false})
        for (bool withNaN : {false, true})
          checkCase(dev, k, max, withNaN);
  }
}

} // namespace
} // namespace pooling_bits_test
