//===- KvAttentionTest.cpp - a decoding step's attention over a cache -----===//
//
// whale_rt_kv_attention against the fused causal attention over the whole
// text: the rows written into the cache at their positions, each query
// row's output that row of whole attention's (grouped keys, two new rows a
// step); written in place when the new cache is the old; refused past the
// cache's end.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using whale::testing::TestRuntime;

// [B, H, T, E] = [2, 4, 6, 8], two key heads, a cache of 8 positions.
constexpr int64_t kB = 2, kH = 4, kHk = 2, kT = 6, kE = 8, kW = 8, kN = 2;

void fill(whale_rt_tensor *t, float phase) {
  float *d = TestRuntime::data<float>(t);
  int64_t n = 1;
  for (int32_t a = 0; a < whale_rt_tensor_rank(t); ++a)
    n *= whale_rt_tensor_shape(t)[a];
  for (int64_t i = 0; i < n; ++i)
    d[i] = std::sin(phase + 0.37f * float(i));
}

/// Rows [p, p + n) of the T axis of x [B, H, T, E] into y [B, H, n, E].
void rows(whale_rt_tensor *x, int64_t heads, int64_t p, int64_t n,
          whale_rt_tensor *y) {
  for (int64_t bh = 0; bh < kB * heads; ++bh)
    std::copy_n(TestRuntime::data<float>(x) + (bh * kT + p) * kE, n * kE,
                TestRuntime::data<float>(y) + bh * n * kE);
}

TEST(KvAttention, StepsOverTheCacheGiveTheWholeTextsAttention) {
  TestRuntime rt(1);
  whale_rt_tensor *q = rt.make(WHALE_RT_F32, {kB, kH, kT, kE});
  whale_rt_tensor *k = rt.make(WHALE_RT_F32, {kB, kHk, kT, kE});
  whale_rt_tensor *v = rt.make(WHALE_RT_F32, {kB, kHk, kT, kE});
  fill(q, 0.1f);
  fill(k, 1.3f);
  fill(v, 2.9f);
  const double scale = 1 / std::sqrt(double(kE));
  whale_rt_tensor *whole = rt.make(WHALE_RT_F32, {kB, kH, kT, kE});
  ASSERT_EQ(whale_rt_attention(rt.ctx, q, k, v, scale,
                               WHALE_RT_ATTENTION_CAUSAL, whole),
            WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);

  whale_rt_tensor *kc = rt.make(WHALE_RT_F32, {kB, kHk, kW, kE});
  whale_rt_tensor *vc = rt.make(WHALE_RT_F32, {kB, kHk, kW, kE});
  whale_rt_tensor *kc2 = rt.make(WHALE_RT_F32, {kB, kHk, kW, kE});
  whale_rt_tensor *vc2 = rt.make(WHALE_RT_F32, {kB, kHk, kW, kE});
  whale_rt_tensor *qs = rt.make(WHALE_RT_F32, {kB, kH, kN, kE});
  whale_rt_tensor *ks = rt.make(WHALE_RT_F32, {kB, kHk, kN, kE});
  whale_rt_tensor *vs = rt.make(WHALE_RT_F32, {kB, kHk, kN, kE});
  whale_rt_tensor *out = rt.make(WHALE_RT_F32, {kB, kH, kN, kE});
  whale_rt_tensor *position = rt.make(WHALE_RT_I32, {});
  for (int64_t p = 0; p < kT; p += kN) {
    rows(q, kH, p, kN, qs);
    rows(k, kHk, p, kN, ks);
    rows(v, kHk, p, kN, vs);
    *TestRuntime::data<int32_t>(position) = static_cast<int32_t>(p);
    // Alternate steps write new caches and the old ones in place.
    const bool inPlace = (p / kN) % 2 == 1;
    ASSERT_EQ(whale_rt_kv_attention(rt.ctx, qs, ks, vs, kc, vc, position, scale,
                                    out, inPlace ? kc : kc2,
                                    inPlace ? vc : vc2),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    if (!inPlace) {
      std::swap(kc, kc2);
      std::swap(vc, vc2);
    }
    for (int64_t bh = 0; bh < kB * kH; ++bh)
      for (int64_t i = 0; i < kN * kE; ++i)
        EXPECT_NEAR(TestRuntime::data<float>(out)[bh * kN * kE + i],
                    TestRuntime::data<float>(whole)[(bh * kT + p) * kE + i],
                    2e-6)
            << "position " << p << " head " << bh << " entry " << i;
  }
  // The cache holds every key row at its position.
  for (int64_t bh = 0; bh < kB * kHk; ++bh)
    for (int64_t i = 0; i < kT * kE; ++i)
      EXPECT_EQ(TestRuntime::data<float>(kc)[bh * kW * kE + i],
                TestRuntime::data<float>(k)[bh * kT * kE + i]);

  // Two rows at position 7 would pass the cache's 8.
  *TestRuntime::data<int32_t>(position) = 7;
  EXPECT_NE(whale_rt_kv_attention(rt.ctx, qs, ks, vs, kc, vc, position, scale,
                                  out, kc2, vc2),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("position 7 and 2 new rows pass the cache's 8 positions"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *wide = rt.make(WHALE_RT_F32, {kB, kHk, kW + 1, kE});
  *TestRuntime::data<int32_t>(position) = 0;
  EXPECT_NE(whale_rt_kv_attention(rt.ctx, qs, ks, vs, kc, wide, position, scale,
                                  out, kc2, vc2),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("the four caches"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

} // namespace
