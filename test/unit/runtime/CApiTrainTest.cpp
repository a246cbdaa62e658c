//===- CApiTrainTest.cpp - gradients and optimizers through the C ABI -----===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct Ctx : whale::testing::TestRuntime {
  Ctx() : TestRuntime(/*seed=*/3) {}
  float *f(whale_rt_tensor *t) { return data<float>(t); }
};

TEST(RuntimeCApiTrain, ASoftmaxClassifierLearnsThroughTheAbiAlone) {
  // 32 points in 4 dimensions, labelled by a fixed linear teacher over 3
  // classes: a problem a linear model solves. Forward, backward and SGD
  // all go through the C ABI, as lowered train steps will.
  Ctx c;
  const int64_t n = 32, d = 4, k = 3;
  whale_rt_tensor *x = c.make(WHALE_RT_F32, {n, d}),
                  *y = c.make(WHALE_RT_I32, {n});
  int32_t *labels = static_cast<int32_t *>(whale_rt_tensor_data(y));
  const float teacher[4][3] = {{2, -1, 0}, {-1, 2, 0}, {0, 0, 2}, {1, 1, -2}};
  for (int64_t i = 0; i < n; ++i) {
    float best = -1e9f;
    for (int64_t j = 0; j < d; ++j)
      c.f(x)[i * d + j] = std::sin(1.3f * i + 0.7f * j) * 2;
    for (int64_t cls = 0; cls < k; ++cls) {
      float s = 0;
      for (int64_t j = 0; j < d; ++j)
        s += c.f(x)[i * d + j] * teacher[j][cls];
      if (s > best) {
        best = s;
        labels[i] = static_cast<int32_t>(cls);
      }
    }
  }
  int64_t ws[] = {d, k}, bs[] = {k};
  double normal[] = {0.0, 0.1};
  whale_rt_tensor *w = nullptr, *b = nullptr;
  ASSERT_EQ(
      whale_rt_param(c.ctx, "w", WHALE_RT_INIT_NORMAL, normal, 2, 2, ws, &w),
      WHALE_RT_OK);
  ASSERT_EQ(
      whale_rt_param(c.ctx, "b", WHALE_RT_INIT_ZEROS, nullptr, 0, 1, bs, &b),
      WHALE_RT_OK);

  whale_rt_tensor *h = c.make(WHALE_RT_F32, {n, k}),
                  *logits = c.make(WHALE_RT_F32, {n, k}),
                  *ce = c.make(WHALE_RT_F32, {n}),
                  *loss = c.make(WHALE_RT_F32, {}),
                  *dloss = c.make(WHALE_RT_F32, {}),
                  *dce = c.make(WHALE_RT_F32, {n}),
                  *dlogits = c.make(WHALE_RT_F32, {n, k}),
                  *dh = c.make(WHALE_RT_F32, {n, k}),
                  *dw = c.make(WHALE_RT_F32, {d, k}),
                  *db = c.make(WHALE_RT_F32, {k});
  int64_t axes[] = {0};
  std::vector<float> losses;
  for (int step = 0; step < 60; ++step) {
    ASSERT_EQ(whale_rt_matmul(c.ctx, x, w, h, 0, 0), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_binary(c.ctx, WHALE_RT_ADD, h, b, logits), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_cross_entropy(c.ctx, logits, y, ce), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_reduce(c.ctx, WHALE_RT_MEAN, ce, 1, axes, loss),
              WHALE_RT_OK);
    losses.push_back(*c.f(loss));
    ASSERT_EQ(whale_rt_fill(c.ctx, dloss, 1.0), WHALE_RT_OK);
    ASSERT_EQ(
        whale_rt_reduce_grad(c.ctx, WHALE_RT_MEAN, ce, 1, axes, dloss, dce),
        WHALE_RT_OK);
    ASSERT_EQ(whale_rt_cross_entropy_grad(c.ctx, logits, y, dce, dlogits),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_binary_grad(c.ctx, WHALE_RT_ADD, h, b, dlogits, dh, db),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    ASSERT_EQ(whale_rt_matmul_grad(c.ctx, x, w, dh, nullptr, dw, 0, 0),
              WHALE_RT_OK);
    ASSERT_EQ(whale_rt_sgd_update(c.ctx, w, dw, 0.5, 0.9, 0.0), WHALE_RT_OK);
    ASSERT_EQ(whale_rt_sgd_update(c.ctx, b, db, 0.5, 0.9, 0.0), WHALE_RT_OK);
  }
  EXPECT_NEAR(losses.front(), std::log(3.0), 0.3);
  EXPECT_LT(losses.back(), 0.25 * losses.front());
  // The gradient of one weight against a finite difference of the loss,
  // in f32 (h = 1e-2 keeps rounding small against the change).
  auto lossAt = [&] {
    EXPECT_EQ(whale_rt_matmul(c.ctx, x, w, h, 0, 0), WHALE_RT_OK);
    EXPECT_EQ(whale_rt_binary(c.ctx, WHALE_RT_ADD, h, b, logits), WHALE_RT_OK);
    EXPECT_EQ(whale_rt_cross_entropy(c.ctx, logits, y, ce), WHALE_RT_OK);
    EXPECT_EQ(whale_rt_reduce(c.ctx, WHALE_RT_MEAN, ce, 1, axes, loss),
              WHALE_RT_OK);
    return static_cast<double>(*c.f(loss));
  };
  lossAt();
  whale_rt_reduce_grad(c.ctx, WHALE_RT_MEAN, ce, 1, axes, dloss, dce);
  whale_rt_cross_entropy_grad(c.ctx, logits, y, dce, dlogits);
  whale_rt_matmul_grad(c.ctx, x, w, dlogits, nullptr, dw, 0, 0);
  float analytic = c.f(dw)[5], saved = c.f(w)[5];
  c.f(w)[5] = saved + 1e-2f;
  double up = lossAt();
  c.f(w)[5] = saved - 1e-2f;
  double down = lossAt();
  c.f(w)[5] = saved;
  EXPECT_NEAR(analytic, (up - down) / 2e-2, 2e-3 + 2e-2 * std::fabs(analytic));
}

TEST(RuntimeCApiTrain, AdamStateIsCountedOnTheDevice) {
  Ctx c;
  int64_t shape[] = {256};
  whale_rt_tensor *p = nullptr;
  ASSERT_EQ(
      whale_rt_param(c.ctx, "p", WHALE_RT_INIT_ONES, nullptr, 0, 1, shape, &p),
      WHALE_RT_OK);
  whale_rt_tensor *g = c.make(WHALE_RT_F32, {256});
  whale_rt_fill(c.ctx, g, 0.5);
  int64_t before = whale_rt_memory_in_use(c.ctx);
  ASSERT_EQ(whale_rt_adam_update(c.ctx, p, g, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
            WHALE_RT_OK);
  EXPECT_EQ(whale_rt_memory_in_use(c.ctx) - before, 2 * 256 * 4); // m and v
  EXPECT_NEAR(c.f(p)[0], 0.9f, 1e-6);                             // 1 - lr
  ASSERT_EQ(whale_rt_adam_update(c.ctx, p, g, 2, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
            WHALE_RT_OK);
  EXPECT_EQ(whale_rt_memory_in_use(c.ctx) - before, 2 * 256 * 4); // reused
  EXPECT_EQ(whale_rt_adam_update(c.ctx, p, g, 0, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
            WHALE_RT_INVALID_ARGUMENT);
}

TEST(RuntimeCApiTrain, ReleasingATensorDropsItsOptimizerState) {
  // Tensors updated in place and released, again and again (what whale
  // profile does): each new one starts from fresh state of its own shape,
  // whatever address it gets, and the state's memory is given back.
  Ctx c;
  int64_t base = whale_rt_memory_in_use(c.ctx);
  for (int64_t n = 1; n <= 64; ++n) {
    whale_rt_tensor *p = c.make(WHALE_RT_F32, {n % 2 ? 512 : 3, n});
    whale_rt_tensor *g = c.make(WHALE_RT_F32, {n % 2 ? 512 : 3, n});
    whale_rt_fill(c.ctx, p, 1.0);
    whale_rt_fill(c.ctx, g, 0.5);
    ASSERT_EQ(
        whale_rt_adam_update(c.ctx, p, g, 1, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
        WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
    EXPECT_NEAR(c.f(p)[0], 0.9f, 1e-6); // a first step: 1 - lr
    whale_rt_tensor_release(c.ctx, p);
    whale_rt_tensor_release(c.ctx, g);
  }
  EXPECT_EQ(whale_rt_memory_in_use(c.ctx), base);
}

TEST(RuntimeCApiTrain, GradientsCheckTheirShapes) {
  Ctx c;
  whale_rt_tensor *a = c.make(WHALE_RT_F32, {2, 3}),
                  *b = c.make(WHALE_RT_F32, {3}),
                  *dout = c.make(WHALE_RT_F32, {2, 3}),
                  *wrong = c.make(WHALE_RT_F32, {4});
  EXPECT_EQ(
      whale_rt_binary_grad(c.ctx, WHALE_RT_MUL, a, b, dout, nullptr, wrong),
      WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "binary_grad: a gradient is [4] for an input of [3]");
  whale_rt_tensor *full = c.make(WHALE_RT_F32, {5, 3});
  ASSERT_EQ(whale_rt_broadcast(c.ctx, b, full), WHALE_RT_OK);
  EXPECT_EQ(whale_rt_broadcast(c.ctx, a, full), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(c.ctx),
               "broadcast: [2, 3] does not broadcast to [5, 3]");
  whale_rt_tensor *grads[] = {a, b};
  whale_rt_fill(c.ctx, a, 1.0);
  whale_rt_fill(c.ctx, b, 1.0);
  double norm = 0;
  ASSERT_EQ(whale_rt_clip_grad_norm(c.ctx, 2, grads, 1.0, &norm), WHALE_RT_OK);
  EXPECT_NEAR(norm, 3.0, 1e-12); // sqrt(9 ones)
  EXPECT_NEAR(c.f(a)[0], 1.0f / 3.0f, 1e-7);
}

} // namespace
