//===- CudaDeviceTest.cpp - the CUDA device against the CPU device --------===//
//
// ctest label `gpu`. Every op and gradient runs through the C ABI on
// cuda:0 and on a CPU context with the same inputs, and must agree; the
// collectives run between two GPU contexts against a CPU reference. It
// links the runtime only, so it runs on a GPU machine without MLIR (the
// pack scripts/gpu-pack.sh makes). Without a GPU (or its driver, or the
// plugin) the binary says why and exits 77, which ctest counts as skipped.
//
//===----------------------------------------------------------------------===//

#include "../RandomValues.h"
#include "runtime/WhaleRuntime.h"
#include "runtime/ops/Bf16.h"
#include "runtime/ops/ElementProgram.h"
#include "test/unit/Worst.h"

#include "GpuTestMain.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <thread>
#include <utility>

namespace {

using whale::testing::randomValues;

using Shape = std::vector<int64_t>;

int64_t count(const Shape &s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// One context on the GPU and one on the CPU, fed the same inputs.
struct Pair {
  whale_rt_context *gpu = nullptr, *cpu = nullptr;
  explicit Pair(const char *gpuName = "cuda:0") {
    char why[512] = "";
    EXPECT_EQ(whale_rt_context_open(gpuName, 1, 0, 7, &gpu, why, sizeof why),
              WHALE_RT_OK)
        << why;
    cpu = whale_rt_context_create("cpu:0", 4, 0, 7);
  }
  ~Pair() {
    whale_rt_context_destroy(gpu);
    whale_rt_context_destroy(cpu);
  }
  /// Both contexts under amp = "bf16".
  void amp() {
    for (whale_rt_context *ctx : {gpu, cpu})
      ASSERT_EQ(whale_rt_set_amp(ctx, WHALE_RT_AMP_BF16), WHALE_RT_OK);
  }

  /// The same tensor in both contexts: [0] GPU, [1] CPU.
  struct Both {
    whale_rt_tensor *t[2];
    Shape shape;
  };
  Both make(int32_t dtype, const Shape &s) {
    Both b{{nullptr, nullptr}, s};
    whale_rt_context *ctxs[2] = {gpu, cpu};
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(whale_rt_tensor_create(ctxs[i], dtype,
                                       static_cast<int32_t>(s.size()), s.data(),
                                       &b.t[i]),
                WHALE_RT_OK)
          << whale_rt_last_error(ctxs[i]);
    return b;
  }
  Both f32(const Shape &s, const std::vector<float> &values) {
    Both b = make(WHALE_RT_F32, s);
    write(b, values.data(), values.size() * sizeof(float));
    return b;
  }
  Both random(const Shape &s, unsigned seed, float lo = -1, float hi = 1) {
    return f32(s, randomValues(count(s), seed, lo, hi));
  }
  /// `from` converted to `dtype` (f32 and bf16 either way) in both contexts.
  Both cast(const Both &from, int32_t dtype) {
    Both to = make(dtype, from.shape);
    whale_rt_context *ctxs[2] = {gpu, cpu};
    for (int i = 0; i < 2; ++i)
      EXPECT_EQ(whale_rt_cast(ctxs[i], from.t[i], to.t[i]), WHALE_RT_OK)
          << whale_rt_last_error(ctxs[i]);
    return to;
  }
  Both ids(const Shape &s, const std::vector<int32_t> &values) {
    Both b = make(WHALE_RT_I32, s);
    write(b, values.data(), values.size() * sizeof(int32_t));
    return b;
  }
  void write(Both &b, const void *data, size_t bytes) {
    EXPECT_EQ(whale_rt_tensor_write(gpu, b.t[0], data, bytes), WHALE_RT_OK)
        << whale_rt_last_error(gpu);
    EXPECT_EQ(whale_rt_tensor_write(cpu, b.t[1], data, bytes), WHALE_RT_OK);
  }
  std::vector<float> read(const Both &b, int which) {
    std::vector<float> out(count(b.shape));
    whale_rt_context *ctx = which == 0 ? gpu : cpu;
    EXPECT_EQ(whale_rt_tensor_read(ctx, b.t[which], out.data(),
                                   out.size() * sizeof(float)),
              WHALE_RT_OK)
        << whale_rt_last_error(ctx);
    return out;
  }
  /// Runs `op` in both contexts (argument: context, 0 for the GPU's
  /// tensors, 1 for the CPU's) and compares `outputs`.
  void check(const std::string &what, const std::vector<Both> &outputs,
             const std::function<whale_rt_status(whale_rt_context *, int)> &op,
             float tolerance = 1e-4f) {
    ASSERT_EQ(op(gpu, 0), WHALE_RT_OK)
        << what << ": " << whale_rt_last_error(gpu);
    ASSERT_EQ(op(cpu, 1), WHALE_RT_OK)
        << what << ": " << whale_rt_last_error(cpu);
    for (const Both &o : outputs) {
      std::vector<float> g = read(o, 0), c = read(o, 1);
      double worst = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        if (std::isinf(c[i]) && g[i] == c[i])
          continue;
        worst = worseOf(worst, std::fabs(double(g[i]) - c[i]) /
                                    std::max(1.0, std::fabs(double(c[i]))));
      }
      EXPECT_LT(worst, tolerance) << what;
      std::printf("  %-24s worst relative difference %.2e\n", what.c_str(),
                  worst);
    }
  }
};

/// Cross entropy and its gradient on `logits` (f32 or bf16) on `p`'s GPU
/// against its CPU; `what` names the case.
void checkLossAndGradient(Pair &p, const std::string &what,
                          const Pair::Both &logits, const Pair::Both &labels,
                          const Pair::Both &dloss) {
  const Shape &shape = logits.shape;
  auto loss = p.make(WHALE_RT_F32, labels.shape);
  auto dlogits = p.make(WHALE_RT_F32, shape);
  p.check("cross_entropy " + what, {loss}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_cross_entropy(ctx, logits.t[i], labels.t[i], loss.t[i]);
  });
  p.check("cross_entropy_grad " + what, {dlogits},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_cross_entropy_grad(ctx, logits.t[i], labels.t[i],
                                               dloss.t[i], dlogits.t[i]);
          });
}

/// Every layout of matmul and its gradients on `p`'s GPU against its CPU.
void matmulsInEveryLayout(Pair &p) {
  struct Case {
    Shape a, b;
    int ta, tb;
  };
  for (const Case &c :
       {Case{{64, 96}, {96, 48}, 0, 0}, Case{{96, 64}, {96, 48}, 1, 0},
        Case{{64, 96}, {48, 96}, 0, 1}, Case{{96, 64}, {48, 96}, 1, 1},
        Case{{4, 32, 96}, {96, 48}, 0, 0}, Case{{4, 96, 32}, {48, 96}, 1, 1},
        Case{{2, 3, 32, 16}, {2, 3, 16, 24}, 0, 0},
        Case{{2, 3, 32, 16}, {2, 3, 24, 16}, 0, 1}}) {
    auto a = p.random(c.a, 1), b = p.random(c.b, 2);
    size_t ra = c.a.size(), rb = c.b.size();
    Shape out(c.a.begin(), c.a.end() - 2);
    out.push_back(c.ta ? c.a[ra - 1] : c.a[ra - 2]);
    out.push_back(c.tb ? c.b[rb - 2] : c.b[rb - 1]);
    auto o = p.make(WHALE_RT_F32, out);
    p.check("matmul", {o}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_matmul(ctx, a.t[i], b.t[i], o.t[i], c.ta, c.tb);
    });
    auto dout = p.random(out, 3);
    auto da = p.make(WHALE_RT_F32, c.a), db = p.make(WHALE_RT_F32, c.b);
    p.check("matmul_grad", {da, db}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_matmul_grad(ctx, a.t[i], b.t[i], dout.t[i], da.t[i],
                                  db.t[i], c.ta, c.tb);
    });
  }
}

TEST(CudaKernels, MatmulInEveryLayoutAndItsGradients) {
  // Through cuBLASLt (LtGemm.h), where every call it has an algorithm for
  // goes: a shared operand under a transposed batch stays with cuBLAS.
  Pair p;
  matmulsInEveryLayout(p);
}

TEST(CudaKernels, MatmulInEveryLayoutThroughTheClassicApi) {
  // WHALE_CUDA_LT=0, read when a device runs its first GEMM: cuBLAS's
  // classic API for every call, as before cuBLASLt (A/B runs).
  setenv("WHALE_CUDA_LT", "0", 1);
  {
    Pair p;
    matmulsInEveryLayout(p);
  }
  unsetenv("WHALE_CUDA_LT");
}

TEST(CudaKernels, LinearLayersInOneGemmAsTheCpu) {
  // whale_rt_linear: cuBLASLt's bias and GELU epilogues (the sum before the
  // GELU kept in its aux output), against the CPU's composition, in fp32
  // and under amp (bf16 operands, fp32 result), with the weight either way
  // round. Widths that are not a multiple of 8 may fall back to the
  // composition: the results are the same either way.
  for (int amp = 0; amp < 2; ++amp) {
    Pair p;
    if (amp)
      p.amp();
    for (int64_t n : {64, 36})
      for (int transW = 0; transW < 2; ++transW)
        for (int gelu = 0; gelu < 2; ++gelu) {
          auto x = p.random({2, 48, 96}, 51);
          auto w = p.random(transW ? Shape{n, 96} : Shape{96, n}, 52);
          auto bias = p.random({n}, 53);
          auto out = p.make(WHALE_RT_F32, {2, 48, n});
          auto pre = p.make(WHALE_RT_F32, {2, 48, n});
          std::vector<Pair::Both> outputs = {out};
          if (gelu)
            outputs.push_back(pre);
          p.check(
              std::string(amp ? "amp " : "") + "linear" +
                  (gelu ? " gelu" : "") + (transW ? " transposed" : ""),
              outputs,
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_linear(ctx, x.t[i], w.t[i], bias.t[i], out.t[i],
                                       gelu ? pre.t[i] : nullptr, transW, gelu);
              },
              amp ? 2e-3f : 1e-4f);
        }
  }
}

TEST(CudaKernels, LinearGradientsInOneGemmAsTheCpu) {
  // whale_rt_linear_weight_grad: the weight's gradient with the bias's
  // summed in the epilogue (BGRADA or BGRADB, by the operand the output
  // gradient is); whale_rt_gelu_matmul_grad: the input's gradient with the
  // GELU's derivative applied in the epilogue (DGELU), against the CPU's
  // composition. Under amp the GPU sums the bias gradient from the bf16
  // operand the GEMM reads, the CPU from fp32: up to about 2^-9 an element
  // over 96 rows, hence the looser bound there.
  for (int amp = 0; amp < 2; ++amp) {
    Pair p;
    if (amp)
      p.amp();
    for (int64_t n : {64, 36})
      for (int transW = 0; transW < 2; ++transW) {
        const Shape ws = transW ? Shape{n, 96} : Shape{96, n};
        const std::string form = std::string(amp ? "amp " : "") +
                                 (transW ? "transposed " : "") + "n " +
                                 std::to_string(n);
        auto x = p.random({2, 48, 96}, 61);
        auto w = p.random(ws, 62);
        auto dy = p.random({2, 48, n}, 63);
        auto dw = p.make(WHALE_RT_F32, ws);
        auto db = p.make(WHALE_RT_F32, {n});
        p.check(
            "linear_weight_grad " + form, {dw, db},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_linear_weight_grad(ctx, x.t[i], dy.t[i], dw.t[i],
                                                 db.t[i], transW);
            },
            amp ? 1e-2f : 1e-4f);
        auto dpre = p.make(WHALE_RT_F32, {2, 48, 96});
        p.check(
            "gelu_matmul_grad " + form, {dpre},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_gelu_matmul_grad(ctx, x.t[i], w.t[i], dy.t[i],
                                               dpre.t[i], transW);
            },
            amp ? 2e-3f : 1e-4f);
      }
  }
}

