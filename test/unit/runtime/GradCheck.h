//===- GradCheck.h - kernels against finite differences ---------*- C++ -*-===//
//
// A backward kernel is right when, for a random projection w of the output,
// the gradient it returns equals the central difference of sum(w * forward)
// at every input element. In double precision with h = 1e-6 the difference
// is exact to about 1e-9 for smooth functions (truncation h^2, rounding
// eps / h), so 1e-6 relative leaves a wide margin while catching any real
// mistake, which is of the order of the gradient itself.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_RUNTIME_GRADCHECK_H
#define WHALE_TEST_UNIT_RUNTIME_GRADCHECK_H

#include "runtime/cpu/Kernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace whale::rt::testing {

using Vec = std::vector<double>;

/// A shape as a test name's part: "3x4", "scalar" for rank 0.
inline std::string shapeName(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  for (int64_t d : shape)
    s += (s.empty() ? "" : "x") + std::to_string(d);
  return s;
}

inline std::string opName(cpu::BinaryOp op) {
  const char *names[] = {"Add", "Sub", "Mul", "Div"};
  return names[static_cast<int>(op)];
}
inline std::string opName(cpu::UnaryOp op) {
  const char *names[] = {"Neg", "Relu", "Gelu", "Tanh", "Exp", "Log", "Sqrt"};
  return names[static_cast<int>(op)];
}
inline std::string opName(cpu::ReduceOp op) {
  const char *names[] = {"Sum", "Mean", "Max"};
  return names[static_cast<int>(op)];
}

inline Vec randomVec(size_t n, double lo, double hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Vec v(n);
  for (double &x : v)
    x = dist(gen);
  return v;
}

inline View<const double> cview(const Vec &v, Shape s) {
  return View<const double>{v.data(), std::move(s)};
}
inline View<double> mview(Vec &v, Shape s) {
  return View<double>{v.data(), std::move(s)};
}

using Forward = std::function<Vec(const std::vector<Vec> &)>;
/// Gradients of every input from dout; an empty Vec skips that input.
using Backward =
    std::function<std::vector<Vec>(const std::vector<Vec> &, const Vec &)>;

inline void gradCheck(std::vector<Vec> inputs, const Forward &forward,
                      const Backward &backward, double tol = 1e-6,
                      double h = 1e-6) {
  Vec out = forward(inputs);
  Vec w = randomVec(out.size(), -1, 1, 1234);
  std::vector<Vec> grads = backward(inputs, w);
  ASSERT_EQ(grads.size(), inputs.size());
  auto loss = [&](const std::vector<Vec> &in) {
    Vec y = forward(in);
    double l = 0;
    for (size_t i = 0; i < y.size(); ++i)
      l += y[i] * w[i];
    return l;
  };
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (grads[k].empty())
      continue;
    ASSERT_EQ(grads[k].size(), inputs[k].size()) << "input " << k;
    for (size_t j = 0; j < inputs[k].size(); ++j) {
      std::vector<Vec> plus = inputs, minus = inputs;
      plus[k][j] += h;
      minus[k][j] -= h;
      double numeric = (loss(plus) - loss(minus)) / (2 * h);
      double analytic = grads[k][j];
      double scale = std::max({1.0, std::fabs(numeric), std::fabs(analytic)});
      ASSERT_NEAR(analytic, numeric, tol * scale)
          << "input " << k << " element " << j;
    }
  }
}

/// A device with several threads, so the parallel paths run in every test.
inline CpuDevice &testDevice() {
  static CpuDevice dev("cpu:test", CpuDeviceOptions{3, 0});
  return dev;
}

} // namespace whale::rt::testing

namespace whale::rt::cpu {
// gtest prints a test's parameter into ctest's name; print ops by name.
inline void PrintTo(BinaryOp op, std::ostream *os) {
  *os << testing::opName(op);
}
inline void PrintTo(UnaryOp op, std::ostream *os) {
  *os << testing::opName(op);
}
inline void PrintTo(ReduceOp op, std::ostream *os) {
  *os << testing::opName(op);
}
} // namespace whale::rt::cpu

#endif
