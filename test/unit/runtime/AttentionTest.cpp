//===- AttentionTest.cpp - the fused CPU attention against the composed
//----===//
//
// The CPU's fused attention never makes the [..., T, T] scores; the
// composed one (Device's default: matmul, scale, mask, softmax, matmul, the
// primitives whose gradients GradCheck checks) does. They must agree,
// forward and backward, causal or not, in float to rounding.
//
//===----------------------------------------------------------------------===//

#include "test/unit/Worst.h"
#include "GradCheck.h"

using namespace whale::rt;
using namespace whale::rt::testing;

namespace {

std::vector<float> randomFloats(size_t n, unsigned seed) {
  Vec d = randomVec(n, -1.5, 1.5, seed);
  return std::vector<float>(d.begin(), d.end());
}

View<const float> in(const std::vector<float> &v, const Shape &s) {
  return View<const float>{v.data(), s};
}
View<float> out(std::vector<float> &v, const Shape &s) {
  return View<float>{v.data(), s};
}

void expectClose(const std::vector<float> &a, const std::vector<float> &b,
                 const char *what) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = worseOf(worst, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  EXPECT_LE(worst, 1e-5 * std::max(1.0, scale)) << what;
}

/// Causal or not; one block of query rows (T = 7), or three, the last
/// partial (T = 150: the fused kernel's blocks are 64 rows).
class Attention : public ::testing::TestWithParam<std::tuple<bool, Shape>> {};

TEST_P(Attention, FusedEqualsComposedForwardAndBackward) {
  const bool causal = std::get<0>(GetParam());
  CpuDevice &dev = testDevice();
  const Shape s = std::get<1>(GetParam()); // batch, heads, T, E
  const size_t n = static_cast<size_t>(numElements(s));
  const double scale = 1.0 / std::sqrt(double(s.back()));
  std::vector<float> q = randomFloats(n, 1), k = randomFloats(n, 2),
                     v = randomFloats(n, 3), dout = randomFloats(n, 4);
  std::vector<float> fused(n), composed(n);
  ASSERT_TRUE(dev.attention(in(q, s), in(k, s), in(v, s), scale, causal,
                            out(fused, s)));
  ASSERT_TRUE(dev.Device::attention(in(q, s), in(k, s), in(v, s), scale, causal,
                                    out(composed, s)));
  expectClose(fused, composed, "out");

  std::vector<float> dq(n), dk(n), dv(n), cq(n), ck(n), cv(n);
  ASSERT_TRUE(dev.attentionBackward(in(q, s), in(k, s), in(v, s), in(fused, s),
                                    in(dout, s), scale, causal, out(dq, s),
                                    out(dk, s), out(dv, s)));
  ASSERT_TRUE(dev.Device::attentionBackward(
      in(q, s), in(k, s), in(v, s), in(composed, s), in(dout, s), scale, causal,
      out(cq, s), out(ck, s), out(cv, s)));
  expectClose(dq, cq, "dq");
  expectClose(dk, ck, "dk");
  expectClose(dv, cv, "dv");
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, Attention,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Values(Shape{2, 3, 7, 5},
                                                              Shape{1, 2, 150,
                                                                    8})));

TEST(AttentionCausal, TheFirstRowSeesOnlyItself) {
  // Row 0 of a causal attention is v's row 0, whatever the scores.
  CpuDevice &dev = testDevice();
  const Shape s = {1, 4, 3};
  std::vector<float> q = randomFloats(12, 5), k = randomFloats(12, 6),
                     v = randomFloats(12, 7), o(12);
  ASSERT_TRUE(
      dev.attention(in(q, s), in(k, s), in(v, s), 0.5, true, out(o, s)));
  for (int c = 0; c < 3; ++c)
    EXPECT_FLOAT_EQ(o[c], v[c]);
}

TEST(AttentionCausal, MismatchedShapesAreErrors) {
  CpuDevice &dev = testDevice();
  std::vector<float> a(24), b(12), o(24);
  Status st = dev.attention(in(a, {1, 8, 3}), in(b, {1, 4, 3}),
                            in(b, {1, 4, 3}), 1.0, true, out(o, {1, 8, 3}));
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("as many keys as queries"), std::string::npos);
}

} // namespace