TEST(CudaKernels, AmpBf16MatmulsRoundAsTheCpuDoes) {
  // Both devices round the inputs to bf16 the same way (ties to even) and
  // accumulate in fp32: only the order of the sums may differ.
  Pair p;
  p.amp();
  auto a = p.random({4, 64, 96}, 30), b = p.random({96, 80}, 31);
  auto out = p.make(WHALE_RT_F32, {4, 64, 80}),
       dout = p.random({4, 64, 80}, 32);
  auto da = p.make(WHALE_RT_F32, {4, 64, 96}),
       db = p.make(WHALE_RT_F32, {96, 80});
  p.check("matmul (bf16)", {out}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_matmul(ctx, a.t[i], b.t[i], out.t[i], 0, 0);
  });
  p.check("matmul_grad (bf16)", {da, db}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_matmul_grad(ctx, a.t[i], b.t[i], dout.t[i], da.t[i],
                                db.t[i], 0, 0);
  });
}

TEST(CudaKernels, LinearLayersOnBf16StorageAsTheCpu) {
  // amp's storage through the epilogue ops: bf16 operands to cuBLASLt as
  // they are stored, the bias added to the fp32 sums, the output stored in
  // fp32 or rounded once (a bf16 output beside an fp32 preactivation is
  // rounded after the GEMM), the weight's and bias's gradients in fp32,
  // the GELU's gradient read from and stored in the preactivation's type.
  // Against the CPU's composition; bf16 results (compared widened) may
  // differ by a rounding step where the sums' order moves a value across a
  // rounding boundary.
  Pair p;
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  for (int transW = 0; transW < 2; ++transW) {
    const int64_t n = 64;
    const Shape ws = transW ? Shape{n, 96} : Shape{96, n};
    auto x = p.cast(p.random({2, 48, 96}, 71), WHALE_RT_BF16);
    auto w = p.cast(p.random(ws, 72), WHALE_RT_BF16);
    auto bias = p.random({n}, 73);
    for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)})
      for (int gelu = 0; gelu < 2; ++gelu) {
        auto out = p.make(stored, {2, 48, n});
        auto pre = p.make(WHALE_RT_F32, {2, 48, n});
        for (int i = 0; i < 2; ++i)
          ASSERT_EQ(whale_rt_linear(ctxs[i], x.t[i], w.t[i], bias.t[i],
                                    out.t[i], gelu ? pre.t[i] : nullptr, transW,
                                    gelu),
                    WHALE_RT_OK)
              << whale_rt_last_error(ctxs[i]);
        std::vector<Pair::Both> outputs = {
            stored == WHALE_RT_BF16 ? p.cast(out, WHALE_RT_F32) : out};
        if (gelu)
          outputs.push_back(pre);
        p.check(
            std::string("bf16 linear") + (gelu ? " gelu" : "") +
                (stored == WHALE_RT_BF16 ? " -> bf16" : " -> f32") +
                (transW ? " transposed" : ""),
            outputs, [](whale_rt_context *, int) { return WHALE_RT_OK; },
            1e-2f);
      }
    auto dy = p.cast(p.random({2, 48, n}, 74), WHALE_RT_BF16);
    auto dw = p.make(WHALE_RT_F32, ws);
    auto db = p.make(WHALE_RT_F32, {n});
    p.check("bf16 linear_weight_grad" +
                std::string(transW ? " transposed" : ""),
            {dw, db}, [&](whale_rt_context *ctx, int i) {
              return whale_rt_linear_weight_grad(ctx, x.t[i], dy.t[i], dw.t[i],
                                                 db.t[i], transW);
            });
    for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)}) {
      auto pre = p.random({2, 48, 96}, 75);
      auto preStored =
          stored == WHALE_RT_BF16 ? p.cast(pre, WHALE_RT_BF16) : pre;
      auto dpre = p.make(stored, {2, 48, 96});
      for (int i = 0; i < 2; ++i)
        ASSERT_EQ(whale_rt_gelu_matmul_grad(ctxs[i], preStored.t[i], w.t[i],
                                            dy.t[i], dpre.t[i], transW),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctxs[i]);
      p.check(
          "bf16 gelu_matmul_grad" +
              std::string(stored == WHALE_RT_BF16 ? " -> bf16" : " -> f32") +
              (transW ? " transposed" : ""),
          {stored == WHALE_RT_BF16 ? p.cast(dpre, WHALE_RT_F32) : dpre},
          [](whale_rt_context *, int) { return WHALE_RT_OK; }, 1e-2f);
    }
  }
}

TEST(CudaKernels, MatmulsOnBf16StorageAsTheCpu) {
  // amp's storage: bf16 operands straight into the tensor cores, each
  // result stored in fp32 or rounded once to bf16, in every layout,
  // including a shared b under a transposed a, whose gradient sums one GEMM
  // per batch element in fp32 scratch before it is rounded. bf16 results
  // may differ from the CPU's by one rounding step (2^-8) where the sums'
  // order moves a value across a rounding boundary.
  Pair p;
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  struct Case {
    Shape a, b;
    int ta, tb;
  };
  for (const Case &c :
       {Case{{4, 32, 96}, {96, 48}, 0, 0}, Case{{4, 96, 32}, {48, 96}, 1, 1},
        Case{{4, 96, 32}, {96, 48}, 1, 0},
        Case{{2, 3, 32, 16}, {2, 3, 24, 16}, 0, 1}}) {
    auto a = p.cast(p.random(c.a, 41), WHALE_RT_BF16);
    auto b = p.cast(p.random(c.b, 42), WHALE_RT_BF16);
    size_t ra = c.a.size(), rb = c.b.size();
    Shape out(c.a.begin(), c.a.end() - 2);
    out.push_back(c.ta ? c.a[ra - 1] : c.a[ra - 2]);
    out.push_back(c.tb ? c.b[rb - 2] : c.b[rb - 1]);
    auto dout = p.cast(p.random(out, 43), WHALE_RT_BF16);
    auto o32 = p.make(WHALE_RT_F32, out), o16 = p.make(WHALE_RT_BF16, out);
    p.check("matmul (bf16 -> f32)", {o32}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_matmul(ctx, a.t[i], b.t[i], o32.t[i], c.ta, c.tb);
    });
    for (int i = 0; i < 2; ++i)
      ASSERT_EQ(whale_rt_matmul(ctxs[i], a.t[i], b.t[i], o16.t[i], c.ta, c.tb),
                WHALE_RT_OK)
          << whale_rt_last_error(ctxs[i]);
    p.check(
        "matmul (bf16 -> bf16)", {p.cast(o16, WHALE_RT_F32)},
        [](whale_rt_context *, int) { return WHALE_RT_OK; }, 8e-3f);
    // The activation's gradient in bf16, the weight's in fp32, then the
    // other way round.
    for (int weightIn16 = 0; weightIn16 < 2; ++weightIn16) {
      auto da = p.make(weightIn16 ? WHALE_RT_F32 : WHALE_RT_BF16, c.a);
      auto db = p.make(weightIn16 ? WHALE_RT_BF16 : WHALE_RT_F32, c.b);
      for (int i = 0; i < 2; ++i)
        ASSERT_EQ(whale_rt_matmul_grad(ctxs[i], a.t[i], b.t[i], dout.t[i],
                                       da.t[i], db.t[i], c.ta, c.tb),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctxs[i]);
      // The fp32 gradient to fp32's tolerance, the bf16 one to a step.
      auto ran = [](whale_rt_context *, int) { return WHALE_RT_OK; };
      p.check("matmul_grad (f32 out)", {weightIn16 ? da : db}, ran);
      p.check("matmul_grad (bf16 out)",
              {p.cast(weightIn16 ? db : da, WHALE_RT_F32)}, ran, 8e-3f);
    }
  }
}

TEST(CudaKernels, AmpBf16AttentionRoundsAsTheCpuDoes) {
  // Under amp attention's products take bf16 operands on both devices
  // (q, k, v, dout, P and dS rounded alike); softmax and dS stay fp32.
  Pair p;
  p.amp();
  const Shape s{2, 4, 129, 64};
  auto q = p.random(s, 41), k = p.random(s, 42), v = p.random(s, 43);
  auto dout = p.random(s, 44);
  auto out = p.make(WHALE_RT_F32, s), dq = p.make(WHALE_RT_F32, s),
       dk = p.make(WHALE_RT_F32, s), dv = p.make(WHALE_RT_F32, s);
  p.check("causal attention (bf16)", {out}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_attention(ctx, q.t[i], k.t[i], v.t[i], 0.125, 1, out.t[i]);
  });
  p.check("causal attention_grad (bf16)", {dq, dk, dv},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_attention_grad(ctx, q.t[i], k.t[i], v.t[i],
                                           out.t[i], dout.t[i], 0.125, 1,
                                           dq.t[i], dk.t[i], dv.t[i]);
          });
}

TEST(CudaKernels, RoundAndSumIsTheCastAndTheBiasSum) {
  // An activation gradient's rounding and its bias's sum in one pass: on
  // the GPU the bits of the cast and of binary_grad's column sum (the same
  // plan, so the same order), at shapes one split holds and shapes split
  // among blocks; against the CPU, the rounding exactly and the sums to
  // fp32's reordering.
  Pair p;
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  const std::vector<std::pair<Shape, Shape>> shapes = {
      {{3, 5, 40}, {40}},
      {{2, 16, 24}, {16, 24}},
      {{4, 512, 768}, {768}},
      {{8, 1024, 50304 / 16}, {50304 / 16}}};
  unsigned seed = 91;
  for (const auto &[xs, ss] : shapes) {
    auto x = p.random(xs, seed++);
    auto bias = p.random(ss, seed++);
    auto rounded = p.make(WHALE_RT_BF16, xs),
         castRef = p.make(WHALE_RT_BF16, xs);
    auto sum = p.make(WHALE_RT_F32, ss), sumRef = p.make(WHALE_RT_F32, ss);
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(whale_rt_round_and_sum(ctxs[i], x.t[i], rounded.t[i], sum.t[i]),
                WHALE_RT_OK)
          << whale_rt_last_error(ctxs[i]);
      ASSERT_EQ(whale_rt_cast(ctxs[i], x.t[i], castRef.t[i]), WHALE_RT_OK);
      ASSERT_EQ(whale_rt_binary_grad(ctxs[i], WHALE_RT_ADD, x.t[i], bias.t[i],
                                     x.t[i], nullptr, sumRef.t[i]),
                WHALE_RT_OK);
    }
    const std::string what = "round_and_sum " + std::to_string(count(xs)) +
                             " -> " + std::to_string(count(ss));
    auto bits16 = [&](const Pair::Both &b, int which) {
      std::vector<uint16_t> out(count(b.shape));
      EXPECT_EQ(whale_rt_tensor_read(ctxs[which], b.t[which], out.data(),
                                     out.size() * 2),
                WHALE_RT_OK);
      return out;
    };
    EXPECT_EQ(bits16(rounded, 0), bits16(castRef, 0)) << what;
    EXPECT_EQ(bits16(rounded, 0), bits16(rounded, 1)) << what;
    std::vector<float> got = p.read(sum, 0), ref = p.read(sumRef, 0);
    EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), got.size() * 4)) << what;
    p.check(what, {sum}, [](whale_rt_context *, int) { return WHALE_RT_OK; });
  }
}

