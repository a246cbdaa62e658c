//===- LinearLayerTest.cpp - linear layers' epilogue ops against theirs ---===//
//
// whale_rt_linear is the product, the bias and the GELU of a linear layer
// in one call (a GPU applies them in its GEMM's epilogue);
// whale_rt_linear_weight_grad its weight's and bias's gradients, and
// whale_rt_gelu_matmul_grad the gradient through a product and the GELU
// before it. On the CPU each composes the same kernels as the calls the
// unfused program makes, so the results are the same bits; a bad call
// fails with what was wrong.
//
//===----------------------------------------------------------------------===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace {

using whale::testing::TestRuntime;

std::vector<float> values(int64_t n, float scale, float phase) {
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.37f * i + phase);
  return v;
}

std::vector<float> read(whale_rt_tensor *t, int64_t n) {
  const float *d = TestRuntime::data<float>(t);
  return std::vector<float>(d, d + n);
}

TEST(LinearLayer, IsTheProductBiasAndGeluOfTheUnfusedCalls) {
  TestRuntime rt;
  const int64_t b = 2, m = 5, k = 7, n = 6;
  for (int transW = 0; transW < 2; ++transW)
    for (int gelu = 0; gelu < 2; ++gelu) {
      whale_rt_tensor *x = rt.f32({b, m, k}, values(b * m * k, 1.5f, 0.1f));
      std::vector<int64_t> ws =
          transW ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
      whale_rt_tensor *w = rt.f32(ws, values(k * n, 0.8f, 0.7f));
      whale_rt_tensor *bias = rt.f32({n}, values(n, 0.5f, 2.0f));
      whale_rt_tensor *out = rt.make(WHALE_RT_F32, {b, m, n});
      whale_rt_tensor *pre = gelu ? rt.make(WHALE_RT_F32, {b, m, n}) : nullptr;
      ASSERT_EQ(whale_rt_linear(rt.ctx, x, w, bias, out, pre, transW, gelu),
                WHALE_RT_OK)
          << whale_rt_last_error(rt.ctx);

      whale_rt_tensor *z = rt.make(WHALE_RT_F32, {b, m, n});
      whale_rt_tensor *y = rt.make(WHALE_RT_F32, {b, m, n});
      whale_rt_tensor *h = rt.make(WHALE_RT_F32, {b, m, n});
      ASSERT_EQ(whale_rt_matmul(rt.ctx, x, w, z, 0, transW), WHALE_RT_OK);
      ASSERT_EQ(whale_rt_binary(rt.ctx, WHALE_RT_ADD, z, bias, y), WHALE_RT_OK);
      ASSERT_EQ(whale_rt_unary(rt.ctx, WHALE_RT_GELU, y, h), WHALE_RT_OK);
      const int64_t size = b * m * n;
      EXPECT_EQ(read(out, size), read(gelu ? h : y, size))
          << "transpose " << transW << ", gelu " << gelu;
      if (pre) {
        EXPECT_EQ(read(pre, size), read(y, size));
      }
      for (whale_rt_tensor *t : {x, w, bias, out, pre, z, y, h})
        if (t)
          whale_rt_tensor_release(rt.ctx, t);
    }
}

