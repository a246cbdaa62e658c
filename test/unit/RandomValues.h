//===- RandomValues.h - reproducible random test data ------------*- C++
//-*-===//

#ifndef WHALE_TEST_UNIT_RANDOMVALUES_H
#define WHALE_TEST_UNIT_RANDOMVALUES_H

#include <cstdint>
#include <random>
#include <vector>

namespace whale::testing {

/// `n` floats uniform in [lo, hi), the same for the same seed.
inline std::vector<float> randomValues(int64_t n, unsigned seed, float lo = -1,
                                       float hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v)
    x = dist(gen);
  return v;
}

} // namespace whale::testing

#endif
