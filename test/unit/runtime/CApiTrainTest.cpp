//===- CApiTrainTest.cpp - gradients and optimizers through the C ABI -----===//

#include "../RuntimeFixture.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct TrainCtx : whale::testing::TestRuntime {
  TrainCtx() : TestRuntime(/*seed=*/3) {}
  float *f(whale_rt_tensor *t) { return data<float>(t); }
};

TEST(RuntimeCApiTrain, ASoftmaxClassifierLearnsThroughTheAbiAlone) {
  // 32 points in 4 dimensions, labelled by a fixed linear teacher over 3
  // classes: a problem a linear model solves. Forward, backward and SGD
  // all go through the C ABI, as lowered train steps will.
  TrainCtx c;
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
  TrainCtx c;
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

TEST(RuntimeCApiTrain, AdamStepsUpdateEachParameterAsAdamStepDoes) {
  // Three parameters (one of them empty) updated together for three steps
  // against the same parameters updated one by one: the same numbers,
  // bit for bit, with the schedule's scale and the context's step.
  TrainCtx c;
  const std::vector<std::vector<int64_t>> shapes = {{3, 5}, {0}, {7}};
  const int64_t sizes[] = {15, 0, 7};
  auto makeSet = [&] {
    std::vector<whale_rt_tensor *> ps, gs;
    for (size_t t = 0; t < shapes.size(); ++t) {
      ps.push_back(c.make(WHALE_RT_F32, shapes[t]));
      gs.push_back(c.make(WHALE_RT_F32, shapes[t]));
      int64_t n = sizes[t];
      for (int64_t i = 0; i < n; ++i)
        c.f(ps.back())[i] = std::cos(0.3f * i + n);
    }
    return std::make_pair(ps, gs);
  };
  auto [batched, bgrads] = makeSet();
  auto [single, sgrads] = makeSet();
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_EQ(whale_rt_set_train_state(c.ctx, step, 0.5), WHALE_RT_OK);
    for (size_t t = 0; t < shapes.size(); ++t) {
      int64_t n = sizes[t];
      for (int64_t i = 0; i < n; ++i)
        c.f(bgrads[t])[i] = c.f(sgrads[t])[i] =
            std::sin(1.7f * i + 2.0f * step + t);
      ASSERT_EQ(whale_rt_adam_step(c.ctx, single[t], sgrads[t], 0.1, 0.9, 0.99,
                                   1e-8, 0.01, 1),
                WHALE_RT_OK);
    }
    ASSERT_EQ(whale_rt_adam_steps(c.ctx, 3, batched.data(), bgrads.data(), 0.1,
                                  0.9, 0.99, 1e-8, 0.01, 1),
              WHALE_RT_OK)
        << whale_rt_last_error(c.ctx);
  }
  for (size_t t = 0; t < shapes.size(); ++t) {
    int64_t n = sizes[t];
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(c.f(batched[t])[i], c.f(single[t])[i]) << t << " " << i;
    for (int32_t k = 0; k < 2 && n > 0; ++k) {
      whale_rt_tensor *a = nullptr, *b = nullptr;
      ASSERT_EQ(whale_rt_optimizer_state(c.ctx, batched[t], k, &a),
                WHALE_RT_OK);
      ASSERT_EQ(whale_rt_optimizer_state(c.ctx, single[t], k, &b), WHALE_RT_OK);
      EXPECT_EQ(std::memcmp(whale_rt_tensor_data(a), whale_rt_tensor_data(b),
                            n * sizeof(float)),
                0);
    }
  }
  // Nothing at all is a call that does nothing.
  EXPECT_EQ(whale_rt_adam_steps(c.ctx, 0, nullptr, nullptr, 0.1, 0.9, 0.99,
                                1e-8, 0.0, 0),
            WHALE_RT_OK);
}

TEST(RuntimeCApiTrain, AdamStepsCheckEveryParameterBeforeUpdatingAny) {
  TrainCtx c;
  ASSERT_EQ(whale_rt_set_train_state(c.ctx, 1, 1.0), WHALE_RT_OK);
  whale_rt_tensor *p = c.make(WHALE_RT_F32, {4}),
                  *q = c.make(WHALE_RT_F32, {4}),
                  *g = c.make(WHALE_RT_F32, {4}),
                  *wrong = c.make(WHALE_RT_F32, {5}),
                  *ints = c.make(WHALE_RT_I32, {4});
  whale_rt_fill(c.ctx, p, 1.0);
  whale_rt_fill(c.ctx, q, 1.0);
  whale_rt_fill(c.ctx, g, 0.5);
  auto rejects = [&](std::vector<whale_rt_tensor *> ps,
                     std::vector<whale_rt_tensor *> gs, const char *says) {
    EXPECT_EQ(whale_rt_adam_steps(c.ctx, static_cast<int32_t>(ps.size()),
                                  ps.data(), gs.data(), 0.1, 0.9, 0.999, 1e-8,
                                  0.0, 0),
              WHALE_RT_INVALID_ARGUMENT);
    EXPECT_NE(std::strstr(whale_rt_last_error(c.ctx), says), nullptr)
        << whale_rt_last_error(c.ctx);
    EXPECT_EQ(c.f(p)[0], 1.0f) << says; // the first was not updated
  };
  rejects({p, q}, {g, wrong}, "parameter 1: the gradient is");
  rejects({p, p}, {g, g}, "parameter 1 is listed twice");
  rejects({p, q}, {g, nullptr}, "'grad' is null");
  rejects({p, ints}, {g, g}, "expected f32");
  EXPECT_EQ(
      whale_rt_adam_steps(c.ctx, 1, &p, &g, 0.1, 1.0, 0.999, 1e-8, 0.0, 0),
      WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(whale_rt_adam_steps(c.ctx, 2, nullptr, nullptr, 0.1, 0.9, 0.999,
                                1e-8, 0.0, 0),
            WHALE_RT_INVALID_ARGUMENT);
  EXPECT_EQ(
      whale_rt_adam_steps(c.ctx, -1, &p, &g, 0.1, 0.9, 0.999, 1e-8, 0.0, 0),
      WHALE_RT_INVALID_ARGUMENT);
}

TEST(RuntimeCApiTrain, ReleasingATensorDropsItsOptimizerState) {
  // Tensors updated in place and released, again and again (what whale
  // profile does): each new one starts from fresh state of its own shape,
  // whatever address it gets, and the state's memory is given back.
  TrainCtx c;
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
  TrainCtx c;
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
