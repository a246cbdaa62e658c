//===- RopeTest.cpp - rotary position embedding ---------------------------===//

#include "GradCheck.h"

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
  rope<double>(testDevice(), cview(x, kShape), theta, false, mview(y, kShape));
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
  rope<double>(testDevice(), cview(x, kShape), 10000, false, mview(y, kShape));
  rope<double>(testDevice(), cview(y, kShape), 10000, true,
               mview(back, kShape));
  for (int64_t e = 0; e < kSize; ++e) {
    EXPECT_NEAR(back[e], x[e], 5e-7);
    if ((e / kE) % kT == 0)
      EXPECT_EQ(y[e], x[e]);
  }
}

TEST(Rope, ItsGradientIsTheInverseTurn) {
  gradCheck(
      {randomVec(kSize, -2, 2, 23)},
      [&](const std::vector<Vec> &in) {
        Vec y(kSize);
        rope<double>(testDevice(), cview(in[0], kShape), 10000, false,
                     mview(y, kShape));
        return y;
      },
      [&](const std::vector<Vec> &, const Vec &dy) {
        Vec dx(kSize);
        rope<double>(testDevice(), cview(dy, kShape), 10000, true,
                     mview(dx, kShape));
        return std::vector<Vec>{dx};
      });
}

} // namespace
