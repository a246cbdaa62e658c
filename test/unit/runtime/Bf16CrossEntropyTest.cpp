//===- Bf16CrossEntropyTest.cpp - the loss on amp's stored logits ---------===//
//
// Under amp's storage whale_rt_cross_entropy and its gradient read the
// logits in bf16, as the LM head stores them, and compute in fp32: the
// loss, dloss and the logits' gradient are f32. Their numbers are the fp32
// calls' on the widened logits, exactly; these pin that through the C ABI,
// with i32 and i64 labels, and the types each refuses. The head's gradient
// rounded and summed in one call is the gradient's bits, then those of
// whale_rt_round_and_sum.
//
//===----------------------------------------------------------------------===//

#include "Bf16Tensors.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Ctx = whale::testing::Bf16Runtime;
using whale::testing::expectStoredAs;

/// Labels of `shape` in [0, classes), i32 or i64.
whale_rt_tensor *labelsOf(Ctx &rt, int32_t dtype, std::vector<int64_t> shape,
                          int64_t classes) {
  whale_rt_tensor *y = rt.make(dtype, shape);
  for (int64_t i = 0, n = whale::testing::numel(y); i < n; ++i) {
    const int64_t label = (i * 7 + 3) % classes;
    if (dtype == WHALE_RT_I32)
      Ctx::data<int32_t>(y)[i] = static_cast<int32_t>(label);
    else
      Ctx::data<int64_t>(y)[i] = label;
  }
  return y;
}

