//===- AttentionReference.h - the CPU's attention as the kernels' truth ---===//
//
// What the GPU attention plans' CPU tests compare against: random q, k, v
// and dout for a shape, the CPU device's attention and its gradients, and
// a comparison that fails on NaN.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_RUNTIME_ATTENTIONREFERENCE_H
#define WHALE_TEST_UNIT_RUNTIME_ATTENTIONREFERENCE_H

#include "../RandomValues.h"
#include "runtime/cpu/CpuDevice.h"
#include "runtime/cuda/AttentionPlan.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace whale::testing {

/// x with every element rounded to bf16 where `amp` (an operand as a GPU
/// kernel under amp's storage reads it).
inline std::vector<float> roundedOperand(std::vector<float> x, bool amp) {
  if (amp)
    for (float &v : x)
      v = rt::roundToBf16(v);
  return x;
}

/// One attention problem [heads, t, e] (t == tk) and the CPU's answers.
struct AttentionReference {
  std::vector<float> q, k, v, dout; ///< inputs, from seeds seed..seed+3
  std::vector<float> out, dq, dk, dv;
};

/// The CPU device's attention of `d` on random data, its matmuls rounded
/// to bf16 under `amp` (as the GPU's amp path rounds).
inline AttentionReference cpuAttention(const rt::cuda::AttentionDims &d,
                                       unsigned seed, bool amp) {
  static rt::CpuDevice dev("cpu:attention-reference",
                           rt::CpuDeviceOptions{2, 0});
  const rt::Shape qs{d.heads, d.t, d.e};
  const int64_t n = rt::numElements(qs);
  AttentionReference r;
  r.q = randomValues(n, seed);
  r.k = randomValues(n, seed + 1);
  r.v = randomValues(n, seed + 2);
  r.dout = randomValues(n, seed + 3);
  r.out.resize(n);
  r.dq.resize(n);
  r.dk.resize(n);
  r.dv.resize(n);
  auto in = [&](const std::vector<float> &x) {
    return rt::View<const float>{x.data(), qs};
  };
  auto out = [&](std::vector<float> &x) {
    return rt::View<float>{x.data(), qs};
  };
  dev.setMatmulPrecision(amp ? rt::MatmulPrecision::BF16
                             : rt::MatmulPrecision::F32);
  EXPECT_TRUE(dev.attention(in(r.q), in(r.k), in(r.v), d.scale,
                            rt::AttentionForm{d.causal}, out(r.out)));
  EXPECT_TRUE(dev.attentionBackward(
      in(r.q), in(r.k), in(r.v), in(r.out), in(r.dout), d.scale,
      rt::AttentionForm{d.causal}, out(r.dq), out(r.dk), out(r.dv)));
  dev.setMatmulPrecision(rt::MatmulPrecision::F32);
  return r;
}

/// `r`'s head-major [heads, t, e] operands and answers laid out as
/// d.groupHeads says: [heads / H, t, H, e], head h of batch entry b at
/// b t H e + h e (runtime/ops/AttentionShape.h).
inline AttentionReference sequenceMajor(const AttentionReference &r,
                                        const rt::cuda::AttentionDims &d) {
  auto permute = [&](const std::vector<float> &x) {
    std::vector<float> y(x.size());
    for (int64_t h = 0; h < d.heads; ++h)
      for (int64_t i = 0; i < d.t; ++i)
        for (int64_t c = 0; c < d.e; ++c)
          y[rt::cuda::headOffset(d, h, d.t) + i * rt::cuda::rowStride(d) + c] =
              x[(h * d.t + i) * d.e + c];
    return y;
  };
  AttentionReference s;
  for (auto [from, to] : {std::pair{&r.q, &s.q},
                          {&r.k, &s.k},
                          {&r.v, &s.v},
                          {&r.dout, &s.dout},
                          {&r.out, &s.out},
                          {&r.dq, &s.dq},
                          {&r.dk, &s.dk},
                          {&r.dv, &s.dv}})
    *to = permute(*from);
  return s;
}

/// got within `tolerance` of want, relative beyond magnitude 1; a NaN in
/// got fails.
inline void expectAllClose(const std::vector<float> &got,
                           const std::vector<float> &want, float tolerance,
                           const std::string &what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << " at " << i;
    ASSERT_NEAR(got[i], want[i], tolerance * std::max(1.0f, std::fabs(want[i])))
        << what << " at " << i;
  }
}

} // namespace whale::testing

#endif
