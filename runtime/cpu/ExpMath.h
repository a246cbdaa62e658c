//===- ExpMath.h - an exp the compiler can put in vectors -------*- C++ -*-===//
//
// libm's expf is a call per element, so a loop of them stays scalar: a
// GPT-2-sized cross entropy (1,024 rows of 50,257 logits, forward and
// backward) spent 390 ms of a 5.4 s step there. This one is arithmetic only
// (Cephes's expf: a power of two times a degree-6 polynomial on the rest),
// so loops of it vectorize (built with -fno-trapping-math, which lets the
// compiler compute both sides of its selects), and the same bits come out
// of every vector width. It is within 2e-7 relative of libm's over the
// range it returns (8e-8 measured, test/unit/runtime/ExpMathTest.cpp);
// below about -87.3, where libm's result is subnormal or zero, it returns
// zero, and NaN stays NaN. Double keeps std::exp (gradient checks).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CPU_EXPMATH_H
#define WHALE_RUNTIME_CPU_EXPMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace whale::rt::cpu {

inline __attribute__((always_inline)) float vectorExp(float x) {
  const float in = x;
  // Keep 2^n a normal float: n in [-126, 127]. Written so that a NaN
  // fails both tests and becomes a number too: converting NaN to an
  // integer below is undefined (UBSan: a shift of a negative value).
  x = x > -87.33654f ? x : -87.33654f;
  x = x < 88.37626f ? x : 88.37626f;
  // n = x / ln 2 rounded to the nearest integer (adding and taking away
  // 1.5 * 2^23 rounds it, with no branch), the rest r = x - n ln 2 in two
  // parts.
  const float t = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
  x = x - t * 0.693359375f;
  x = x - t * -2.12194440e-4f;
  const float z = x * x;
  float y = 1.9875691500e-4f;
  y = y * x + 1.3981999507e-3f;
  y = y * x + 8.3334519073e-3f;
  y = y * x + 4.1665795894e-2f;
  y = y * x + 1.6666665459e-1f;
  y = y * x + 5.0000001201e-1f;
  y = y * z + x + 1.0f;
  const int32_t bits = (static_cast<int32_t>(t) + 127) << 23;
  float pow2n;
  std::memcpy(&pow2n, &bits, sizeof pow2n);
  const float r = in < -87.33654f ? 0.0f : y * pow2n;
  return in != in ? in : r; // NaN: clamped above to a number, given back
}

inline double vectorExp(double x) { return std::exp(x); }

} // namespace whale::rt::cpu

#endif