TEST(LinearLayer, GradientsAreTheUnfusedCalls) {
  TestRuntime rt;
  const int64_t b = 2, m = 5, k = 7, n = 6;
  for (int transW = 0; transW < 2; ++transW) {
    std::vector<int64_t> ws =
        transW ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n};
    whale_rt_tensor *x = rt.f32({b, m, k}, values(b * m * k, 1.5f, 0.1f));
    whale_rt_tensor *w = rt.f32(ws, values(k * n, 0.8f, 0.7f));
    whale_rt_tensor *bias = rt.f32({n}, values(n, 0.5f, 2.0f));
    whale_rt_tensor *dy = rt.f32({b, m, n}, values(b * m * n, 1.1f, 0.3f));

    // The weight's and the bias's gradients in one call.
    whale_rt_tensor *dw = rt.make(WHALE_RT_F32, ws);
    whale_rt_tensor *db = rt.make(WHALE_RT_F32, {n});
    ASSERT_EQ(whale_rt_linear_weight_grad(rt.ctx, x, dy, dw, db, transW),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    whale_rt_tensor *dw2 = rt.make(WHALE_RT_F32, ws);
    whale_rt_tensor *db2 = rt.make(WHALE_RT_F32, {n});
    ASSERT_EQ(whale_rt_matmul_grad(rt.ctx, x, w, dy, nullptr, dw2, 0, transW),
              WHALE_RT_OK);
    ASSERT_EQ(
        whale_rt_binary_grad(rt.ctx, WHALE_RT_ADD, dy, bias, dy, nullptr, db2),
        WHALE_RT_OK);
    EXPECT_EQ(read(dw, k * n), read(dw2, k * n)) << "transpose " << transW;
    EXPECT_EQ(read(db, n), read(db2, n)) << "transpose " << transW;

    // Through the product and the GELU that made its input (x stands for
    // the preactivation).
    whale_rt_tensor *dpre = rt.make(WHALE_RT_F32, {b, m, k});
    ASSERT_EQ(whale_rt_gelu_matmul_grad(rt.ctx, x, w, dy, dpre, transW),
              WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    whale_rt_tensor *dh = rt.make(WHALE_RT_F32, {b, m, k});
    whale_rt_tensor *h = rt.make(WHALE_RT_F32, {b, m, k});
    whale_rt_tensor *dpre2 = rt.make(WHALE_RT_F32, {b, m, k});
    ASSERT_EQ(whale_rt_unary(rt.ctx, WHALE_RT_GELU, x, h), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_matmul_grad(rt.ctx, h, w, dy, dh, nullptr, 0, transW),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_unary_grad(rt.ctx, WHALE_RT_GELU, x, h, dh, dpre2),
              WHALE_RT_OK);
    EXPECT_EQ(read(dpre, b * m * k), read(dpre2, b * m * k))
        << "transpose " << transW;
    for (whale_rt_tensor *t :
         {x, w, bias, dy, dw, db, dw2, db2, dpre, dh, h, dpre2})
      whale_rt_tensor_release(rt.ctx, t);
  }
}

TEST(LinearLayer, GradientsRefuseWhatDoesNotFit) {
  TestRuntime rt;
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {4, 8});
  whale_rt_tensor *w = rt.make(WHALE_RT_F32, {8, 3});
  whale_rt_tensor *dy = rt.make(WHALE_RT_F32, {4, 3});
  whale_rt_tensor *db = rt.make(WHALE_RT_F32, {3});
  whale_rt_tensor *dx = rt.make(WHALE_RT_F32, {4, 8});
  auto refused = [&](whale_rt_status s, const char *why) {
    EXPECT_EQ(s, WHALE_RT_INVALID_ARGUMENT) << why;
    EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find(why),
              std::string::npos)
        << whale_rt_last_error(rt.ctx);
  };
  whale_rt_tensor *otherRows = rt.make(WHALE_RT_F32, {5, 3});
  refused(whale_rt_linear_weight_grad(rt.ctx, x, otherRows, w, db, 0),
          "linear_weight_grad: dout is [5, 3], the product [4, 3]");
  whale_rt_tensor *wideBias = rt.make(WHALE_RT_F32, {4});
  refused(whale_rt_linear_weight_grad(rt.ctx, x, dy, w, wideBias, 0),
          "the output is [4] but the result is [3]");
  refused(whale_rt_linear_weight_grad(rt.ctx, x, dy, w, db, 1), "do not fit");
  refused(whale_rt_linear_weight_grad(rt.ctx, x, dy, nullptr, db, 0),
          "'dw' is null");
  whale_rt_tensor *ids = rt.make(WHALE_RT_I32, {4, 8});
  refused(whale_rt_gelu_matmul_grad(rt.ctx, ids, w, dy, dx, 0),
          "gelu_matmul_grad: 'pre' is i32, expected f32");
  refused(whale_rt_gelu_matmul_grad(rt.ctx, x, w, otherRows, dx, 0),
          "gelu_matmul_grad: dout is [5, 3], the product [4, 3]");
  refused(whale_rt_gelu_matmul_grad(rt.ctx, x, w, dy, otherRows, 0),
          "the output is [5, 3] but the result is [4, 8]");
  for (whale_rt_tensor *t : {x, w, dy, db, dx, otherRows, wideBias, ids})
    whale_rt_tensor_release(rt.ctx, t);
}

TEST(LinearLayer, RefusesWhatDoesNotFit) {
  TestRuntime rt;
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {4, 8});
  whale_rt_tensor *w = rt.make(WHALE_RT_F32, {8, 3});
  whale_rt_tensor *bias = rt.make(WHALE_RT_F32, {3});
  whale_rt_tensor *out = rt.make(WHALE_RT_F32, {4, 3});
  auto fails = [&](whale_rt_tensor *xx, whale_rt_tensor *ww,
                   whale_rt_tensor *bb, whale_rt_tensor *oo,
                   whale_rt_tensor *pre, int gelu, const char *why) {
    EXPECT_EQ(whale_rt_linear(rt.ctx, xx, ww, bb, oo, pre, 0, gelu),
              WHALE_RT_INVALID_ARGUMENT)
        << why;
    EXPECT_NE(std::string(whale_rt_last_error(rt.ctx)).find(why),
              std::string::npos)
        << whale_rt_last_error(rt.ctx);
  };
  whale_rt_tensor *wideBias = rt.make(WHALE_RT_F32, {4});
  fails(x, w, wideBias, out, nullptr, 0, "bias [4] must be [3]");
  whale_rt_tensor *tall = rt.make(WHALE_RT_F32, {9, 3});
  fails(x, tall, bias, out, nullptr, 0, "do not fit");
  fails(x, w, bias, out, out, 0, "needs gelu");
  whale_rt_tensor *ids = rt.make(WHALE_RT_I32, {4, 8});
  fails(ids, w, bias, out, nullptr, 0, "'x' is i32, expected f32");
  fails(x, w, nullptr, out, nullptr, 0, "'bias' is null");
  whale_rt_tensor *wrongOut = rt.make(WHALE_RT_F32, {4, 4});
  EXPECT_EQ(whale_rt_linear(rt.ctx, x, w, bias, wrongOut, nullptr, 0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  for (whale_rt_tensor *t : {x, w, bias, out, wideBias, tall, ids, wrongOut})
    whale_rt_tensor_release(rt.ctx, t);
}

} // namespace
