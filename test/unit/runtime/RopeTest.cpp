//===- RopeTest.cpp - rotary position embedding ---------------------------===//

#include "GradCheck.h"
#include "../RuntimeFixture.h"

#include <cmath>

using namespace whale::rt;
using namespace whale::rt::cpu;
using namespace whale::rt::testing;

namespace {

// [B, H, T, E] = [2, 3, 5, 6]: positions repeat every T rows of E.
const Shape kShape = {2, 3, 5, 6};
constexpr int64_t kSize = 2 * 3 * 5 * 6, kT = 5, kE = 6;

// transformers' definition, written out: inv_freq = 1 / theta^(arange(0,
// E, 2) / E) in f32, angles t * inv_freq in f32, and x * cos(emb) +
// rotate_half(x) * sin(emb), emb = cat(angles, angles), rotate_half(x) =
// cat(-x2, x1).
TEST(Rope, IsTransformersRotateHalf) {
  Vec x = randomVec(kSize, -2, 2, 21), y(kSize);
  const double theta = 500000;
  rope<double>(testDevice(), cview(x, kShape), 0, theta, nullptr, false,
               mview(y, kShape));
  for (int64_t r = 0; r < kSize / kE; ++r) {
    const float t = static_cast<float>(r % kT);
    for (int64_t j = 0; j < kE; ++j) {
      const int64_t i = j % (kE / 2);
      const float invFreq =
          1.0f / std::pow(static_cast<float>(theta),
                          static_cast<float>(2 * i) / static_cast<float>(kE));
      const double angle = static_cast<double>(t * invFreq);
      const double rotated =
          j < kE / 2 ? -x[r * kE + j + kE / 2] : x[r * kE + j - kE / 2];
      const double want = x[r * kE + j] * static_cast<float>(std::cos(angle)) +
                          rotated * static_cast<float>(std::sin(angle));
      EXPECT_NEAR(y[r * kE + j], want, 1e-12) << "row " << r << " j " << j;
    }
  }
}

// cos and sin are each rounded to f32 (2^-24 relative), so a turn and its
// inverse scale a pair by cos^2 + sin^2 = 1 within 2^-22: 2.4e-7 of |x|
// <= 2 here.
TEST(Rope, PositionZeroIsTheIdentityAndTheInverseUndoesIt) {
  Vec x = randomVec(kSize, -2, 2, 22), y(kSize), back(kSize);
  rope<double>(testDevice(), cview(x, kShape), 0, 10000, nullptr, false,
               mview(y, kShape));
  rope<double>(testDevice(), cview(y, kShape), 0, 10000, nullptr, true,
               mview(back, kShape));
  for (int64_t e = 0; e < kSize; ++e) {
    EXPECT_NEAR(back[e], x[e], 5e-7);
    if ((e / kE) % kT == 0) {
      EXPECT_EQ(y[e], x[e]);
    }
  }
}

TEST(Rope, ItsGradientIsTheInverseTurn) {
  gradCheck(
      {randomVec(kSize, -2, 2, 23)},
      [&](const std::vector<Vec> &in) {
        Vec y(kSize);
        rope<double>(testDevice(), cview(in[0], kShape), 0, 10000, nullptr,
                     false, mview(y, kShape));
        return y;
      },
      [&](const std::vector<Vec> &, const Vec &dy) {
        Vec dx(kSize);
        rope<double>(testDevice(), cview(dy, kShape), 0, 10000, nullptr, true,
                     mview(dx, kShape));
        return std::vector<Vec>{dx};
      });
}

// Llama 3.1's rescaling (transformers' _compute_llama3_parameters), its
// three regimes by wavelength for Llama 3.1 8B's heads (E = 128, theta
// 500000, factor 8, low 1, high 4, 8192 original positions): wavelengths
// under 2048 kept, over 8192 divided by 8, between blended linearly in
// 8192 / wavelength.
TEST(Rope, Llama31ScalingKeepsDividesAndBlendsByWavelength) {
  const RopeScaling scaling{8, 1, 4, 8192};
  int kept = 0, divided = 0, blended = 0;
  for (int64_t i = 0; i < 64; ++i) {
    const double plain = 1 / std::pow(500000.0, 2.0 * i / 128);
    const double wavelen = 2 * M_PI / plain;
    double want = plain;
    if (wavelen > 8192) {
      want = plain / 8;
      ++divided;
    } else if (wavelen >= 2048) {
      const double smooth = (8192 / wavelen - 1) / (4 - 1);
      want = (1 - smooth) * plain / 8 + smooth * plain;
      ++blended;
    } else {
      ++kept;
    }
    EXPECT_NEAR(ropeInvFreq(i, 128, 500000.0f, &scaling), want, 2e-6 * want)
        << "i " << i;
    EXPECT_NEAR(ropeInvFreq(i, 128, 500000.0f, nullptr), plain, 2e-6 * plain);
  }
  EXPECT_GT(kept, 0);
  EXPECT_GT(divided, 0);
  EXPECT_GT(blended, 0);
}

TEST(Rope, TheCallRefusesAnOddRowAndABadScaling) {
  whale::testing::TestRuntime rt(1);
  whale_rt_tensor *odd = rt.make(WHALE_RT_F32, {4, 5});
  EXPECT_NE(whale_rt_rope(rt.ctx, odd, nullptr, 10000, nullptr, 0, odd),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("rope: needs x [..., T, E] with an even E"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {4, 6});
  const double backwards[] = {8, 4, 1, 8192}; // low above high
  EXPECT_NE(whale_rt_rope(rt.ctx, x, nullptr, 10000, backwards, 0, x),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("rope: scaling needs factor >= 1"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

// A decoding step's row at position p turns as row p of the whole text
// does: the same angle, the same bits.
TEST(Rope, ARowAtAPositionTurnsAsThatRowOfTheWhole) {
  whale::testing::TestRuntime rt(1);
  const int64_t t = 7, e = 8;
  whale_rt_tensor *whole = rt.make(WHALE_RT_F32, {2, t, e});
  whale_rt_tensor *turned = rt.make(WHALE_RT_F32, {2, t, e});
  float *w = rt.data<float>(whole);
  for (int64_t i = 0; i < 2 * t * e; ++i)
    w[i] = std::sin(0.3f * float(i)) + 0.5f;
  const double scaling[] = {8, 1, 4, 4};
  ASSERT_EQ(whale_rt_rope(rt.ctx, whole, nullptr, 500000, scaling, 0, turned),
            WHALE_RT_OK);
  whale_rt_tensor *row = rt.make(WHALE_RT_F32, {2, 1, e});
  whale_rt_tensor *out = rt.make(WHALE_RT_F32, {2, 1, e});
  whale_rt_tensor *position = rt.make(WHALE_RT_I32, {});
  for (int32_t p = 0; p < t; ++p) {
    for (int64_t b = 0; b < 2; ++b)
      std::copy_n(w + (b * t + p) * e, e, rt.data<float>(row) + b * e);
    *rt.data<int32_t>(position) = p;
    ASSERT_EQ(whale_rt_rope(rt.ctx, row, position, 500000, scaling, 0, out),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t i = 0; i < e; ++i)
        EXPECT_EQ(rt.data<float>(out)[b * e + i],
                  rt.data<float>(turned)[(b * t + p) * e + i])
            << "position " << p << " row " << b << " element " << i;
  }
  *rt.data<int32_t>(position) = -1;
  EXPECT_NE(whale_rt_rope(rt.ctx, row, position, 10000, nullptr, 0, out),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("rope: the position -1 is negative"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
  whale_rt_tensor *vector = rt.make(WHALE_RT_I32, {1});
  EXPECT_NE(whale_rt_rope(rt.ctx, row, vector, 10000, nullptr, 0, out),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx))
                .find("the position must be an i32 scalar"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

} // namespace