TEST(CudaKernels, Bf16StorageIsTheCpusBits) {
  // amp's storage: the cast both ways and a bf16 fill give the CPU's bits
  // exactly, NaN, infinities, ties and subnormals included, over a size
  // that leaves a partial block.
  Pair p;
  const Shape s{1000, 37};
  std::vector<float> x = randomValues(count(s), 51, -1e3f, 1e3f);
  const uint32_t special[] = {0x7fc00000u, 0x7f800001u, 0x7f800000u,
                              0xff800000u, 0x3f808000u, 0x3f818000u,
                              0x00010000u, 0x7f7fffffu, 0x80000000u};
  for (size_t i = 0; i < sizeof special / sizeof *special; ++i)
    std::memcpy(&x[i * 101], &special[i], sizeof(float));
  auto f = p.f32(s, x);
  auto h = p.make(WHALE_RT_BF16, s);
  auto back = p.make(WHALE_RT_F32, s);
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  std::vector<uint16_t> bits[2];
  std::vector<uint32_t> widened[2];
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(whale_rt_cast(ctxs[i], f.t[i], h.t[i]), WHALE_RT_OK)
        << whale_rt_last_error(ctxs[i]);
    ASSERT_EQ(whale_rt_cast(ctxs[i], h.t[i], back.t[i]), WHALE_RT_OK);
    bits[i].resize(count(s));
    widened[i].resize(count(s));
    ASSERT_EQ(whale_rt_tensor_read(ctxs[i], h.t[i], bits[i].data(),
                                   bits[i].size() * 2),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_tensor_read(ctxs[i], back.t[i], widened[i].data(),
                                   widened[i].size() * 4),
              WHALE_RT_OK);
  }
  // NaN's payload may differ between the two; each must stay a NaN.
  auto nan16 = [](uint16_t b) { return (b & 0x7f80) == 0x7f80 && (b & 0x7f); };
  for (size_t i = 0; i < bits[0].size(); ++i) {
    if (nan16(bits[1][i])) {
      EXPECT_TRUE(nan16(bits[0][i])) << i;
      continue;
    }
    ASSERT_EQ(bits[0][i], bits[1][i]) << i;
    ASSERT_EQ(widened[0][i], widened[1][i]) << i;
  }
  for (int i = 0; i < 2; ++i)
    ASSERT_EQ(whale_rt_fill(ctxs[i], h.t[i], 0.1), WHALE_RT_OK);
  std::vector<uint16_t> filled[2];
  for (int i = 0; i < 2; ++i) {
    filled[i].resize(count(s));
    ASSERT_EQ(whale_rt_tensor_read(ctxs[i], h.t[i], filled[i].data(),
                                   filled[i].size() * 2),
              WHALE_RT_OK);
  }
  EXPECT_EQ(filled[0], filled[1]);
}

TEST(CudaKernels, ElementwiseWithBroadcastingAndGradients) {
  Pair p;
  Shape s{8, 3, 33};
  auto a = p.random(s, 4, 0.5f, 2), b = p.random({3, 1}, 5, 0.5f, 2);
  auto out = p.make(WHALE_RT_F32, s), dout = p.random(s, 6);
  auto da = p.make(WHALE_RT_F32, s), db = p.make(WHALE_RT_F32, {3, 1});
  for (int op = WHALE_RT_ADD; op <= WHALE_RT_DIV; ++op) {
    p.check("binary", {out}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_binary(ctx, op, a.t[i], b.t[i], out.t[i]);
    });
    p.check("binary_grad", {da, db}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_binary_grad(ctx, op, a.t[i], b.t[i], dout.t[i], da.t[i],
                                  db.t[i]);
    });
  }
  auto y = p.make(WHALE_RT_F32, s), dx = p.make(WHALE_RT_F32, s);
  for (int op = WHALE_RT_NEG; op <= WHALE_RT_SQRT; ++op) {
    p.check("unary", {y}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_unary(ctx, op, a.t[i], y.t[i]);
    });
    p.check("unary_grad", {dx}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_unary_grad(ctx, op, a.t[i], y.t[i], dout.t[i], dx.t[i]);
    });
  }
  auto big = p.make(WHALE_RT_F32, {5, 3, 7});
  auto small = p.random({3, 1}, 7);
  p.check("broadcast", {big}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_broadcast(ctx, small.t[i], big.t[i]);
  });
}

TEST(CudaKernels, FusedRegionsRunAsElementPrograms) {
  // relu(x + b) over [rows, cols] with b a row, and its sum over the rows,
  // as the lowering writes such a region (runtime/ops/ElementProgram.h): the
  // GPU runs the program, no host kernel. Its sums of many rows go in parts
  // (fused::termParts): 2 parts of 32 rows, then 128 of 32 (a bias
  // gradient's shape).
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{64, 33}, {4096, 768}}) {
    const std::vector<int64_t> words = {whale::rt::fused::kMagic,
                                        2,
                                        rows,
                                        cols, // magic, rank, extents
                                        2,
                                        2,
                                        6,
                                        4, // inputs, outputs, registers, code
                                        1,
                                        1,
                                        0,
                                        0,
                                        1,
                                        0, // x reads both; b only the columns
                                        1,
                                        1,
                                        0,
                                        5,
                                        0, // y keeps both, register 5, f32
                                        0,
                                        1,
                                        0,
                                        5,
                                        0, // s sums the rows of register 5
                                        0, // no row op
                                        1,
                                        2,
                                        0,
                                        1,
                                        -1, // r2 = r0 + r1
                                        10,
                                        3,
                                        2,
                                        -1,
                                        -1, // r3 = r2 > 0
                                        0,
                                        4,
                                        0,
                                        -1,
                                        -1, // r4 = 0.0f
                                        12,
                                        5,
                                        3,
                                        2,
                                        4}; // r5 = r3 ? r2 : r4
    Pair p;
    auto x = p.random({rows, cols}, 11), b = p.random({cols}, 12);
    auto y = p.make(WHALE_RT_F32, {rows, cols}),
         s = p.make(WHALE_RT_F32, {cols});
    whale_rt_tensor *in[] = {x.t[0], b.t[0]}, *out[] = {y.t[0], s.t[0]};
    ASSERT_EQ(whale_rt_fused(p.gpu, "fused: add relu reduce_sum", nullptr,
                             words.data(), words.size(), 2, in, 2, out, cols,
                             rows),
              WHALE_RT_OK)
        << whale_rt_last_error(p.gpu);
    std::vector<float> hx = p.read(x, 1), hb = p.read(b, 1);
    std::vector<float> gy = p.read(y, 0), gs = p.read(s, 0);
    double worst = 0;
    for (int64_t c = 0; c < cols; ++c) {
      double sum = 0;
      for (int64_t r = 0; r < rows; ++r) {
        float v = std::max(hx[r * cols + c] + hb[c], 0.0f);
        sum += v;
        worst = worseOf(worst, double(std::fabs(gy[r * cols + c] - v)));
      }
      worst = worseOf(worst, std::fabs(double(gs[c]) - sum) /
                                  std::max(1.0, std::fabs(sum)));
    }
    EXPECT_LT(worst, 1e-5) << rows << " x " << cols;
    std::printf("  element program %5ld x %-4ld worst relative difference "
                "%.2e\n",
                static_cast<long>(rows), static_cast<long>(cols), worst);
    // A program for other operands is refused, not run.
    EXPECT_EQ(whale_rt_fused(p.gpu, "fused", nullptr, words.data(),
                             words.size(), 1, in, 2, out, cols, rows),
              WHALE_RT_INVALID_ARGUMENT);
  }
}

/// amp's storage in a fused region: relu(x + b) with x read as bf16 and
/// the result stored as bf16, and its sum over the rows in fp32. The
/// generated kernel widens x as it loads it and rounds y as the runtime's
/// cast rounds (to nearest, ties to even): y is the host's rounding of the
/// same fp32 value, bit for bit.
TEST(CudaKernels, FusedRegionsReadAndWriteBf16) {
  namespace fused = whale::rt::fused;
  const int64_t rows = 4096, cols = 768;
  // clang-format off
  const std::vector<int64_t> words = {
      fused::kMagic, 2, rows, cols, 2, 2, 6, 4,
      1, 1, fused::Bf16Operand, 0, 1, fused::F32Operand, // x, b
      1, 1, 0, 5, fused::Bf16Operand,                    // y
      0, 1, 0, 5, fused::F32Operand,                     // its column sums
      fused::NoRowOp,
      fused::Add, 2, 0, 1, -1, fused::Positive, 3, 2, -1, -1,
      fused::Const, 4, 0, -1, -1, fused::Select, 5, 3, 2, 4};
  // clang-format on
  Pair p;
  auto wide = p.random({rows, cols}, 21), b = p.random({cols}, 22);
  auto x = p.make(WHALE_RT_BF16, {rows, cols}),
       y = p.make(WHALE_RT_BF16, {rows, cols});
  auto s = p.make(WHALE_RT_F32, {cols}),
       back = p.make(WHALE_RT_F32, {rows, cols});
  for (int i : {0, 1})
    ASSERT_EQ(whale_rt_cast(i ? p.cpu : p.gpu, wide.t[i], x.t[i]), WHALE_RT_OK);
  whale_rt_tensor *in[] = {x.t[0], b.t[0]}, *out[] = {y.t[0], s.t[0]};
  ASSERT_EQ(whale_rt_fused(p.gpu, "fused: cast add relu cast reduce_sum",
                           nullptr, words.data(), words.size(), 2, in, 2, out,
                           cols, rows),
            WHALE_RT_OK)
      << whale_rt_last_error(p.gpu);
  ASSERT_EQ(whale_rt_cast(p.gpu, y.t[0], back.t[0]), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_cast(p.cpu, x.t[1], wide.t[1]), WHALE_RT_OK);
  std::vector<float> hx = p.read(wide, 1), hb = p.read(b, 1);
  std::vector<float> gy = p.read(back, 0), gs = p.read(s, 0);
  int64_t differ = 0;
  double worst = 0;
  for (int64_t c = 0; c < cols; ++c) {
    double sum = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const float v = std::max(hx[r * cols + c] + hb[c], 0.0f);
      sum += v;
      differ += gy[r * cols + c] != whale::rt::roundToBf16(v);
    }
    worst = worseOf(worst, std::fabs(double(gs[c]) - sum) /
                               std::max(1.0, std::fabs(sum)));
  }
  EXPECT_EQ(differ, 0) << "elements not rounded as the host rounds them";
  EXPECT_LT(worst, 1e-5);
  // An f32 tensor where the program reads bf16 is refused, not run.
  whale_rt_tensor *wrong[] = {wide.t[0], b.t[0]};
  EXPECT_EQ(whale_rt_fused(p.gpu, "fused", nullptr, words.data(), words.size(),
                           2, wrong, 2, out, cols, rows),
            WHALE_RT_INVALID_ARGUMENT);
}

