//===- Bf16AttentionTest.cpp - attention on amp's bf16 storage ------------===//
//
// Under amp's storage whale_rt_attention reads bf16 q, k and v and stores
// its output in bf16 (rounded once) or fp32, and whale_rt_attention_grad
// reads the forward's operands and output in bf16 with dout and the
// gradients in fp32. Their numbers are the fp32 calls' on the widened
// values: these pin that through the C ABI, in both layouts, and the types
// each refuses.
//
//===----------------------------------------------------------------------===//

#include "Bf16Tensors.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace {

using Ctx = whale::testing::Bf16Runtime;
using whale::testing::expectStoredAs;

/// [batch, T, E] (head-major, two batch entries as heads) or [batch, T, H,
/// E] (sequence-major).
std::vector<int64_t> shapeOf(bool sequenceMajor, int64_t t) {
  return sequenceMajor ? std::vector<int64_t>{2, t, 3, 8}
                       : std::vector<int64_t>{2, t, 8};
}

int32_t formOf(bool causal, bool sequenceMajor) {
  return (causal ? WHALE_RT_ATTENTION_CAUSAL : 0) |
         (sequenceMajor ? WHALE_RT_ATTENTION_SEQUENCE_MAJOR : 0);
}

std::string nameOf(bool causal, bool sequenceMajor) {
  return std::string(causal ? "causal" : "full") +
         (sequenceMajor ? ", sequence-major" : ", head-major");
}

TEST(Bf16Attention, IsTheFp32CallOnTheStoredValuesRoundedOnce) {
  for (bool causal : {false, true})
    for (bool seq : {false, true})
      for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)}) {
        Ctx rt;
        const std::vector<int64_t> s = shapeOf(seq, 6);
        auto [q, qf] = rt.pair(s);
        auto [k, kf] = rt.pair(s);
        auto [v, vf] = rt.pair(s);
        whale_rt_tensor *out = rt.make(stored, s);
        ASSERT_EQ(
            whale_rt_attention(rt.ctx, q, k, v, 0.35, formOf(causal, seq), out),
            WHALE_RT_OK)
            << whale_rt_last_error(rt.ctx);
        whale_rt_tensor *ref = rt.make(WHALE_RT_F32, s);
        ASSERT_EQ(whale_rt_attention(rt.ctx, qf, kf, vf, 0.35,
                                     formOf(causal, seq), ref),
                  WHALE_RT_OK);
        expectStoredAs(out, ref,
                       nameOf(causal, seq) + ", stored " +
                           std::to_string(stored));
      }
}

TEST(Bf16Attention, GradientsAreTheFp32CallOnTheStoredValues) {
  for (bool causal : {false, true})
    for (bool seq : {false, true}) {
      Ctx rt;
      const std::vector<int64_t> s = shapeOf(seq, 5);
      auto [q, qf] = rt.pair(s);
      auto [k, kf] = rt.pair(s);
      auto [v, vf] = rt.pair(s);
      const int32_t form = formOf(causal, seq);
      // The forward's output as amp's storage keeps it, and its widening.
      whale_rt_tensor *out = rt.make(WHALE_RT_BF16, s);
      ASSERT_EQ(whale_rt_attention(rt.ctx, q, k, v, 0.35, form, out),
                WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      whale_rt_tensor *outF = rt.make(WHALE_RT_F32, s);
      ASSERT_EQ(whale_rt_cast(rt.ctx, out, outF), WHALE_RT_OK);
      whale_rt_tensor *dout = rt.f32(s);
      whale_rt_tensor *g[3], *ref[3];
      for (int i = 0; i < 3; ++i) {
        g[i] = rt.make(WHALE_RT_F32, s);
        ref[i] = rt.make(WHALE_RT_F32, s);
      }
      ASSERT_EQ(whale_rt_attention_grad(rt.ctx, q, k, v, out, dout, 0.35, form,
                                        g[0], g[1], g[2]),
                WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);
      ASSERT_EQ(whale_rt_attention_grad(rt.ctx, qf, kf, vf, outF, dout, 0.35,
                                        form, ref[0], ref[1], ref[2]),
                WHALE_RT_OK);
      const char *names[] = {"dq", "dk", "dv"};
      for (int i = 0; i < 3; ++i)
        expectStoredAs(g[i], ref[i],
                       std::string(names[i]) + ", " + nameOf(causal, seq),
                       0.001);
    }
}

TEST(Bf16Attention, RefusesMixedOrMisstoredTensors) {
  Ctx rt;
  const std::vector<int64_t> s = shapeOf(false, 4);
  auto [q, qf] = rt.pair(s);
  auto [k, kf] = rt.pair(s);
  auto [v, vf] = rt.pair(s);
  auto [o, of] = rt.pair(s);
  auto [dB, dF] = rt.pair(s);
  whale_rt_tensor *dq = rt.make(WHALE_RT_F32, s),
                  *dk = rt.make(WHALE_RT_F32, s),
                  *dv = rt.make(WHALE_RT_F32, s);
  whale_rt_tensor *dqB = rt.make(WHALE_RT_BF16, s);
  auto refuses = whale::testing::refusalsOf(rt);
  refuses(whale_rt_attention(rt.ctx, q, kf, v, 0.5, 0, o),
          "attention: 'k' is f32, expected bf16 as 'q' is");
  refuses(whale_rt_attention(rt.ctx, qf, kf, vf, 0.5, 0, o),
          "attention: 'out' is bf16, expected f32");
  refuses(whale_rt_attention_grad(rt.ctx, q, k, v, of, dF, 0.5, 0, dq, dk, dv),
          "attention_grad: 'out' is f32, expected bf16 as 'q' is");
  refuses(whale_rt_attention_grad(rt.ctx, q, k, v, o, dB, 0.5, 0, dq, dk, dv),
          "attention_grad: 'dout' is bf16, expected f32");
  refuses(whale_rt_attention_grad(rt.ctx, q, k, v, o, dF, 0.5, 0, dqB, dk, dv),
          "attention_grad: 'dq' is bf16, expected f32");
}

} // namespace
