//===- Bf16LinearLayerTest.cpp - linear layers on amp's bf16 storage ------===//
//
// Under amp's storage the epilogue ops read bf16 operands: whale_rt_linear
// sums the product in fp32 and applies the bias and GELU before it rounds
// anything, whale_rt_linear_weight_grad sums the bias's gradient from the
// bf16 output gradient its GEMM reads, whale_rt_gelu_matmul_grad reads the
// preactivation as it is stored. Their numbers are the fp32 calls' on the
// widened operands, each result rounded once where it is stored in bf16:
// these pin that through the C ABI, and the types each refuses. So does
// whale_rt_round_and_sum, the rounding of a gradient with its bias's sum.
//
//===----------------------------------------------------------------------===//

#include "Bf16Tensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

using Ctx = whale::testing::Bf16Runtime;
using whale::testing::expectStoredAs;

TEST(Bf16LinearLayer, SumsInFp32AndRoundsOnceAtTheStore) {
  const int64_t b = 2, m = 5, k = 24, n = 16;
  for (int transW = 0; transW < 2; ++transW)
    for (int gelu = 0; gelu < 2; ++gelu)
      for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)})
        for (int32_t preType : {int32_t(WHALE_RT_F32), stored}) {
          Ctx rt;
          auto [x, xf] = rt.pair({b, m, k});
          auto [w, wf] = rt.pair(transW ? std::vector<int64_t>{n, k}
                                        : std::vector<int64_t>{k, n},
                                 0.3f);
          whale_rt_tensor *bias = rt.f32({n});
          whale_rt_tensor *out = rt.make(stored, {b, m, n});
          whale_rt_tensor *pre = gelu ? rt.make(preType, {b, m, n}) : nullptr;
          ASSERT_EQ(whale_rt_linear(rt.ctx, x, w, bias, out, pre, transW, gelu),
                    WHALE_RT_OK)
              << whale_rt_last_error(rt.ctx);
          // The fp32 layer on the widened operands.
          whale_rt_tensor *ref = rt.make(WHALE_RT_F32, {b, m, n});
          whale_rt_tensor *refPre =
              gelu ? rt.make(WHALE_RT_F32, {b, m, n}) : nullptr;
          ASSERT_EQ(
              whale_rt_linear(rt.ctx, xf, wf, bias, ref, refPre, transW, gelu),
              WHALE_RT_OK);
          const std::string what = "transpose " + std::to_string(transW) +
                                   ", gelu " + std::to_string(gelu) +
                                   ", stored " + std::to_string(stored);
          expectStoredAs(out, ref, what);
          if (pre)
            expectStoredAs(pre, refPre, what + " (pre)");
        }
}

TEST(Bf16LinearLayer, GradientsAreTheFp32CallsOnTheStoredValues) {
  const int64_t b = 2, m = 6, k = 16, n = 24;
  for (int transW = 0; transW < 2; ++transW) {
    Ctx rt;
    std::vector<int64_t> ws =
        transW ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
    auto [x, xf] = rt.pair({b, m, k});
    auto [dy, dyf] = rt.pair({b, m, n});
    whale_rt_tensor *dw = rt.make(WHALE_RT_F32, ws);
    whale_rt_tensor *db = rt.make(WHALE_RT_F32, {n});
    ASSERT_EQ(whale_rt_linear_weight_grad(rt.ctx, x, dy, dw, db, transW),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    whale_rt_tensor *refDw = rt.make(WHALE_RT_F32, ws);
    whale_rt_tensor *refDb = rt.make(WHALE_RT_F32, {n});
    ASSERT_EQ(
        whale_rt_linear_weight_grad(rt.ctx, xf, dyf, refDw, refDb, transW),
        WHALE_RT_OK);
    expectStoredAs(dw, refDw, "dw, transpose " + std::to_string(transW));
    expectStoredAs(db, refDb, "dbias, transpose " + std::to_string(transW));

    // Through the GELU: the preactivation [.., k] read as it is stored.
    auto [w, wf] = rt.pair(ws, 0.3f);
    for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)}) {
      auto [preB, preF] = rt.pair({b, m, k}, 2.0f);
      whale_rt_tensor *pre = stored == WHALE_RT_BF16 ? preB : preF;
      whale_rt_tensor *dpre = rt.make(stored, {b, m, k});
      ASSERT_EQ(whale_rt_gelu_matmul_grad(rt.ctx, pre, w, dy, dpre, transW),
                WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      whale_rt_tensor *ref = rt.make(WHALE_RT_F32, {b, m, k});
      ASSERT_EQ(whale_rt_gelu_matmul_grad(rt.ctx, preF, wf, dyf, ref, transW),
                WHALE_RT_OK);
      expectStoredAs(dpre, ref,
                     "dpre, transpose " + std::to_string(transW) + ", stored " +
                         std::to_string(stored));
    }
  }
}

