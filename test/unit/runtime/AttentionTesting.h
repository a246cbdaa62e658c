//===- AttentionTesting.h - what the attention tests share -----*- C++ -*-===//
//
// Random operands, views of plain vectors, and the comparison to f32
// rounding that the fused, composed and grouped attentions are held to.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_RUNTIME_ATTENTIONTESTING_H
#define WHALE_TEST_UNIT_RUNTIME_ATTENTIONTESTING_H

#include "GradCheck.h"
#include "test/unit/Worst.h"

namespace whale::rt::testing {

inline std::vector<float> randomFloats(size_t n, unsigned seed) {
  Vec d = randomVec(n, -1.5, 1.5, seed);
  return std::vector<float>(d.begin(), d.end());
}

inline View<const float> in(const std::vector<float> &v, const Shape &s) {
  return View<const float>{v.data(), s};
}
inline View<float> out(std::vector<float> &v, const Shape &s) {
  return View<float>{v.data(), s};
}

/// Within f32 rounding of a few sums of at most T terms each: 1e-5 of the
/// values' scale (at least 1).
inline void expectClose(const std::vector<float> &a,
                        const std::vector<float> &b, const char *what) {
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = worseOf(worst, std::abs(double(a[i]) - double(b[i])));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  EXPECT_LE(worst, 1e-5 * std::max(1.0, scale)) << what;
}

} // namespace whale::rt::testing

#endif
