//===- ExpMathTest.cpp - the vectorizable exp against libm's --------------===//

#include "runtime/cpu/ExpMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace {

using whale::rt::cpu::vectorExp;

TEST(ExpMath, WithinTwoTenMillionthsOfLibmOverItsRange) {
  double worst = 0;
  float worstAt = 0;
  // Every 1/1024 from -87.3 to 88.3, and the points between.
  for (int i = -87 * 2048 - 600; i <= 88 * 2048 + 600; ++i) {
    const float x = static_cast<float>(i) / 2048.0f;
    const double want = std::exp(static_cast<double>(x));
    const double rel = std::fabs(vectorExp(x) - want) / want;
    if (rel > worst) {
      worst = rel;
      worstAt = x;
    }
  }
  EXPECT_LT(worst, 2e-7) << "at " << worstAt;
  EXPECT_EQ(vectorExp(0.0f), 1.0f);
}

TEST(ExpMath, EdgesStayFiniteZeroOrNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(vectorExp(-inf), 0.0f);
  EXPECT_EQ(vectorExp(-100.0f), 0.0f); // libm: 3.7e-44, a subnormal
  EXPECT_TRUE(std::isnan(vectorExp(std::nanf(""))));
  EXPECT_TRUE(std::isfinite(vectorExp(88.5f)));
  EXPECT_GT(vectorExp(88.5f), 1e38f);
  EXPECT_EQ(vectorExp(1.0), std::exp(1.0)); // double is libm's
}

} // namespace
