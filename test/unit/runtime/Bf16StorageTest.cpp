//===- Bf16StorageTest.cpp - bf16 tensors and the cast between f32 --------===//
//
// amp's activations are stored in bf16. These pin what storage means: the
// rounding (nearest, ties to even, as the GPU's __float2bfloat16_rn), the
// exact widening, the C ABI's cast and fill, and the sum of bf16 terms
// ranks hand each other.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/comm/Communicator.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace {

using whale::rt::bf16Bits;
using whale::rt::bf16Value;
using whale::rt::DType;

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

TEST(Bf16Storage, RoundsToNearestTiesToEven) {
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even
  // mantissa (1). 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and
  // 1 + 2^-6: up.
  EXPECT_EQ(bf16Bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  EXPECT_EQ(bf16Bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  // Just above halfway rounds up; just below, down.
  EXPECT_EQ(bf16Bits(fromBits(0x3f808001)), 0x3f81);
  EXPECT_EQ(bf16Bits(fromBits(0x3f807fff)), 0x3f80);
  EXPECT_EQ(bf16Bits(-2.5f), 0xc020);
  // A subnormal keeps its top bits; fp32's largest finite value rounds up
  // to infinity, as IEEE rounding to nearest does.
  EXPECT_EQ(bf16Bits(fromBits(0x00010000)), 0x0001);
  EXPECT_EQ(bf16Bits(std::numeric_limits<float>::max()), 0x7f80);
}

TEST(Bf16Storage, NanAndInfinitiesStay) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16Bits(inf), 0x7f80);
  EXPECT_EQ(bf16Bits(-inf), 0xff80);
  // A NaN whose payload is only in the low 16 bits would truncate to
  // infinity; it must stay a NaN.
  EXPECT_TRUE(std::isnan(bf16Value(bf16Bits(fromBits(0x7f800001)))));
  EXPECT_TRUE(std::isnan(bf16Value(bf16Bits(std::nanf("")))));
}

TEST(Bf16Storage, WideningIsExactAndRoundTrips) {
  for (uint32_t bits = 0; bits < 0x10000; bits += 7) {
    float f = bf16Value(static_cast<uint16_t>(bits));
    if (std::isnan(f))
      continue;
    EXPECT_EQ(bf16Bits(f), bits) << std::hex << bits;
  }
}

struct Ctx : whale::testing::TestRuntime {
  Ctx() : TestRuntime(1, 0) {}
};

std::vector<uint16_t> words(whale_rt_tensor *t, size_t n) {
  const uint16_t *p = static_cast<const uint16_t *>(whale_rt_tensor_data(t));
  return std::vector<uint16_t>(p, p + n);
}

