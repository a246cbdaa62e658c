//===- Bf16MatmulTest.cpp - matmuls on amp's bf16 storage -----------------===//
//
// Under amp's storage a matmul reads bf16 operands and stores each result in
// bf16 (rounded once) or in fp32 (a weight's gradient, logits for an fp32
// loss). Its numbers are the fp32 kernel's on the widened operands: exact
// products of bf16 values summed in fp32, which is what the tensor cores
// compute. These pin that through the C ABI for every transpose and batch
// form, and the types it refuses.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"
#include "runtime/ops/Bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using whale::rt::bf16Bits;

int64_t numel(const whale_rt_tensor *t) {
  int64_t n = 1;
  for (int32_t i = 0; i < whale_rt_tensor_rank(t); ++i)
    n *= whale_rt_tensor_shape(t)[i];
  return n;
}
using whale::rt::bf16Value;

struct Ctx : whale::testing::TestRuntime {
  Ctx() : TestRuntime(1, 0) {}

  /// A bf16 tensor of random bf16 values and an f32 tensor of the same.
  std::pair<whale_rt_tensor *, whale_rt_tensor *>
  pair(std::vector<int64_t> shape, std::mt19937 &rng) {
    whale_rt_tensor *h = make(WHALE_RT_BF16, shape);
    whale_rt_tensor *f = make(WHALE_RT_F32, shape);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    int64_t n = numel(h);
    for (int64_t i = 0; i < n; ++i) {
      uint16_t w = bf16Bits(normal(rng));
      data<uint16_t>(h)[i] = w;
      data<float>(f)[i] = bf16Value(w);
    }
    return {h, f};
  }
};

/// The f32 reference must be non-trivial, and `got` (f32 or bf16) the
/// reference exactly: f32 as it is, bf16 rounded once from it.
void expectStoredAs(whale_rt_tensor *got, whale_rt_tensor *ref,
                    const char *what) {
  int64_t n = numel(ref);
  const float *r = Ctx::data<float>(ref);
  double norm = 0;
  for (int64_t i = 0; i < n; ++i)
    norm += std::abs(r[i]);
  EXPECT_GT(norm, 0.1 * static_cast<double>(n)) << what;
  for (int64_t i = 0; i < n; ++i) {
    if (whale_rt_tensor_dtype(got) == WHALE_RT_BF16)
      ASSERT_EQ(Ctx::data<uint16_t>(got)[i], bf16Bits(r[i]))
          << what << " " << i;
    else
      ASSERT_EQ(Ctx::data<float>(got)[i], r[i]) << what << " " << i;
  }
}

struct Form {
  bool ta, tb, sharedB;
};

std::vector<int64_t> operandShape(int64_t batch, int64_t rows, int64_t cols,
                                  bool trans, bool shared) {
  std::vector<int64_t> s;
  if (!shared)
    s.push_back(batch);
  s.push_back(trans ? cols : rows);
  s.push_back(trans ? rows : cols);
  return s;
}

TEST(Bf16Matmul, EveryFormIsTheFp32KernelOnTheWidenedOperands) {
  const int64_t batch = 3, m = 5, k = 7, n = 4;
  std::mt19937 rng(11);
  for (Form f : {Form{false, false, true}, Form{false, true, true},
                 Form{true, false, true}, Form{true, true, true},
                 Form{false, false, false}, Form{true, true, false}}) {
    SCOPED_TRACE(testing::Message() << "ta " << f.ta << " tb " << f.tb
                                    << " shared b " << f.sharedB);
    Ctx c;
    auto [a, a32] = c.pair(operandShape(batch, m, k, f.ta, false), rng);
    auto [b, b32] = c.pair(operandShape(batch, k, n, f.tb, f.sharedB), rng);
    auto [dout, d32] = c.pair({batch, m, n}, rng);
    whale_rt_tensor *ref = c.make(WHALE_RT_F32, {batch, m, n});
    ASSERT_EQ(whale_rt_matmul(c.ctx, a32, b32, ref, f.ta, f.tb), WHALE_RT_OK);
    for (int32_t out : {WHALE_RT_BF16, WHALE_RT_F32}) {
      whale_rt_tensor *y = c.make(out, {batch, m, n});
      ASSERT_EQ(whale_rt_matmul(c.ctx, a, b, y, f.ta, f.tb), WHALE_RT_OK)
          << whale_rt_last_error(c.ctx);
      expectStoredAs(y, ref, "out");
    }

    whale_rt_tensor *da32 =
        c.make(WHALE_RT_F32, operandShape(batch, m, k, f.ta, false));
    whale_rt_tensor *db32 =
        c.make(WHALE_RT_F32, operandShape(batch, k, n, f.tb, f.sharedB));
    ASSERT_EQ(
        whale_rt_matmul_grad(c.ctx, a32, b32, d32, da32, db32, f.ta, f.tb),
        WHALE_RT_OK);
    // An activation's gradient in bf16, a weight's in fp32, and the other
    // way round; each alone too.
    for (auto [ta16, tb16] : {std::pair{true, false}, std::pair{false, true}}) {
      whale_rt_tensor *da = c.make(ta16 ? WHALE_RT_BF16 : WHALE_RT_F32,
                                   operandShape(batch, m, k, f.ta, false));
      whale_rt_tensor *db = c.make(tb16 ? WHALE_RT_BF16 : WHALE_RT_F32,
                                   operandShape(batch, k, n, f.tb, f.sharedB));
      ASSERT_EQ(whale_rt_matmul_grad(c.ctx, a, b, dout, da, db, f.ta, f.tb),
                WHALE_RT_OK)
          << whale_rt_last_error(c.ctx);
      expectStoredAs(da, da32, "da");
      expectStoredAs(db, db32, "db");
      ASSERT_EQ(
          whale_rt_matmul_grad(c.ctx, a, b, dout, nullptr, db, f.ta, f.tb),
          WHALE_RT_OK);
      expectStoredAs(db, db32, "db alone");
    }
  }
}

TEST(Bf16Matmul, RefusesMixedInputsAndBf16FromFp32) {
  Ctx c;
  std::mt19937 rng(3);
  auto [a, a32] = c.pair({2, 3}, rng);
  auto [b, b32] = c.pair({3, 2}, rng);
  whale_rt_tensor *y16 = c.make(WHALE_RT_BF16, {2, 2});
  whale_rt_tensor *y32 = c.make(WHALE_RT_F32, {2, 2});
  EXPECT_EQ(whale_rt_matmul(c.ctx, a, b32, y32, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul: 'b' is f32, expected bf16 as 'a' is");
  EXPECT_EQ(whale_rt_matmul(c.ctx, a32, b32, y16, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul: 'out' is bf16, expected f32");
  whale_rt_tensor *yi = c.make(WHALE_RT_I32, {2, 2});
  EXPECT_EQ(whale_rt_matmul(c.ctx, a, b, yi, 0, 0), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul: 'out' is i32, expected f32 or bf16");
  EXPECT_EQ(whale_rt_matmul_grad(c.ctx, a, b, y32, nullptr, b32, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul_grad: 'dout' is f32, expected bf16 as 'a' is");
  EXPECT_EQ(whale_rt_matmul_grad(c.ctx, a, b, y16, nullptr, yi, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "matmul_grad: 'db' is i32, expected f32 or bf16");
}

} // namespace