/// A residual add and the layernorm of it, the layernorm's rows stored as
/// bf16 (amp's storage; the f32 row kept in shared memory meanwhile):
/// each element is the same program's f32 result rounded, bit for bit, in
/// the generated kernel and in the interpreter's (which asks for more
/// than 48 KiB of shared memory at the widest row, 8192).
TEST(CudaKernels, RoundedRowsAreTheF32RowsRounded) {
  namespace fused = whale::rt::fused;
  const float eps = 1e-5f;
  uint32_t epsBits;
  std::memcpy(&epsBits, &eps, sizeof epsBits);
  for (const char *kernels : {"1", "0"})
    for (int64_t cols : {int64_t(768), fused::kMaxRoundedRow}) {
      setenv("WHALE_CUDA_ELEMENT_KERNELS", kernels, 1);
      const int64_t rows = cols == 768 ? 4096 : 64;
      auto words = [&](int64_t type) {
        // clang-format off
        return std::vector<int64_t>{
            fused::kMagic, 2, rows, cols, 4, 2, 5, 1,
            1, 1, fused::F32Operand, 1, 1, fused::F32Operand, // x, h
            0, 1, fused::F32Operand, 0, 1, fused::F32Operand, // gamma, beta
            1, 1, 0, 4, fused::F32Operand,                    // s = x + h
            1, 1, 0, 4, type,                                 // its layernorm
            fused::LayerNorm, 1, 4, 2, 3, int64_t(epsBits),
            fused::Add, 4, 0, 1, -1};
        // clang-format on
      };
      Pair p;
      auto x = p.random({rows, cols}, 41), h = p.random({rows, cols}, 42);
      auto g = p.random({cols}, 43, 0.5f, 1.5f), b = p.random({cols}, 44);
      auto s = p.make(WHALE_RT_F32, {rows, cols}),
           n32 = p.make(WHALE_RT_F32, {rows, cols}),
           n16 = p.make(WHALE_RT_BF16, {rows, cols}),
           back = p.make(WHALE_RT_F32, {rows, cols});
      whale_rt_tensor *in[] = {x.t[0], h.t[0], g.t[0], b.t[0]};
      for (auto [type, n] : {std::pair{fused::F32Operand, n32},
                             std::pair{fused::Bf16Operand, n16}}) {
        const std::vector<int64_t> w = words(type);
        whale_rt_tensor *out[] = {s.t[0], n.t[0]};
        ASSERT_EQ(whale_rt_fused(p.gpu, "fused: add layernorm", nullptr,
                                 w.data(), w.size(), 4, in, 2, out, rows, cols),
                  WHALE_RT_OK)
            << whale_rt_last_error(p.gpu);
      }
      ASSERT_EQ(whale_rt_cast(p.gpu, n16.t[0], back.t[0]), WHALE_RT_OK);
      std::vector<float> want = p.read(n32, 0), got = p.read(back, 0);
      int64_t differ = 0;
      for (size_t i = 0; i < want.size(); ++i)
        differ += got[i] != whale::rt::roundToBf16(want[i]);
      EXPECT_EQ(differ, 0) << cols << " columns, generated kernels " << kernels;
    }
  unsetenv("WHALE_CUDA_ELEMENT_KERNELS");
}

/// Attention as chunks of heads' GEMMs and row kernels (AttentionPlan.h):
/// a short odd sequence in one chunk, and 72 heads of 1,024 whose scores
/// go in two chunks (64 heads, then 8); then sequence-major [B, T, H, E]
/// operands, which this path permutes to head-major and back.
TEST(CudaKernels, AttentionAsChunkedGemmsAndItsGradients) {
  Pair p;
  for (const Shape &s :
       {Shape{2, 4, 65, 32}, Shape{2, 36, 1024, 32}, Shape{2, 65, 4, 32}}) {
    const int layout = s[1] == 65 ? WHALE_RT_ATTENTION_SEQUENCE_MAJOR : 0;
    auto q = p.random(s, 31), k = p.random(s, 32), v = p.random(s, 33);
    auto dout = p.random(s, 34);
    auto out = p.make(WHALE_RT_F32, s), dq = p.make(WHALE_RT_F32, s),
         dk = p.make(WHALE_RT_F32, s), dv = p.make(WHALE_RT_F32, s);
    for (int causal : {0, 1}) {
      p.check(causal ? "causal attention" : "attention", {out},
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_attention(ctx, q.t[i], k.t[i], v.t[i], 0.125,
                                          causal | layout, out.t[i]);
              });
      p.check(causal ? "causal attention_grad" : "attention_grad", {dq, dk, dv},
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_attention_grad(
                    ctx, q.t[i], k.t[i], v.t[i], out.t[i], dout.t[i], 0.125,
                    causal | layout, dq.t[i], dk.t[i], dv.t[i]);
              });
    }
  }
}

/// The fused tensor-core kernels (FlashAttention.cu, WHALE_CUDA_FLASH=1)
/// against the CPU's attention under amp. Both round q, k, v and dout to
/// bf16; the kernels round P before it is normalized and the CPU after,
/// so products may differ by a few bf16 half-ulps per term: 2e-2 relative,
/// as FlashPlanTest's walk of the same tiles on the CPU states. Partial
/// tiles, both masks, a head width that is not a multiple of 8 (the
/// element-wise loads), 128 and 256 columns (256: the GEMMs take the
/// backward), a long sequence, and logits near 1e4.
/// The fused kernels that never hold the scores against the CPU: under
/// amp (tensor cores, bf16 operands) at 2e-2, and in fp32 (FMAs) at the
/// contract's 1e-4. The tolerances and their reasons are FlashPlanTest's
/// and FlashSimtTest's, which walk the same tiles on the CPU.
TEST(CudaKernels, FlashAttentionOnTheTensorCores) {
  // The flag for this test only, whichever way it ends.
  struct Flag {
    Flag() { setenv("WHALE_CUDA_FLASH", "1", 1); }
    ~Flag() { unsetenv("WHALE_CUDA_FLASH"); }
  } flag;
  struct Case {
    Shape s;
    int form; ///< WHALE_RT_ATTENTION_CAUSAL | WHALE_RT_ATTENTION_SEQUENCE_MAJOR
    double scale;
  };
  constexpr int kSeq = WHALE_RT_ATTENTION_SEQUENCE_MAJOR;
  for (bool amp : {true, false}) {
    Pair p;
    const int32_t mode = amp ? WHALE_RT_AMP_BF16 : WHALE_RT_AMP_OFF;
    ASSERT_EQ(whale_rt_set_amp(p.gpu, mode), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_set_amp(p.cpu, mode), WHALE_RT_OK);
    const float tol = amp ? 2e-2f : 1e-4f;
    for (const Case &c :
         {Case{{2, 4, 129, 64}, 1, 0.125}, Case{{2, 4, 129, 64}, 0, 0.125},
          Case{{1, 3, 70, 40}, 1, 0.15}, Case{{1, 2, 200, 128}, 1, 0.088},
          Case{{1, 2, 100, 256}, 0, 0.0625}, Case{{1, 2, 2048, 64}, 1, 0.125},
          Case{{1, 1, 90, 64}, 1, 3000.0},
          // [B, T, H, E] read in place (GPT-2's heads without permutes);
          // 256 columns: the backward's GEMMs take permuted copies
          Case{{2, 129, 4, 64}, 1 | kSeq, 0.125},
          Case{{1, 70, 3, 40}, kSeq, 0.15},
          Case{{1, 100, 2, 256}, 1 | kSeq, 0.0625}}) {
      auto q = p.random(c.s, 51), k = p.random(c.s, 52), v = p.random(c.s, 53);
      auto dout = p.random(c.s, 54);
      auto out = p.make(WHALE_RT_F32, c.s), dq = p.make(WHALE_RT_F32, c.s),
           dk = p.make(WHALE_RT_F32, c.s), dv = p.make(WHALE_RT_F32, c.s);
      const bool seq = (c.form & kSeq) != 0;
      const std::string what =
          std::string(amp ? "flash bf16" : "flash fp32") + " t " +
          std::to_string(c.s[seq ? 1 : 2]) + " e " + std::to_string(c.s[3]) +
          (c.form & 1 ? " causal" : "") + (seq ? " sequence-major" : "");
      p.check(
          what, {out},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_attention(ctx, q.t[i], k.t[i], v.t[i], c.scale,
                                      c.form, out.t[i]);
          },
          tol);
      // dS = scale (dP - D): the scale multiplies either side's rounding.
      p.check(
          what + " grad", {dq, dk, dv},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_attention_grad(ctx, q.t[i], k.t[i], v.t[i],
                                           out.t[i], dout.t[i], c.scale, c.form,
                                           dq.t[i], dk.t[i], dv.t[i]);
          },
          tol * std::max(1.0f, float(c.scale)));
    }
  }
}

TEST(CudaKernels, AttentionOnBf16StorageAsTheCpu) {
  // amp's storage: the flash kernels read bf16 q, k, v as they are stored
  // and round the output once as they store it (or store fp32); the
  // gradient reads the bf16 output and an fp32 dout. Against the CPU's
  // composition (the fp32 attention under amp on the widened values), at
  // FlashAttentionOnTheTensorCores's 2e-2. 256 columns: the composition on
  // both sides (no flash tiles that wide).
  struct Flag {
    Flag() { setenv("WHALE_CUDA_FLASH", "1", 1); }
    ~Flag() { unsetenv("WHALE_CUDA_FLASH"); }
  } flag;
  constexpr int kSeq = WHALE_RT_ATTENTION_SEQUENCE_MAJOR;
  struct Case {
    Shape s;
    int form;
    double scale;
  };
  Pair p;
  p.amp();
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  for (const Case &c :
       {Case{{2, 129, 4, 64}, 1 | kSeq, 0.125}, Case{{2, 4, 129, 64}, 1, 0.125},
        Case{{1, 70, 3, 40}, kSeq, 0.15},
        Case{{1, 100, 2, 256}, 1 | kSeq, 0.0625}}) {
    auto q = p.cast(p.random(c.s, 61), WHALE_RT_BF16);
    auto k = p.cast(p.random(c.s, 62), WHALE_RT_BF16);
    auto v = p.cast(p.random(c.s, 63), WHALE_RT_BF16);
    const std::string what = "attention on bf16 e " + std::to_string(c.s[3]) +
                             (c.form & 1 ? " causal" : "") +
                             (c.form & kSeq ? " sequence-major" : "");
    for (int32_t stored : {int32_t(WHALE_RT_F32), int32_t(WHALE_RT_BF16)}) {
      auto out = p.make(stored, c.s);
      for (int i = 0; i < 2; ++i)
        ASSERT_EQ(whale_rt_attention(ctxs[i], q.t[i], k.t[i], v.t[i], c.scale,
                                     c.form, out.t[i]),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctxs[i]);
      p.check(
          what + (stored == WHALE_RT_BF16 ? " -> bf16" : " -> f32"),
          {stored == WHALE_RT_BF16 ? p.cast(out, WHALE_RT_F32) : out},
          [](whale_rt_context *, int) { return WHALE_RT_OK; }, 2e-2f);
    }
    // The gradient from one stored output, the same on both sides.
    auto out = p.cast(p.random(c.s, 64, -0.5f, 0.5f), WHALE_RT_BF16);
    auto dout = p.random(c.s, 65);
    auto dq = p.make(WHALE_RT_F32, c.s), dk = p.make(WHALE_RT_F32, c.s),
         dv = p.make(WHALE_RT_F32, c.s);
    p.check(
        what + " grad", {dq, dk, dv},
        [&](whale_rt_context *ctx, int i) {
          return whale_rt_attention_grad(ctx, q.t[i], k.t[i], v.t[i], out.t[i],
                                         dout.t[i], c.scale, c.form, dq.t[i],
                                         dk.t[i], dv.t[i]);
        },
        2e-2f);
  }
}