TEST(Bf16Storage, CastThroughTheCApiBothWays) {
  Ctx c;
  const float nan = std::nanf("");
  std::vector<float> x = {
      1.0f, 1.0f + std::ldexp(1.0f, -8), -2.5f, 3.14159f, 1e-30f, nan};
  whale_rt_tensor *f = c.f32({2, 3}, x);
  whale_rt_tensor *h = c.make(WHALE_RT_BF16, {2, 3});
  ASSERT_EQ(whale_rt_tensor_dtype(h), WHALE_RT_BF16);
  ASSERT_EQ(whale_rt_cast(c.ctx, f, h), WHALE_RT_OK)
      << whale_rt_last_error(c.ctx);
  std::vector<uint16_t> got = words(h, 6);
  for (size_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(got[i], bf16Bits(x[i])) << i;

  whale_rt_tensor *back = c.make(WHALE_RT_F32, {2, 3});
  ASSERT_EQ(whale_rt_cast(c.ctx, h, back), WHALE_RT_OK);
  const float *w = static_cast<const float *>(whale_rt_tensor_data(back));
  for (size_t i = 0; i + 1 < x.size(); ++i)
    EXPECT_EQ(w[i], whale::rt::roundToBf16(x[i])) << i;
  EXPECT_TRUE(std::isnan(w[5]));
  EXPECT_EQ(w[3], 3.140625f); // 3.14159 to 8 significant bits
}

TEST(Bf16Storage, CastRefusesOtherTypesAndShapes) {
  Ctx c;
  whale_rt_tensor *f = c.f32({4}, {1, 2, 3, 4});
  whale_rt_tensor *d = c.make(WHALE_RT_F64, {4});
  EXPECT_EQ(whale_rt_cast(c.ctx, f, d), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "cast: converts between f32 and bf16, not f32 to f64");
  whale_rt_tensor *other = c.f32({4}, {0, 0, 0, 0});
  EXPECT_EQ(whale_rt_cast(c.ctx, f, other), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "cast: converts between f32 and bf16, not f32 to f32");
  whale_rt_tensor *h = c.make(WHALE_RT_BF16, {2, 2});
  EXPECT_EQ(whale_rt_cast(c.ctx, f, h), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "cast: the output is [2, 2] but the result is [4]");
  // Ops that compute in f32 refuse bf16 storage plainly.
  whale_rt_tensor *h4 = c.make(WHALE_RT_BF16, {4});
  EXPECT_EQ(whale_rt_unary(c.ctx, WHALE_RT_RELU, h4, h4),
            WHALE_RT_INVALID_ARGUMENT);
}

TEST(Bf16Storage, ATracedStepFindsAnInfinityMadeByRounding) {
  // fp32's largest value is finite, its bf16 is not: the finite check
  // after a traced op reads bf16 outputs too.
  Ctx c;
  ASSERT_EQ(whale_rt_enable_trace(c.ctx), WHALE_RT_OK);
  whale_rt_tensor *f = c.f32({2}, {1.0f, std::numeric_limits<float>::max()});
  whale_rt_tensor *h = c.make(WHALE_RT_BF16, {2});
  whale_rt_tensor *fine = c.f32({2}, {1.0f, 2.0f});
  ASSERT_EQ(whale_rt_cast(c.ctx, fine, h), WHALE_RT_OK);
  EXPECT_STREQ(whale_rt_first_nonfinite(c.ctx), "");
  ASSERT_EQ(whale_rt_cast(c.ctx, f, h), WHALE_RT_OK);
  EXPECT_STREQ(whale_rt_first_nonfinite(c.ctx), "cast");
}

TEST(Bf16Storage, FillRoundsTheValueOnce) {
  Ctx c;
  whale_rt_tensor *h = c.make(WHALE_RT_BF16, {3});
  ASSERT_EQ(whale_rt_fill(c.ctx, h, 0.1), WHALE_RT_OK);
  EXPECT_EQ(words(h, 3), std::vector<uint16_t>(3, bf16Bits(0.1f)));
}

TEST(Bf16Storage, RanksSumInFp32AndRoundOnce) {
  // 256 + 1 + 1 in bf16 step by step stays 256 (each 257 ties to 256);
  // in fp32 it is 258, which bf16 holds exactly.
  std::vector<uint16_t> a = {bf16Bits(256), bf16Bits(-1)};
  std::vector<uint16_t> b = {bf16Bits(1), bf16Bits(0.5f)};
  std::vector<uint16_t> c = {bf16Bits(1), bf16Bits(0.25f)};
  std::vector<const void *> ins = {a.data(), b.data(), c.data()};
  std::vector<uint16_t> out(2);
  whale::rt::sumInGroupOrder(DType::BF16, out.data(), ins, 0, 2);
  EXPECT_EQ(bf16Value(out[0]), 258.0f);
  EXPECT_EQ(bf16Value(out[1]), -0.25f);
  EXPECT_EQ(whale::rt::dtypeSize(DType::BF16), 2);
  EXPECT_STREQ(whale::rt::dtypeName(DType::BF16), "bf16");
}

} // namespace
