//===- Bf16Tensors.h - bf16 operands and their fp32 twins for tests -*- C++
//-*-===//
//
// The bf16 kernels' tests compare each call on bf16 operands with the fp32
// call on the same values widened: a context that makes such pairs, and
// the check that a result is the fp32 reference as stored (exactly, or
// rounded once to bf16).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_RUNTIME_BF16TENSORS_H
#define WHALE_TEST_UNIT_RUNTIME_BF16TENSORS_H

#include "../RuntimeFixture.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace whale::testing {

inline int64_t numel(const whale_rt_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < whale_rt_tensor_rank(t); ++i)
    n *= whale_rt_tensor_shape(t)[i];
  return n;
}

struct Bf16Runtime : TestRuntime {
  explicit Bf16Runtime(uint32_t seed = 7) : TestRuntime(1, 0), rng(seed) {}
  std::mt19937 rng;

  /// A bf16 tensor of random bf16 values (normal, of deviation `scale`) and
  /// the f32 tensor of the same values.
  std::pair<whale_rt_tensor *, whale_rt_tensor *>
  pair(std::vector<int64_t> shape, float scale = 1.0f) {
    return pairFrom(rng, std::move(shape), scale);
  }
  /// The same drawn from `from` (a sequence a test runs across contexts).
  std::pair<whale_rt_tensor *, whale_rt_tensor *>
  pairFrom(std::mt19937 &from, std::vector<int64_t> shape, float scale = 1.0f) {
    whale_rt_tensor *h = make(WHALE_RT_BF16, shape);
    whale_rt_tensor *f = make(WHALE_RT_F32, shape);
    std::normal_distribution<float> normal(0.0f, scale);
    for (int64_t i = 0, n = numel(h); i < n; ++i) {
      uint16_t w = rt::bf16Bits(normal(from));
      data<uint16_t>(h)[i] = w;
      data<float>(f)[i] = rt::bf16Value(w);
    }
    return {h, f};
  }

  /// An f32 tensor of random values (normal, deviation 0.5).
  whale_rt_tensor *f32(std::vector<int64_t> shape) {
    whale_rt_tensor *t = make(WHALE_RT_F32, shape);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    for (int64_t i = 0, n = numel(t); i < n; ++i)
      data<float>(t)[i] = normal(rng);
    return t;
  }
};

/// Whether `rt`'s last call was refused as an invalid argument, its error
/// naming `message`: the refuses(status, message) of the bf16 C ABI tests.
inline auto refusalsOf(TestRuntime &rt) {
  return [&rt](whale_rt_status st, const char *message) {
    EXPECT_EQ(st, WHALE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find(message),
              std::string::npos)
        << whale_rt_last_error(rt.ctx);
  };
}

/// `got` (f32 or bf16) is `ref` (f32, its mean magnitude above
/// `minMeanAbs`, so the comparison means something) exactly: as it is, or
/// rounded once.
inline void expectStoredAs(whale_rt_tensor *got, whale_rt_tensor *ref,
                           const std::string &what, double minMeanAbs = 0.01) {
  const int64_t n = numel(ref);
  const float *r = TestRuntime::data<float>(ref);
  double norm = 0;
  for (int64_t i = 0; i < n; ++i)
    norm += std::abs(r[i]);
  EXPECT_GT(norm, minMeanAbs * static_cast<double>(n)) << what;
  for (int64_t i = 0; i < n; ++i) {
    if (whale_rt_tensor_dtype(got) == WHALE_RT_BF16)
      ASSERT_EQ(TestRuntime::data<uint16_t>(got)[i], rt::bf16Bits(r[i]))
          << what << " " << i;
    else
      ASSERT_EQ(TestRuntime::data<float>(got)[i], r[i]) << what << " " << i;
  }
}

} // namespace whale::testing

#endif