TEST(CudaKernels, SoftmaxMaskLayernormOnRows) {
  Pair p;
  Shape s{4, 2, 16, 16};
  auto x = p.random(s, 8, -3, 3), y = p.make(WHALE_RT_F32, s);
  auto dy = p.random(s, 9), dx = p.make(WHALE_RT_F32, s);
  for (int64_t axis : {3, 1}) {
    p.check("softmax", {y}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_softmax(ctx, x.t[i], axis, y.t[i]);
    });
    p.check("softmax_grad", {dx}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_softmax_grad(ctx, y.t[i], dy.t[i], axis, dx.t[i]);
    });
  }
  p.check("causal_mask", {y}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_causal_mask(ctx, x.t[i], y.t[i]);
  });
  p.check("causal_mask_grad", {dx}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_causal_mask_grad(ctx, dy.t[i], dx.t[i]);
  });
  Shape rows{37, 768};
  auto h = p.random(rows, 10, -2, 2), gamma = p.random({768}, 11, 0.5f, 1.5f);
  auto beta = p.random({768}, 12), out = p.make(WHALE_RT_F32, rows);
  auto dout = p.random(rows, 13), dh = p.make(WHALE_RT_F32, rows);
  auto dgamma = p.make(WHALE_RT_F32, {768}),
       dbeta = p.make(WHALE_RT_F32, {768});
  p.check("layernorm", {out}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_layernorm(ctx, h.t[i], gamma.t[i], beta.t[i], 1e-5,
                              out.t[i]);
  });
  p.check(
      "layernorm_grad", {dh, dgamma, dbeta}, [&](whale_rt_context *ctx, int i) {
        return whale_rt_layernorm_grad(ctx, h.t[i], gamma.t[i], 1e-5, dout.t[i],
                                       dh.t[i], dgamma.t[i], dbeta.t[i]);
      });
  // With the residual's gradient added in the same pass.
  auto res = p.random(rows, 14);
  p.check("layernorm_grad plus a residual", {dh, dgamma, dbeta},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_layernorm_grad_residual(
                ctx, h.t[i], gamma.t[i], 1e-5, dout.t[i], res.t[i], dh.t[i],
                dgamma.t[i], dbeta.t[i]);
          });
  // The widest row the one-pass gradient keeps in registers, and one past
  // it, which takes the unfused kernels.
  for (int64_t width : {2048, 2049}) {
    Shape wide{300, width};
    auto hw = p.random(wide, 15, -2, 2), gw = p.random({width}, 16, 0.5f, 1.5f),
         dw = p.random(wide, 17);
    auto dhw = p.make(WHALE_RT_F32, wide), dgw = p.make(WHALE_RT_F32, {width}),
         dbw = p.make(WHALE_RT_F32, {width});
    p.check("layernorm_grad (wide rows)", {dhw, dgw, dbw},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_layernorm_grad(ctx, hw.t[i], gw.t[i], 1e-5,
                                             dw.t[i], dhw.t[i], dgw.t[i],
                                             dbw.t[i]);
            });
    p.check("layernorm_grad plus a residual (wide rows)", {dhw, dgw, dbw},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_layernorm_grad_residual(
                  ctx, hw.t[i], gw.t[i], 1e-5, dw.t[i], hw.t[i], dhw.t[i],
                  dgw.t[i], dbw.t[i]);
            });
  }
}

TEST(CudaKernels, EmbeddingAndCrossEntropyWithBadIndicesReported) {
  Pair p;
  auto table = p.random({50, 32}, 14);
  std::vector<int32_t> idv(24);
  for (size_t i = 0; i < idv.size(); ++i)
    idv[i] = static_cast<int32_t>((i * 7) % 50);
  auto ids = p.ids({4, 6}, idv);
  auto out = p.make(WHALE_RT_F32, {4, 6, 32}), dout = p.random({4, 6, 32}, 15);
  auto dtable = p.make(WHALE_RT_F32, {50, 32});
  p.check("embedding", {out}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_embedding(ctx, table.t[i], ids.t[i], out.t[i]);
  });
  p.check("embedding_grad", {dtable}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_embedding_grad(ctx, ids.t[i], dout.t[i], dtable.t[i]);
  });

  auto logits = p.random({24, 50}, 16, -4, 4);
  auto loss = p.make(WHALE_RT_F32, {24}), dloss = p.random({24}, 17);
  auto dlogits = p.make(WHALE_RT_F32, {24, 50});
  auto labels = p.ids({24}, idv);
  p.check("cross_entropy", {loss}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_cross_entropy(ctx, logits.t[i], labels.t[i], loss.t[i]);
  });
  p.check("cross_entropy_grad", {dlogits}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_cross_entropy_grad(ctx, logits.t[i], labels.t[i],
                                       dloss.t[i], dlogits.t[i]);
  });

  idv[5] = 50; // one row past the table
  p.write(labels, idv.data(), idv.size() * 4);
  EXPECT_EQ(whale_rt_cross_entropy(p.gpu, logits.t[0], labels.t[0], loss.t[0]),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_NE(std::string(whale_rt_last_error(p.gpu)).find("label 50"),
            std::string::npos)
      << whale_rt_last_error(p.gpu);
}

/// The loss and its gradient on logits stored in bf16 (amp's storage: the
/// LM head's output), widened as the kernels load them, four at a time
/// where a row allows (50,304 classes) and one by one where it does not
/// (37); against the CPU, which widens them into fp32 scratch first.
TEST(CudaKernels, CrossEntropyOnBf16LogitsAsTheCpu) {
  for (int64_t classes : {int64_t(50304), int64_t(37)}) {
    Pair p;
    const int64_t rows = 64;
    auto wide = p.random({rows, classes}, 51, -6, 6);
    auto logits = p.cast(wide, WHALE_RT_BF16);
    std::vector<int32_t> yv(rows);
    for (int64_t i = 0; i < rows; ++i)
      yv[i] = static_cast<int32_t>((i * 977) % classes);
    auto labels = p.ids({rows}, yv);
    checkLossAndGradient(p, "on bf16 logits", logits, labels,
                         p.random({rows}, 52));
  }
}

/// The LM head's gradient rounded and summed in one call: on the GPU the
/// bits of cross_entropy_grad, then round_and_sum (the same expression per
/// element, the same sums in the same order), at 50,304 classes (a split
/// per column tile) and 37 (the rows split among blocks), on bf16 and f32
/// logits; against the CPU, the sums to fp32's reordering.
TEST(CudaKernels, RoundedLossGradientIsTheGradientRoundedAndSummed) {
  Pair p;
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{256, 50304},
                               std::pair<int64_t, int64_t>{4096, 37}})
    for (bool bf16 : {true, false}) {
      auto wide = p.random({rows, classes}, 61, -6, 6);
      auto logits = bf16 ? p.cast(wide, WHALE_RT_BF16) : wide;
      std::vector<int32_t> yv(rows);
      for (int64_t i = 0; i < rows; ++i)
        yv[i] = static_cast<int32_t>((i * 977) % classes);
      auto labels = p.ids({rows}, yv);
      auto dloss = p.random({rows}, 62);
      auto rounded = p.make(WHALE_RT_BF16, {rows, classes});
      auto sum = p.make(WHALE_RT_F32, {classes});
      auto g = p.make(WHALE_RT_F32, {rows, classes});
      auto gRounded = p.make(WHALE_RT_BF16, {rows, classes});
      auto gSum = p.make(WHALE_RT_F32, {classes});
      for (int i = 0; i < 2; ++i) {
        ASSERT_EQ(whale_rt_cross_entropy_grad_rounded(ctxs[i], logits.t[i],
                                                      labels.t[i], dloss.t[i],
                                                      rounded.t[i], sum.t[i]),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctxs[i]);
        ASSERT_EQ(whale_rt_cross_entropy_grad(ctxs[i], logits.t[i], labels.t[i],
                                              dloss.t[i], g.t[i]),
                  WHALE_RT_OK);
        ASSERT_EQ(
            whale_rt_round_and_sum(ctxs[i], g.t[i], gRounded.t[i], gSum.t[i]),
            WHALE_RT_OK);
      }
      const std::string what = "cross_entropy_grad_rounded " +
                               std::to_string(classes) +
                               (bf16 ? " bf16" : " f32");
      std::vector<uint16_t> bits(rows * classes), ref(rows * classes);
      ASSERT_EQ(whale_rt_tensor_read(p.gpu, rounded.t[0], bits.data(),
                                     bits.size() * 2),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_tensor_read(p.gpu, gRounded.t[0], ref.data(),
                                     ref.size() * 2),
                WHALE_RT_OK);
      EXPECT_EQ(bits, ref) << what;
      std::vector<float> got = p.read(sum, 0), want = p.read(gSum, 0);
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * 4))
          << what;
      p.check(what, {sum}, [](whale_rt_context *, int) { return WHALE_RT_OK; });
    }
}

TEST(CudaKernels, ReductionsAndLayout) {
  Pair p;
  Shape s{6, 5, 4};
  auto x = p.random(s, 18), dx = p.make(WHALE_RT_F32, s);
  for (std::vector<int64_t> axes :
       {std::vector<int64_t>{2}, std::vector<int64_t>{0, 2},
        std::vector<int64_t>{0, 1, 2}}) {
    Shape kept;
    for (int64_t d = 0; d < 3; ++d)
      if (std::find(axes.begin(), axes.end(), d) == axes.end())
        kept.push_back(s[d]);
    auto out = p.make(WHALE_RT_F32, kept), dout = p.random(kept, 19);
    for (int op = WHALE_RT_SUM; op <= WHALE_RT_MAX; ++op) {
      p.check("reduce", {out}, [&](whale_rt_context *ctx, int i) {
        return whale_rt_reduce(ctx, op, x.t[i], int32_t(axes.size()),
                               axes.data(), out.t[i]);
      });
      p.check("reduce_grad", {dx}, [&](whale_rt_context *ctx, int i) {
        return whale_rt_reduce_grad(ctx, op, x.t[i], int32_t(axes.size()),
                                    axes.data(), dout.t[i], dx.t[i]);
      });
    }
  }
  // Few outputs, each the sum of many inputs: a block per output.
  auto tall = p.random({512, 40}, 23), column = p.make(WHALE_RT_F32, {40});
  int64_t down[] = {0};
  for (int op = WHALE_RT_SUM; op <= WHALE_RT_MAX; ++op)
    p.check("reduce (block per output)", {column},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_reduce(ctx, op, tall.t[i], 1, down, column.t[i]);
            });
  int64_t perm[] = {2, 0, 1};
  auto t = p.make(WHALE_RT_F32, {4, 6, 5});
  p.check("transpose", {t}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_transpose(ctx, x.t[i], perm, t.t[i]);
  });
  auto part = p.make(WHALE_RT_F32, {6, 2, 4});
  p.check("slice", {part}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_slice(ctx, x.t[i], 1, 1, 3, part.t[i]);
  });
  p.check("slice_grad", {dx}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_slice_grad(ctx, part.t[i], 1, 1, dx.t[i]);
  });
  auto joined = p.make(WHALE_RT_F32, {6, 7, 4});
  p.check("concat", {joined}, [&](whale_rt_context *ctx, int i) {
    whale_rt_tensor *ins[] = {x.t[i], part.t[i]};
    return whale_rt_concat(ctx, 2, ins, 1, joined.t[i]);
  });
  auto r = p.make(WHALE_RT_F32, {30, 4});
  p.check("reshape", {r}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_reshape(ctx, x.t[i], r.t[i]);
  });
}

