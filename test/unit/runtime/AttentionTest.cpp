//===- AttentionTest.cpp - the fused CPU attention against the composed
//----===//
//
// The CPU's fused attention never makes the [..., T, T] scores; the
// composed one (Device's default: matmul, scale, mask, softmax, matmul, the
// primitives whose gradients GradCheck checks) does. They must agree,
// forward and backward, causal or not, in float to rounding.
//
//===----------------------------------------------------------------------===//

#include "AttentionTesting.h"

using namespace whale::rt;
using namespace whale::rt::testing;

namespace {

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
  ASSERT_TRUE(dev.attention(in(q, s), in(k, s), in(v, s), scale,
                            AttentionForm{causal}, out(fused, s)));
  ASSERT_TRUE(dev.Device::attention(in(q, s), in(k, s), in(v, s), scale,
                                    AttentionForm{causal}, out(composed, s)));
  expectClose(fused, composed, "out");

  std::vector<float> dq(n), dk(n), dv(n), cq(n), ck(n), cv(n);
  ASSERT_TRUE(dev.attentionBackward(in(q, s), in(k, s), in(v, s), in(fused, s),
                                    in(dout, s), scale, AttentionForm{causal},
                                    out(dq, s), out(dk, s), out(dv, s)));
  ASSERT_TRUE(dev.Device::attentionBackward(
      in(q, s), in(k, s), in(v, s), in(composed, s), in(dout, s), scale,
      AttentionForm{causal}, out(cq, s), out(ck, s), out(cv, s)));
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
  ASSERT_TRUE(dev.attention(in(q, s), in(k, s), in(v, s), 0.5,
                            AttentionForm{true}, out(o, s)));
  for (int c = 0; c < 3; ++c)
    EXPECT_FLOAT_EQ(o[c], v[c]);
}

TEST(AttentionCausal, MismatchedShapesAreErrors) {
  CpuDevice &dev = testDevice();
  std::vector<float> a(24), b(12), o(24);
  Status st =
      dev.attention(in(a, {1, 8, 3}), in(b, {1, 4, 3}), in(b, {1, 4, 3}), 1.0,
                    AttentionForm{true}, out(o, {1, 8, 3}));
  EXPECT_FALSE(st);
  EXPECT_NE(st.message().find("as many keys as queries"), std::string::npos);
}

/// x [B, A, C, E] as [B, C, A, E]: between head- and sequence-major.
std::vector<float> swapMiddle(const std::vector<float> &x, const Shape &s) {
  const int64_t b = s[0], a = s[1], c = s[2], e = s[3];
  std::vector<float> y(x.size());
  for (int64_t i = 0; i < b; ++i)
    for (int64_t j = 0; j < a; ++j)
      for (int64_t l = 0; l < c; ++l)
        for (int64_t m = 0; m < e; ++m)
          y[((i * c + l) * a + j) * e + m] = x[((i * a + j) * c + l) * e + m];
  return y;
}

/// Sequence-major operands [B, T, H, E], read in place by the fused kernel
/// and, by Device's composition, permuted to head-major ones for the
/// device's own attention and back, give the head-major answers permuted:
/// what -whale-fuse-attention relies on when it folds split_heads away.
class SequenceMajorAttention : public ::testing::TestWithParam<bool> {};

TEST_P(SequenceMajorAttention, IsHeadMajorAttentionPermuted) {
  const bool causal = GetParam();
  CpuDevice &dev = testDevice();
  const Shape seq{2, 70, 3, 8}, heads{2, 3, 70, 8}; // 70: two row blocks
  const size_t n = static_cast<size_t>(numElements(seq));
  const double scale = 0.35;
  std::vector<float> q = randomFloats(n, 11), k = randomFloats(n, 12),
                     v = randomFloats(n, 13), dout = randomFloats(n, 14);
  std::vector<float> qh = swapMiddle(q, seq), kh = swapMiddle(k, seq),
                     vh = swapMiddle(v, seq), douth = swapMiddle(dout, seq);
  const AttentionForm headMajor{causal, false}, seqMajor{causal, true};

  std::vector<float> oh(n), dqh(n), dkh(n), dvh(n);
  ASSERT_TRUE(dev.attention(in(qh, heads), in(kh, heads), in(vh, heads), scale,
                            headMajor, out(oh, heads)));
  ASSERT_TRUE(dev.attentionBackward(in(qh, heads), in(kh, heads), in(vh, heads),
                                    in(oh, heads), in(douth, heads), scale,
                                    headMajor, out(dqh, heads), out(dkh, heads),
                                    out(dvh, heads)));
  const std::vector<float> wantO = swapMiddle(oh, heads),
                           wantDq = swapMiddle(dqh, heads),
                           wantDk = swapMiddle(dkh, heads),
                           wantDv = swapMiddle(dvh, heads);

  for (bool composed : {false, true}) {
    SCOPED_TRACE(composed ? "composed" : "fused");
    std::vector<float> o(n), dq(n), dk(n), dv(n);
    ASSERT_TRUE(composed
                    ? dev.Device::attention(in(q, seq), in(k, seq), in(v, seq),
                                            scale, seqMajor, out(o, seq))
                    : dev.attention(in(q, seq), in(k, seq), in(v, seq), scale,
                                    seqMajor, out(o, seq)));
    expectClose(o, wantO, "out");
    ASSERT_TRUE(
        composed
            ? dev.Device::attentionBackward(
                  in(q, seq), in(k, seq), in(v, seq), in(o, seq), in(dout, seq),
                  scale, seqMajor, out(dq, seq), out(dk, seq), out(dv, seq))
            : dev.attentionBackward(in(q, seq), in(k, seq), in(v, seq),
                                    in(o, seq), in(dout, seq), scale, seqMajor,
                                    out(dq, seq), out(dk, seq), out(dv, seq)));
    expectClose(dq, wantDq, "dq");
    expectClose(dk, wantDk, "dk");
    expectClose(dv, wantDv, "dv");
  }
}

INSTANTIATE_TEST_SUITE_P(CausalAndFull, SequenceMajorAttention,
                         ::testing::Bool());

TEST(SequenceMajorAttention, NeedsPositionsHeadsAndWidth) {
  CpuDevice &dev = testDevice();
  std::vector<float> a(24), o(24);
  for (bool composed : {false, true}) {
    const AttentionForm form{false, true};
    Status st =
        composed
            ? dev.Device::attention(in(a, {8, 3}), in(a, {8, 3}), in(a, {8, 3}),
                                    1.0, form, out(o, {8, 3}))
            : dev.attention(in(a, {8, 3}), in(a, {8, 3}), in(a, {8, 3}), 1.0,
                            form, out(o, {8, 3}));
    EXPECT_FALSE(st);
    EXPECT_NE(st.message().find("[..., T, H, E]"), std::string::npos)
        << st.message();
  }
  // Keys with other heads than the queries are not one attention.
  std::vector<float> b(48);
  Status st = dev.attention(in(a, {1, 4, 2, 3}), in(b, {1, 4, 4, 3}),
                            in(b, {1, 4, 4, 3}), 1.0, {false, true},
                            out(o, {1, 4, 2, 3}));
  EXPECT_FALSE(st);
}

} // namespace