TEST(Bf16LinearLayer, RefusesMixedOrMisstoredTensors) {
  Ctx rt;
  auto [x, xf] = rt.pair({4, 8});
  auto [w, wf] = rt.pair({8, 6});
  auto [dy, dyf] = rt.pair({4, 6});
  whale_rt_tensor *bias = rt.f32({6});
  auto [biasB, unused] = rt.pair({6});
  whale_rt_tensor *out = rt.make(WHALE_RT_BF16, {4, 6});
  auto refuses = whale::testing::refusalsOf(rt);
  refuses(whale_rt_linear(rt.ctx, x, wf, bias, out, nullptr, 0, 0),
          "linear: 'w' is f32, expected bf16 as 'x' is");
  refuses(whale_rt_linear(rt.ctx, x, w, biasB, out, nullptr, 0, 0),
          "linear: 'bias' is bf16, expected f32");
  refuses(whale_rt_linear(rt.ctx, xf, wf, bias, out, nullptr, 0, 0),
          "linear: 'out' is bf16, expected f32");
  whale_rt_tensor *dwB = rt.make(WHALE_RT_BF16, {8, 6});
  whale_rt_tensor *db = rt.make(WHALE_RT_F32, {6});
  refuses(whale_rt_linear_weight_grad(rt.ctx, x, dy, dwB, db, 0),
          "linear_weight_grad: 'dw' is bf16, expected f32");
  refuses(whale_rt_linear_weight_grad(rt.ctx, x, dyf, dwB, db, 0),
          "linear_weight_grad: 'dout' is f32, expected bf16 as 'x' is");
  auto [pre, preF] = rt.pair({4, 8});
  whale_rt_tensor *dpreF = rt.make(WHALE_RT_F32, {4, 8});
  refuses(whale_rt_gelu_matmul_grad(rt.ctx, pre, w, dy, dpreF, 0),
          "gelu_matmul_grad: 'dpre' is f32, expected 'pre''s type, bf16");
}

// An activation gradient's rounding for its GEMMs beside its bias's
// gradient (whale_rt_round_and_sum): the bits of whale_rt_cast and of
// whale_rt_binary_grad's sum for a bias added to every row, special values
// included.
TEST(Bf16LinearLayer, RoundAndSumIsTheCastAndTheBiasGradient) {
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>>
      shapes = {{{2, 5, 24}, {24}},
                {{2, 5, 24}, {5, 24}},
                {{1, 7, 16}, {16}},
                {{1, 16}, {16}},
                {{300, 40}, {40}}};
  for (const auto &[xs, ss] : shapes) {
    Ctx rt;
    whale_rt_tensor *x = rt.f32(xs);
    float *xd = Ctx::data<float>(x);
    // A tie between two bf16 values (to even: down), the next float above
    // it (up), an infinity and a NaN, in the first column.
    xd[0] = 1.0f + 1.0f / 256;
    if (whale::testing::numel(x) > 3 * ss.back()) {
      xd[ss.back()] = std::nextafter(1.0f + 1.0f / 256, 2.0f);
      xd[2 * ss.back()] = INFINITY;
      xd[3 * ss.back() + 1] = NAN;
    }
    whale_rt_tensor *rounded = rt.make(WHALE_RT_BF16, xs);
    whale_rt_tensor *sum = rt.make(WHALE_RT_F32, ss);
    ASSERT_EQ(whale_rt_round_and_sum(rt.ctx, x, rounded, sum), WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    whale_rt_tensor *refRounded = rt.make(WHALE_RT_BF16, xs);
    whale_rt_tensor *refSum = rt.make(WHALE_RT_F32, ss);
    whale_rt_tensor *bias = rt.f32(ss);
    ASSERT_EQ(whale_rt_cast(rt.ctx, x, refRounded), WHALE_RT_OK);
    ASSERT_EQ(
        whale_rt_binary_grad(rt.ctx, WHALE_RT_ADD, x, bias, x, nullptr, refSum),
        WHALE_RT_OK);
    const std::string what = "x of " + std::to_string(xs.size()) +
                             " dimensions, sum of " + std::to_string(ss.size());
    const int64_t n = whale::testing::numel(x), w = whale::testing::numel(sum);
    EXPECT_EQ(Ctx::data<uint16_t>(rounded)[0], 0x3f80) << what; // to even
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(Ctx::data<uint16_t>(rounded)[i],
                Ctx::data<uint16_t>(refRounded)[i])
          << what << " " << i;
    for (int64_t j = 0; j < w; ++j) {
      uint32_t got, want;
      std::memcpy(&got, Ctx::data<float>(sum) + j, 4);
      std::memcpy(&want, Ctx::data<float>(refSum) + j, 4);
      ASSERT_EQ(got, want) << what << " column " << j;
    }
  }
}

TEST(Bf16LinearLayer, RoundAndSumRefusesWhatIsNotARoundingAndABiasSum) {
  Ctx rt;
  whale_rt_tensor *x = rt.f32({4, 6});
  auto [xb, unused] = rt.pair({4, 6});
  whale_rt_tensor *rounded = rt.make(WHALE_RT_BF16, {4, 6});
  whale_rt_tensor *sum = rt.make(WHALE_RT_F32, {6});
  auto refuses = whale::testing::refusalsOf(rt);
  refuses(whale_rt_round_and_sum(rt.ctx, xb, rounded, sum),
          "round_and_sum: 'x' is bf16, expected f32");
  refuses(whale_rt_round_and_sum(rt.ctx, x, rt.make(WHALE_RT_F32, {4, 6}), sum),
          "round_and_sum: 'rounded' is f32, expected bf16");
  refuses(whale_rt_round_and_sum(rt.ctx, x, nullptr, sum),
          "round_and_sum: 'rounded' is null");
  refuses(
      whale_rt_round_and_sum(rt.ctx, x, rt.make(WHALE_RT_BF16, {6, 4}), sum),
      "round_and_sum: the output is [6, 4] but the result is [4, 6]");
  refuses(
      whale_rt_round_and_sum(rt.ctx, x, rounded, rt.make(WHALE_RT_F32, {4})),
      "round_and_sum: 'sum' is [4], expected the last dimensions of x [4, 6]");
  refuses(
      whale_rt_round_and_sum(rt.ctx, x, rounded, rt.make(WHALE_RT_F32, {4, 6})),
      "round_and_sum: 'sum' is [4, 6]");
}

} // namespace