TEST(Bf16CrossEntropy, IsTheFp32CallOnTheStoredLogits) {
  for (int32_t labelType : {int32_t(WHALE_RT_I32), int32_t(WHALE_RT_I64)}) {
    Ctx rt;
    // Logits of a few units (deviation 3), 37 classes: rows that no
    // vector load covers whole.
    auto [logits, wide] = rt.pair({2, 5, 37}, 3.0f);
    whale_rt_tensor *y = labelsOf(rt, labelType, {2, 5}, 37);
    whale_rt_tensor *loss = rt.make(WHALE_RT_F32, {2, 5}),
                    *ref = rt.make(WHALE_RT_F32, {2, 5});
    ASSERT_EQ(whale_rt_cross_entropy(rt.ctx, logits, y, loss), WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    ASSERT_EQ(whale_rt_cross_entropy(rt.ctx, wide, y, ref), WHALE_RT_OK);
    expectStoredAs(loss, ref, "loss");

    whale_rt_tensor *dloss = rt.f32({2, 5});
    whale_rt_tensor *g = rt.make(WHALE_RT_F32, {2, 5, 37}),
                    *gRef = rt.make(WHALE_RT_F32, {2, 5, 37});
    ASSERT_EQ(whale_rt_cross_entropy_grad(rt.ctx, logits, y, dloss, g),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    ASSERT_EQ(whale_rt_cross_entropy_grad(rt.ctx, wide, y, dloss, gRef),
              WHALE_RT_OK);
    expectStoredAs(g, gRef, "dlogits", 0.001);
  }
}

TEST(Bf16CrossEntropy, RefusesBf16LossesAndGradientsAndBadLabels) {
  Ctx rt;
  auto [logits, wide] = rt.pair({4, 6});
  auto [lossB, lossF] = rt.pair({4});
  whale_rt_tensor *y = labelsOf(rt, WHALE_RT_I32, {4}, 6);
  whale_rt_tensor *g = rt.make(WHALE_RT_F32, {4, 6}),
                  *gB = rt.make(WHALE_RT_BF16, {4, 6});
  auto refuses = whale::testing::refusalsOf(rt);
  refuses(whale_rt_cross_entropy(rt.ctx, logits, y, lossB),
          "cross_entropy: 'out' is bf16, expected f32");
  refuses(whale_rt_cross_entropy_grad(rt.ctx, logits, y, lossB, g),
          "cross_entropy_grad: 'dloss' is bf16, expected f32");
  refuses(whale_rt_cross_entropy_grad(rt.ctx, logits, y, lossF, gB),
          "cross_entropy_grad: 'dlogits' is bf16, expected f32");
  // A label outside the classes, on the stored logits as on fp32 ones.
  Ctx::data<int32_t>(y)[2] = 6;
  EXPECT_NE(whale_rt_cross_entropy(rt.ctx, logits, y, lossF), WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("label"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

/// The bits of `t` (bf16 or f32) as words: NaN payloads and signed zeros
/// compared too.
std::vector<uint32_t> bitsOf(whale_rt_tensor *t) {
  std::vector<uint32_t> out(whale::testing::numel(t));
  for (size_t i = 0; i < out.size(); ++i) {
    if (whale_rt_tensor_dtype(t) == WHALE_RT_BF16)
      out[i] = Ctx::data<uint16_t>(t)[i];
    else
      std::memcpy(&out[i], Ctx::data<float>(t) + i, sizeof(float));
  }
  return out;
}

// The LM head's gradient as one call (whale_rt_cross_entropy_grad_rounded):
// the bits of the gradient, then its rounding and the bias's sum
// (whale_rt_round_and_sum), on bf16 and f32 logits, i32 and i64 labels,
// summed to the last dimension or the last two.
TEST(Bf16CrossEntropy, RoundedGradientIsTheGradientRoundedAndSummed) {
  for (int32_t labelType : {int32_t(WHALE_RT_I32), int32_t(WHALE_RT_I64)})
    for (bool bf16 : {true, false})
      for (std::vector<int64_t> sumShape :
           {std::vector<int64_t>{37}, std::vector<int64_t>{5, 37}}) {
        Ctx rt;
        auto [stored, wide] = rt.pair({2, 5, 37}, 3.0f);
        whale_rt_tensor *logits = bf16 ? stored : wide;
        whale_rt_tensor *y = labelsOf(rt, labelType, {2, 5}, 37);
        whale_rt_tensor *dloss = rt.f32({2, 5});
        whale_rt_tensor *rounded = rt.make(WHALE_RT_BF16, {2, 5, 37}),
                        *sum = rt.make(WHALE_RT_F32, sumShape);
        ASSERT_EQ(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, y, dloss,
                                                      rounded, sum),
                  WHALE_RT_OK)
            << whale_rt_last_error(rt.ctx);
        whale_rt_tensor *g = rt.make(WHALE_RT_F32, {2, 5, 37}),
                        *gRounded = rt.make(WHALE_RT_BF16, {2, 5, 37}),
                        *gSum = rt.make(WHALE_RT_F32, sumShape);
        ASSERT_EQ(whale_rt_cross_entropy_grad(rt.ctx, logits, y, dloss, g),
                  WHALE_RT_OK);
        ASSERT_EQ(whale_rt_round_and_sum(rt.ctx, g, gRounded, gSum),
                  WHALE_RT_OK);
        const std::string what = std::string(bf16 ? "bf16" : "f32") +
                                 " logits, labels " +
                                 std::to_string(labelType) + ", sum of rank " +
                                 std::to_string(sumShape.size());
        EXPECT_EQ(bitsOf(rounded), bitsOf(gRounded)) << what;
        EXPECT_EQ(bitsOf(sum), bitsOf(gSum)) << what;
        // Not all zeros: the gradient has the weight of a probability.
        expectStoredAs(sum, gSum, what, 1e-4);
      }
}

TEST(Bf16CrossEntropy, RoundedGradientRefusesWhatDoesNotFit) {
  Ctx rt;
  auto [logits, wide] = rt.pair({4, 6});
  auto [dlossB, dloss] = rt.pair({4});
  whale_rt_tensor *y = labelsOf(rt, WHALE_RT_I32, {4}, 6);
  whale_rt_tensor *rounded = rt.make(WHALE_RT_BF16, {4, 6}),
                  *sum = rt.make(WHALE_RT_F32, {6});
  auto refuses = whale::testing::refusalsOf(rt);
  refuses(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, y, dlossB,
                                              rounded, sum),
          "cross_entropy_grad_rounded: 'dloss' is bf16, expected f32");
  refuses(whale_rt_cross_entropy_grad_rounded(
              rt.ctx, logits, y, dloss, rt.make(WHALE_RT_F32, {4, 6}), sum),
          "cross_entropy_grad_rounded: 'rounded' is f32, expected bf16");
  refuses(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, y, dloss, rounded,
                                              rt.make(WHALE_RT_F32, {4})),
          "cross_entropy_grad_rounded: shapes do not fit [4, 6] (the sum [4])");
  refuses(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, y, dloss, nullptr,
                                              sum),
          "cross_entropy_grad_rounded: 'rounded' is null");
  refuses(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, dloss, dloss,
                                              rounded, sum),
          "cross_entropy_grad_rounded: shapes do not fit");
  // A label outside the classes is named, as the unfused gradient names it.
  Ctx::data<int32_t>(y)[2] = 6;
  EXPECT_NE(whale_rt_cross_entropy_grad_rounded(rt.ctx, logits, y, dloss,
                                                rounded, sum),
            WHALE_RT_OK);
  EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find("label"),
            std::string::npos)
      << whale_rt_last_error(rt.ctx);
}

} // namespace