TEST(CudaKernels, ConvolutionsAndPoolingWithGradients) {
  Pair p;
  // A strided, padded, dilated, grouped convolution: im2col and col2im on
  // the GPU, the products on cuBLAS.
  auto x = p.random({3, 4, 9, 7}, 31), w = p.random({6, 2, 3, 2}, 32);
  auto y = p.make(WHALE_RT_F32, {3, 6, 5, 7}), dy = p.random({3, 6, 5, 7}, 33);
  auto dx = p.make(WHALE_RT_F32, {3, 4, 9, 7}),
       dw = p.make(WHALE_RT_F32, {6, 2, 3, 2});
  int64_t conv[] = {2, 1, 1, 1, 1, 2, 2};
  p.check("conv2d", {y}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_conv2d(ctx, x.t[i], w.t[i], conv, y.t[i]);
  });
  p.check("conv2d_grad", {dx, dw}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_conv2d_grad(ctx, x.t[i], w.t[i], dy.t[i], conv, dx.t[i],
                                dw.t[i]);
  });
  // Pooling, both kinds, with padding.
  auto py = p.make(WHALE_RT_F32, {3, 4, 5, 4}), pdy = p.random({3, 4, 5, 4}, 34);
  int64_t pool[] = {3, 3, 2, 2, 1, 1};
  for (int kind : {WHALE_RT_POOL_MAX, WHALE_RT_POOL_AVG}) {
    p.check("pool2d", {py}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_pool2d(ctx, kind, x.t[i], pool, py.t[i]);
    });
    p.check("pool2d_grad", {dx}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_pool2d_grad(ctx, kind, x.t[i], pdy.t[i], pool, dx.t[i]);
    });
  }
}

TEST(CudaKernels, TopKAndItsGradient) {
  Pair p;
  // Rows of 64 experts' gate logits, and the gradient back to the k taken.
  auto x = p.random({50, 64}, 35), dy = p.random({50, 2}, 36);
  auto v = p.make(WHALE_RT_F32, {50, 2}), dx = p.make(WHALE_RT_F32, {50, 64});
  p.check("topk", {v}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_topk(ctx, x.t[i], 2, v.t[i], nullptr);
  });
  p.check("topk_grad", {dx}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_topk_grad(ctx, x.t[i], 2, dy.t[i], dx.t[i]);
  });
}

TEST(CudaKernels, MixtureOfExpertsRoutingAndOneHot) {
  Pair p;
  // 3 groups of 20 tokens, top-2 of 8 experts with 4 slots each: some
  // choices drop, some slots stay empty.
  const int64_t G = 3, S = 20, k = 2, E = 8, C = 4, D = 16;
  std::vector<int32_t> choices(G * S * k);
  for (int64_t t = 0; t < G * S; ++t) {
    choices[t * k] = static_cast<int32_t>((t * 5 + 3) % E);
    choices[t * k + 1] = static_cast<int32_t>((t * 5 + 4 + t % 3) % E);
  }
  auto e = p.ids({G, S, k}, choices);
  auto x = p.random({G, S, D}, 37), gates = p.random({G, S, k}, 38, 0, 1),
       y = p.random({E, G * C, D}, 39);
  auto slots = p.make(WHALE_RT_F32, {E, G * C, D}),
       back = p.make(WHALE_RT_F32, {G, S, D}),
       dg = p.make(WHALE_RT_F32, {G, S, k}),
       hot = p.make(WHALE_RT_F32, {G, S, k, E});
  p.check("moe_dispatch", {slots}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_moe_dispatch(ctx, x.t[i], e.t[i], gates.t[i], slots.t[i]);
  });
  p.check("moe_combine", {back}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_moe_combine(ctx, y.t[i], e.t[i], gates.t[i], back.t[i]);
  });
  p.check("moe_gate_grad", {dg}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_moe_gate_grad(ctx, x.t[i], y.t[i], e.t[i], dg.t[i]);
  });
  p.check("one_hot", {hot}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_one_hot(ctx, e.t[i], E, hot.t[i]);
  });
}

TEST(CudaKernels, DropoutDrawsTheCpusMask) {
  // The draw is integer hashing: the GPU keeps exactly the CPU's elements.
  Pair p;
  for (whale_rt_context *ctx : {p.gpu, p.cpu}) {
    ASSERT_EQ(whale_rt_set_train_state(ctx, 3, 1.0), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_set_rows(ctx, 40, 1), WHALE_RT_OK);
  }
  auto x = p.random({64, 3, 33}, 40), y = p.make(WHALE_RT_F32, {64, 3, 33});
  p.check("dropout", {y}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_dropout(ctx, x.t[i], 0.3, 1234, 8, y.t[i]);
  });
}

TEST(CudaKernels, BatchNormalizationAndItsGradient) {
  // Channel sums by a block per channel, the affine passes elementwise;
  // the running statistics move alike.
  Pair p;
  for (whale_rt_context *ctx : {p.gpu, p.cpu})
    ASSERT_EQ(whale_rt_set_rows(ctx, 0, 1), WHALE_RT_OK);
  const Shape shape = {12, 5, 9, 7}, c = {5};
  auto x = p.random(shape, 60, -2, 3), g = p.random(c, 61),
       b = p.random(c, 62), rm = p.random(c, 63), rv = p.random(c, 64, 0.5, 2),
       y = p.make(WHALE_RT_F32, shape), mean = p.make(WHALE_RT_F32, c),
       inv = p.make(WHALE_RT_F32, c);
  p.check("batch_norm", {y, mean, inv, rm, rv},
          [&](whale_rt_context *ctx, int i) {
            return whale_rt_batch_norm(ctx, x.t[i], g.t[i], b.t[i], rm.t[i],
                                       rv.t[i], 0.1, 1e-5, 1, y.t[i],
                                       mean.t[i], inv.t[i]);
          });
  auto dy = p.random(shape, 65), dx = p.make(WHALE_RT_F32, shape),
       dg = p.make(WHALE_RT_F32, c), db = p.make(WHALE_RT_F32, c);
  p.check("batch_norm_grad", {dx, dg, db}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_batch_norm_grad(ctx, x.t[i], g.t[i], mean.t[i], inv.t[i],
                                    dy.t[i], dx.t[i], dg.t[i], db.t[i]);
  });
}

TEST(CudaKernels, OptimizersAndClipping) {
  Pair p;
  double shape[] = {0.0, 0.02};
  int64_t s[] = {257, 3};
  whale_rt_tensor *param[2], *grads[2];
  whale_rt_context *ctxs[2] = {p.gpu, p.cpu};
  std::vector<float> g = randomValues(257 * 3, 20);
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(whale_rt_param(ctxs[i], "w", WHALE_RT_INIT_NORMAL, shape, 2, 2, s,
                             &param[i]),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_tensor_create(ctxs[i], WHALE_RT_F32, 2, s, &grads[i]),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_tensor_write(ctxs[i], grads[i], g.data(), g.size() * 4),
              WHALE_RT_OK);
  }
  Pair::Both w{{param[0], param[1]}, {257, 3}};
  Pair::Both dw{{grads[0], grads[1]}, {257, 3}};
  p.check("initial parameter", {w},
          [](whale_rt_context *, int) { return WHALE_RT_OK; });
  double norms[2];
  p.check("clip_grad_norm", {dw}, [&](whale_rt_context *ctx, int i) {
    return whale_rt_clip_grad_norm(ctx, 1, &dw.t[i], 0.5, &norms[i]);
  });
  EXPECT_NEAR(norms[0], norms[1], 1e-6 * norms[1]);
  for (int64_t step = 1; step <= 3; ++step) {
    p.check("adam_update", {w}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_adam_update(ctx, w.t[i], dw.t[i], step, 1e-2, 0.9, 0.999,
                                  1e-8, 0.01, 1);
    });
    p.check("sgd_update", {w}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_sgd_update(ctx, w.t[i], dw.t[i], 0.1, 0.9, 1e-4);
    });
  }
}

TEST(CudaKernels, CrossEntropyOverAVocabularyInOnePass) {
  // Rows of a vocabulary's width: the log-sum-exp in one pass
  // (OnlineLse), read as float4s where the width allows (50,304) and one
  // float at a time where it does not (50,301), with one row masked to
  // -inf but for its label and one far from zero, against the CPU.
  Pair p;
  for (int64_t classes : {50304, 50301}) {
    const int64_t rows = 16;
    std::vector<float> values = randomValues(rows * classes, 50, -8, 8);
    for (int64_t j = 0; j < classes; ++j) {
      if (j != 3)
        values[2 * classes + j] = -INFINITY;
      values[5 * classes + j] += 1e3f;
    }
    std::vector<int32_t> labelValues(rows);
    for (int64_t r = 0; r < rows; ++r)
      labelValues[r] = static_cast<int32_t>((r * 7919) % classes);
    labelValues[2] = 3;
    auto logits = p.f32({rows, classes}, values);
    auto labels = p.ids({rows}, labelValues);
    checkLossAndGradient(p, "(vocabulary)", logits, labels,
                         p.random({rows}, 51));
  }
}

TEST(CudaKernels, SumsOverRowsSplitAmongBlocks) {
  // Bias gradients, layernorm's dgamma and dbeta and sums over leading
  // axes at sizes where the rows are split among blocks and added in a
  // second pass (ColumnSums.h), including a width that is no multiple of
  // a tile, against the CPU.
  Pair p;
  for (int64_t width : {768, 100}) {
    Shape s{4, 1024, width}, bias{width};
    auto a = p.random(s, 30, 0.5f, 2), b = p.random(bias, 31, 0.5f, 2);
    auto dout = p.random(s, 32);
    auto da = p.make(WHALE_RT_F32, s), db = p.make(WHALE_RT_F32, bias);
    auto dbias = p.make(WHALE_RT_F32, bias), dfull = p.make(WHALE_RT_F32, s);
    for (int op = WHALE_RT_ADD; op <= WHALE_RT_DIV; ++op) {
      p.check("binary_grad (a bias)", {da, db},
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_binary_grad(ctx, op, a.t[i], b.t[i], dout.t[i],
                                            da.t[i], db.t[i]);
              });
      // The bias first: the per-column operand is a.
      p.check("binary_grad (bias first)", {dbias, dfull},
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_binary_grad(ctx, op, b.t[i], a.t[i], dout.t[i],
                                            dbias.t[i], dfull.t[i]);
              });
    }
    Shape rows{4096, width};
    auto h = p.random(rows, 33, -2, 2), gamma = p.random(bias, 34, 0.5f, 1.5f);
    auto dy = p.random(rows, 35), dh = p.make(WHALE_RT_F32, rows);
    auto dgamma = p.make(WHALE_RT_F32, bias),
         dbeta = p.make(WHALE_RT_F32, bias);
    p.check("layernorm_grad (split rows)", {dh, dgamma, dbeta},
            [&](whale_rt_context *ctx, int i) {
              return whale_rt_layernorm_grad(ctx, h.t[i], gamma.t[i], 1e-5,
                                             dy.t[i], dh.t[i], dgamma.t[i],
                                             dbeta.t[i]);
            });
    int64_t lead[] = {0, 1};
    auto sums = p.make(WHALE_RT_F32, bias);
    for (int op : {WHALE_RT_SUM, WHALE_RT_MEAN})
      p.check("reduce over leading axes", {sums},
              [&](whale_rt_context *ctx, int i) {
                return whale_rt_reduce(ctx, op, dout.t[i], 2, lead, sums.t[i]);
              });
  }
}

