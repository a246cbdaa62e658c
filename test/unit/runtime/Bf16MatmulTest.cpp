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

#include "Bf16Tensors.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace {

using whale::testing::numel;

/// The reference of these products is not small: its mean magnitude is
/// above 0.1.
void expectStoredAs(whale_rt_tensor *got, whale_rt_tensor *ref,
                    const char *what) {
  whale::testing::expectStoredAs(got, ref, what, 0.1);
}

using Ctx = whale::testing::Bf16Runtime;

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
    auto [a, a32] = c.pairFrom(rng, operandShape(batch, m, k, f.ta, false));
    auto [b, b32] = c.pairFrom(rng, operandShape(batch, k, n, f.tb, f.sharedB));
    auto [dout, d32] = c.pairFrom(rng, {batch, m, n});
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
  auto [a, a32] = c.pairFrom(rng, {2, 3});
  auto [b, b32] = c.pairFrom(rng, {3, 2});
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
