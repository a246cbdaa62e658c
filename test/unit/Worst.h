//===- Worst.h - the worst of differences, NaN included -----------*- C++ -*-===//
//
// std::max(worst, d) keeps `worst` when d is NaN (NaN compares false), so a
// check that takes the worst difference over a result would pass a result
// of NaNs. worseOf keeps a NaN, which then fails every EXPECT_LT.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_WORST_H
#define WHALE_TEST_UNIT_WORST_H

#include <algorithm>
#include <cmath>
#include <limits>

inline double worseOf(double worst, double difference) {
  if (std::isnan(worst) || std::isnan(difference))
    return std::numeric_limits<double>::quiet_NaN();
  return std::max(worst, difference);
}

#endif