TEST(CudaKernels, ManyTensorsInOneLaunchAsInOneLaunchEach) {
  // 40 gradients (more than a launch's table), sized around the chunk,
  // one empty: clipped on the device (no norm asked for) and updated by
  // whale_rt_adam_steps, against the same tensors clipped with the norm
  // read back and updated one by one. The same numbers, bit for bit; and
  // against the CPU within the op tests' tolerance.
  Pair p;
  const int n = 40;
  std::vector<Shape> shapes;
  for (int i = 0; i < n; ++i)
    shapes.push_back({i == 3 ? 0 : i % 7 == 0 ? 8192 * 3 + 11 : 97 * i + 1});
  whale_rt_context *ctxs[3] = {p.gpu, p.gpu, p.cpu};
  // [0]: batched on the GPU, [1]: one by one on the GPU, [2]: the CPU.
  std::vector<whale_rt_tensor *> params[3], grads[3];
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < n; ++i) {
      whale_rt_tensor *w = nullptr, *g = nullptr;
      ASSERT_EQ(whale_rt_tensor_create(ctxs[c], WHALE_RT_F32, 1,
                                       shapes[i].data(), &w),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_tensor_create(ctxs[c], WHALE_RT_F32, 1,
                                       shapes[i].data(), &g),
                WHALE_RT_OK);
      params[c].push_back(w);
      grads[c].push_back(g);
      std::vector<float> wv = randomValues(count(shapes[i]), 100 + i),
                         gv = randomValues(count(shapes[i]), 200 + i);
      ASSERT_EQ(whale_rt_tensor_write(ctxs[c], w, wv.data(), wv.size() * 4),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_tensor_write(ctxs[c], g, gv.data(), gv.size() * 4),
                WHALE_RT_OK);
    }
  auto readAll = [&](int c, std::vector<whale_rt_tensor *> &ts) {
    std::vector<float> all;
    for (int i = 0; i < n; ++i) {
      std::vector<float> v(count(shapes[i]));
      EXPECT_EQ(whale_rt_tensor_read(ctxs[c], ts[i], v.data(), v.size() * 4),
                WHALE_RT_OK);
      all.insert(all.end(), v.begin(), v.end());
    }
    return all;
  };
  auto compare = [&](const char *what, std::vector<whale_rt_tensor *> *ts) {
    std::vector<float> a = readAll(0, ts[0]), b = readAll(1, ts[1]),
                       c = readAll(2, ts[2]);
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * 4), 0) << what;
    double worst = 0;
    for (size_t i = 0; i < a.size(); ++i)
      worst = worseOf(worst, std::fabs(double(a[i]) - c[i]) /
                                 std::max(1.0, std::fabs(double(c[i]))));
    EXPECT_LT(worst, 1e-5) << what;
    std::printf("  %-24s bit-equal one by one; against the CPU %.2e\n", what,
                worst);
  };
  // Clipping that scales (the norm is far above 1), then one that does not.
  for (double maxNorm : {1.0, 1e6}) {
    double norm = 0;
    ASSERT_EQ(
        whale_rt_clip_grad_norm(p.gpu, n, grads[0].data(), maxNorm, nullptr),
        WHALE_RT_OK)
        << whale_rt_last_error(p.gpu);
    ASSERT_EQ(
        whale_rt_clip_grad_norm(p.gpu, n, grads[1].data(), maxNorm, &norm),
        WHALE_RT_OK);
    ASSERT_EQ(
        whale_rt_clip_grad_norm(p.cpu, n, grads[2].data(), maxNorm, nullptr),
        WHALE_RT_OK);
    compare(maxNorm < 10 ? "clip (scaled)" : "clip (not scaled)", grads);
  }
  for (int64_t step = 1; step <= 3; ++step) {
    for (whale_rt_context *ctx : {p.gpu, p.cpu})
      ASSERT_EQ(whale_rt_set_train_state(ctx, step, 0.5), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_adam_steps(p.gpu, n, params[0].data(), grads[0].data(),
                                  1e-2, 0.9, 0.999, 1e-8, 0.01, 1),
              WHALE_RT_OK)
        << whale_rt_last_error(p.gpu);
    for (int i = 0; i < n; ++i)
      ASSERT_EQ(whale_rt_adam_step(p.gpu, params[1][i], grads[1][i], 1e-2, 0.9,
                                   0.999, 1e-8, 0.01, 1),
                WHALE_RT_OK);
    ASSERT_EQ(whale_rt_adam_steps(p.cpu, n, params[2].data(), grads[2].data(),
                                  1e-2, 0.9, 0.999, 1e-8, 0.01, 1),
              WHALE_RT_OK);
    compare("adam_steps", params);
  }
}

TEST(CudaDevice, MemoryLimitIsEnforcedWithAClearError) {
  whale_rt_context *ctx = nullptr;
  char why[256] = "";
  ASSERT_EQ(
      whale_rt_context_open("cuda:0", 1, 1 << 20, 1, &ctx, why, sizeof why),
      WHALE_RT_OK)
      << why;
  int64_t big[] = {1024, 1024};
  whale_rt_tensor *t = nullptr;
  EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, big, &t),
            WHALE_RT_OUT_OF_MEMORY);
  EXPECT_NE(std::string(whale_rt_last_error(ctx)).find("limit"),
            std::string::npos)
      << whale_rt_last_error(ctx);
  EXPECT_EQ(whale_rt_tensor_data(t), nullptr);
  whale_rt_context_destroy(ctx);
  EXPECT_NE(whale_rt_device_check("cuda:4096", why, sizeof why), WHALE_RT_OK);
}

/// Seconds of `runs` products of two n x n matrices on `ctx`, waited for.
double gemmSeconds(whale_rt_context *ctx, int64_t n, int runs) {
  int64_t shape[] = {n, n};
  whale_rt_tensor *a = nullptr, *b = nullptr, *c = nullptr;
  EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, shape, &a),
            WHALE_RT_OK);
  EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, shape, &b),
            WHALE_RT_OK);
  EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, shape, &c),
            WHALE_RT_OK);
  whale_rt_fill(ctx, a, 0.5);
  whale_rt_fill(ctx, b, 0.25);
  float one = 0;
  whale_rt_matmul(ctx, a, b, c, 0, 0); // warm: cuBLAS's first call
  whale_rt_tensor_read(ctx, c, &one, sizeof one);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i)
    EXPECT_EQ(whale_rt_matmul(ctx, a, b, c, 0, 0), WHALE_RT_OK);
  whale_rt_tensor_read(ctx, c, &one, sizeof one);
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  EXPECT_FLOAT_EQ(one, 0.125f * n);
  for (whale_rt_tensor *t : {a, b, c})
    whale_rt_tensor_release(ctx, t);
  return seconds;
}

TEST(CudaDevice, SharesOfTheSmsAreDisjointDevicesOfTheirSpeed) {
  // A third of an H100's or H200's 132 SMs and two thirds: their ops
  // match the CPU's, and the larger share multiplies faster.
  {
    Pair p("cuda:0@sms=40");
    auto a = p.random({256, 192}, 1), b = p.random({192, 128}, 2);
    auto o = p.make(WHALE_RT_F32, {256, 128});
    p.check("matmul on 40 SMs", {o}, [&](whale_rt_context *ctx, int i) {
      return whale_rt_matmul(ctx, a.t[i], b.t[i], o.t[i], 0, 0);
    });
  }
  char why[512] = "";
  whale_rt_context *small = nullptr, *large = nullptr, *more = nullptr;
  ASSERT_EQ(
      whale_rt_context_open("cuda:0@sms=40", 1, 0, 1, &small, why, sizeof why),
      WHALE_RT_OK)
      << why;
  ASSERT_EQ(
      whale_rt_context_open("cuda:0@sms=88", 1, 0, 1, &large, why, sizeof why),
      WHALE_RT_OK)
      << why;
  // 132 - 40 - 88 = 4 SMs left: no share of 8 fits beside them.
  EXPECT_NE(
      whale_rt_context_open("cuda:0@sms=8", 1, 0, 1, &more, why, sizeof why),
      WHALE_RT_OK);
  EXPECT_NE(std::string(why).find("are left"), std::string::npos) << why;
  EXPECT_NE(
      whale_rt_context_open("cuda:0@sms=44", 1, 0, 1, &more, why, sizeof why),
      WHALE_RT_OK);
  EXPECT_NE(std::string(why).find("multiples of"), std::string::npos) << why;
  // Both at once, on their own threads: disjoint SMs, so each keeps its
  // speed beside the other.
  double tSmall = 0, tLarge = 0;
  std::thread other([&] { tLarge = gemmSeconds(large, 4096, 20); });
  tSmall = gemmSeconds(small, 4096, 20);
  other.join();
  std::printf("  4096^3 fp32 GEMM x 20: 40 SMs %.3f s, 88 SMs %.3f s "
              "(%.2fx; SMs 2.20x)\n",
              tSmall, tLarge, tSmall / tLarge);
  EXPECT_GT(tSmall / tLarge, 1.6);
  whale_rt_context_destroy(large);
  // Its SMs are free again once it closes.
  ASSERT_EQ(
      whale_rt_context_open("cuda:0@sms=88", 1, 0, 1, &large, why, sizeof why),
      WHALE_RT_OK)
      << why;
  whale_rt_context_destroy(large);
  whale_rt_context_destroy(small);
}

TEST(CudaCollectives, AllReduceAcrossTwoGpuContexts) {
  // Two ranks: on two GPUs where there are two (NCCL), else both on GPU 0
  // (in its memory: NCCL takes one rank per GPU).
  char why[256];
  const char *second =
      whale_rt_device_check("cuda:1", why, sizeof why) == WHALE_RT_OK
          ? "cuda:1"
          : "cuda:0";
  whale_rt_comm *comm = whale_rt_comm_create(2, 60);
  whale_rt_context *ctx[2] = {nullptr, nullptr};
  ASSERT_EQ(whale_rt_context_open("cuda:0", 1, 0, 1, &ctx[0], why, sizeof why),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_context_open(second, 1, 0, 1, &ctx[1], why, sizeof why),
            WHALE_RT_OK);
  int32_t grid[] = {0, 1};
  std::vector<std::vector<float>> values = {randomValues(1000, 21),
                                            randomValues(1000, 22)};
  std::vector<float> results[2];
  // Every rank binds before any collective, as the driver does: the group
  // then knows its devices (NCCL for distinct GPUs, the host otherwise).
  for (int r = 0; r < 2; ++r)
    ASSERT_EQ(whale_rt_context_bind(ctx[r], comm, 1, 2, grid, 0, r),
              WHALE_RT_OK);
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r)
    ranks[r] = std::thread([&, r] {
      int64_t s[] = {1000};
      whale_rt_tensor *t;
      ASSERT_EQ(whale_rt_tensor_create(ctx[r], WHALE_RT_F32, 1, s, &t),
                WHALE_RT_OK);
      whale_rt_tensor_write(ctx[r], t, values[r].data(), 4000);
      ASSERT_EQ(whale_rt_all_reduce(ctx[r], WHALE_RT_GROUP_REPLICAS, 1, &t),
                WHALE_RT_OK)
          << whale_rt_last_error(ctx[r]);
      results[r].resize(1000);
      whale_rt_tensor_read(ctx[r], t, results[r].data(), 4000);
    });
  for (std::thread &t : ranks)
    t.join();
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 1000; ++i)
      ASSERT_NEAR(results[r][i], values[0][i] + values[1][i], 1e-6f);
  whale_rt_context_destroy(ctx[0]);
  whale_rt_context_destroy(ctx[1]);
  whale_rt_comm_destroy(comm);
}

TEST(CudaCollectives, RanksSharingOneGpuSumAndSendInItsMemory) {
  // Two contexts of GPU 0 as replicas, then as stages: the sums are the
  // host's order's bits (a + b in fp32), ZeRO's owners get their parts,
  // and a pipeline's sends arrive in tag order, all in the GPU's memory
  // (runtime/comm/SharedDeviceGroup.h).
  char why[256];
  constexpr int64_t n = 1 << 20;
  const std::vector<std::vector<float>> values = {randomValues(n, 31),
                                                  randomValues(n, 32)};
  for (bool stages : {false, true}) {
    whale_rt_comm *comm = whale_rt_comm_create(2, 60);
    whale_rt_context *ctx[2] = {nullptr, nullptr};
    int32_t grid[] = {0, 1};
    for (int r = 0; r < 2; ++r) {
      ASSERT_EQ(
          whale_rt_context_open("cuda:0", 1, 0, 1, &ctx[r], why, sizeof why),
          WHALE_RT_OK)
          << why;
      ASSERT_EQ(whale_rt_context_bind(ctx[r], comm, stages ? 2 : 1,
                                      stages ? 1 : 2, grid, stages ? r : 0,
                                      stages ? 0 : r),
                WHALE_RT_OK);
    }
    std::vector<float> summed[2], owned[2], received;
    std::thread ranks[2];
    for (int r = 0; r < 2; ++r)
      ranks[r] = std::thread([&, r] {
        int64_t s[] = {n};
        whale_rt_tensor *t = nullptr, *u = nullptr;
        ASSERT_EQ(whale_rt_tensor_create(ctx[r], WHALE_RT_F32, 1, s, &t),
                  WHALE_RT_OK);
        ASSERT_EQ(whale_rt_tensor_create(ctx[r], WHALE_RT_F32, 1, s, &u),
                  WHALE_RT_OK);
        whale_rt_tensor_write(ctx[r], t, values[r].data(), 4 * n);
        whale_rt_tensor_write(ctx[r], u, values[r].data(), 4 * n);
        if (stages) {
          // Tag 2 sent first, received second.
          if (r == 0) {
            ASSERT_EQ(whale_rt_send(ctx[0], 1, 2, t), WHALE_RT_OK)
                << whale_rt_last_error(ctx[0]);
            ASSERT_EQ(whale_rt_send(ctx[0], 1, 3, u), WHALE_RT_OK)
                << whale_rt_last_error(ctx[0]);
            return;
          }
          ASSERT_EQ(whale_rt_recv(ctx[1], 0, 3, u), WHALE_RT_OK)
              << whale_rt_last_error(ctx[1]);
          ASSERT_EQ(whale_rt_recv(ctx[1], 0, 2, t), WHALE_RT_OK)
              << whale_rt_last_error(ctx[1]);
          received.resize(n);
          whale_rt_tensor_read(ctx[1], t, received.data(), 4 * n);
          return;
        }
        ASSERT_EQ(whale_rt_all_reduce(ctx[r], WHALE_RT_GROUP_REPLICAS, 1, &t),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctx[r]);
        const int32_t owners[] = {1};
        ASSERT_EQ(whale_rt_reduce_to_owners(ctx[r], WHALE_RT_GROUP_REPLICAS, 0,
                                            1, &u, owners),
                  WHALE_RT_OK)
            << whale_rt_last_error(ctx[r]);
        summed[r].resize(n);
        owned[r].resize(n);
        whale_rt_tensor_read(ctx[r], t, summed[r].data(), 4 * n);
        whale_rt_tensor_read(ctx[r], u, owned[r].data(), 4 * n);
      });
    for (std::thread &t : ranks)
      t.join();
    if (stages) {
      ASSERT_EQ(received, values[0]);
    } else {
      for (int r = 0; r < 2; ++r)
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(summed[r][i], values[0][i] + values[1][i]) << r << " " << i;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(owned[1][i], values[0][i] + values[1][i]) << i;
    }
    whale_rt_context_destroy(ctx[0]);
    whale_rt_context_destroy(ctx[1]);
    whale_rt_comm_destroy(comm);
  }
}

/// A train step of a small regression with dropout, Adam at the
/// context's step and lr scale, and an embedding whose ids the step
/// checks: loss = mean(dropout(embed(ids) @ w)).
int32_t heldStep(whale_rt_context *ctx, whale_rt_tensor *ids,
                 whale_rt_tensor *table, whale_rt_tensor **loss) {
  const int64_t rows = 64, width = 32, out = 48;
  const int64_t wShape[2] = {width, out}, yShape[2] = {rows, out},
                eShape[2] = {rows, width};
  const double init[2] = {0.0, 0.2};
  const int64_t axes[2] = {0, 1};
  whale_rt_tensor *w = nullptr, *e = nullptr, *y = nullptr, *z = nullptr,
                  *l = nullptr, *dl = nullptr, *dz = nullptr, *dy = nullptr,
                  *dw = nullptr;
  int32_t st =
      whale_rt_param(ctx, "w", WHALE_RT_INIT_NORMAL, init, 2, 2, wShape, &w);
  for (whale_rt_tensor **t : {&e})
    st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, eShape, t);
  for (whale_rt_tensor **t : {&y, &z, &dz, &dy})
    st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, yShape, t);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 0, nullptr, &l);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 0, nullptr, &dl);
  st = st ? st : whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, wShape, &dw);
  st = st ? st : whale_rt_embedding(ctx, table, ids, e);
  st = st ? st : whale_rt_matmul(ctx, e, w, y, 0, 0);
  st = st ? st : whale_rt_dropout(ctx, y, 0.25, 1, 0, z);
  st = st ? st : whale_rt_reduce(ctx, WHALE_RT_MEAN, z, 2, axes, l);
  st = st ? st : whale_rt_fill(ctx, dl, 1.0);
  st = st ? st : whale_rt_reduce_grad(ctx, WHALE_RT_MEAN, z, 2, axes, dl, dz);
  st = st ? st : whale_rt_dropout(ctx, dz, 0.25, 1, 0, dy);
  st = st ? st : whale_rt_matmul_grad(ctx, e, w, dy, nullptr, dw, 0, 0);
  st = st ? st
          : whale_rt_adam_steps(ctx, 1, &w, &dw, 0.05, 0.9, 0.999, 1e-8, 0.01,
                                1);
  for (whale_rt_tensor *t : {e, y, z, dl, dz, dy, dw})
    if (t)
      whale_rt_tensor_release(ctx, t);
  *loss = l;
  return st;
}

/// Eight steps of heldStep on a GPU context, each at its own lr scale;
/// with `hold`, the third captured and it and the rest replayed. The
/// losses and the parameter after.
struct HeldRun {
  whale_rt_context *ctx = nullptr;
  whale_rt_tensor *ids = nullptr, *table = nullptr, *kept = nullptr;
  std::vector<float> losses, w;
  int64_t held[4] = {0, 0, 0, 0};

  HeldRun() {
    char why[512] = "";
    EXPECT_EQ(whale_rt_context_open("cuda:0", 1, 0, 7, &ctx, why, sizeof why),
              WHALE_RT_OK)
        << why;
    const int64_t idShape[1] = {64}, tShape[2] = {10, 32};
    EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_I32, 1, idShape, &ids),
              WHALE_RT_OK);
    EXPECT_EQ(whale_rt_tensor_create(ctx, WHALE_RT_F32, 2, tShape, &table),
              WHALE_RT_OK);
    std::vector<float> t = randomValues(320, 11);
    EXPECT_EQ(whale_rt_tensor_write(ctx, table, t.data(), t.size() * 4),
              WHALE_RT_OK);
  }
  void run(bool hold, int32_t badIdAtStep = 0) {
    for (int32_t step = 1; step <= 8; ++step) {
      std::vector<int32_t> id(64);
      for (int i = 0; i < 64; ++i)
        id[i] = (i * 7 + step) % 10;
      if (step == badIdAtStep)
        id[5] = 99;
      ASSERT_EQ(whale_rt_tensor_write(ctx, ids, id.data(), 64 * 4),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_set_train_state(ctx, step, 1.0 / step), WHALE_RT_OK);
      ASSERT_EQ(whale_rt_set_rows(ctx, 0, 1), WHALE_RT_OK);
      whale_rt_tensor *loss = nullptr;
      int32_t st;
      if (hold && step == 2) {
        ASSERT_EQ(whale_rt_step_capture_probe(ctx, 1), WHALE_RT_OK);
        st = heldStep(ctx, ids, table, &loss);
        ASSERT_EQ(whale_rt_step_capture_probe(ctx, 0), WHALE_RT_OK);
        EXPECT_STREQ(whale_rt_step_capture_blocker(ctx), "");
      } else if (hold && step == 3) {
        ASSERT_EQ(whale_rt_step_capture_begin(ctx), WHALE_RT_OK)
            << whale_rt_last_error(ctx);
        ASSERT_EQ(heldStep(ctx, ids, table, &kept), WHALE_RT_OK)
            << whale_rt_last_error(ctx);
        ASSERT_EQ(whale_rt_step_capture_end(ctx, held), WHALE_RT_OK)
            << whale_rt_last_error(ctx);
        loss = kept;
        st = whale_rt_step_replay(ctx);
      } else if (hold && step > 3) {
        loss = kept;
        st = whale_rt_step_replay(ctx);
      } else {
        st = heldStep(ctx, ids, table, &loss);
      }
      if (step == badIdAtStep) {
        EXPECT_NE(st, WHALE_RT_OK);
        EXPECT_STREQ(whale_rt_last_error(ctx),
                     "embedding id 99 at position 5 is outside [0, 10)");
        return;
      }
      ASSERT_EQ(st, WHALE_RT_OK) << whale_rt_last_error(ctx);
      float value = 0;
      ASSERT_EQ(whale_rt_tensor_read(ctx, loss, &value, 4), WHALE_RT_OK);
      losses.push_back(value);
      if (loss != kept)
        whale_rt_tensor_release(ctx, loss);
    }
    whale_rt_tensor *p = nullptr;
    whale_rt_param_name(ctx, 0, &p);
    w.resize(32 * 48);
    EXPECT_EQ(whale_rt_tensor_read(ctx, p, w.data(), w.size() * 4),
              WHALE_RT_OK);
  }
  ~HeldRun() {
    whale_rt_step_capture_drop(ctx);
    whale_rt_context_destroy(ctx);
  }
};

TEST(CudaGraphs, AHeldStepReplaysTheStepsRunOpByOp) {
  HeldRun held, direct;
  held.run(true);
  direct.run(false);
  // The same kernels on the same values: bit for bit, each replay with its
  // own step's dropout draws, lr scale and bias corrections.
  ASSERT_EQ(held.losses.size(), 8u);
  EXPECT_EQ(held.losses, direct.losses);
  EXPECT_EQ(held.w, direct.w);
  EXPECT_NE(held.losses[3], held.losses[7]);
  // Every op of the step held: the embedding, GEMMs, dropouts, the
  // reduction and its gradient, the fill, Adam, and their copies.
  EXPECT_GE(held.held[0], 9);
  EXPECT_GE(held.held[1], 8);
  std::printf("held step: %lld operations (%lld kernels, %lld copies, %lld "
              "fills)\n",
              static_cast<long long>(held.held[0]),
              static_cast<long long>(held.held[1]),
              static_cast<long long>(held.held[2]),
              static_cast<long long>(held.held[3]));
}

TEST(CudaGraphs, AReplayReportsAnIdOutOfRange) {
  HeldRun held;
  held.run(true, /*badIdAtStep=*/6);
  EXPECT_EQ(held.losses.size(), 5u);
}

} // namespace
