//===- TrainStepTest.cpp - train steps JIT-compiled and run ---------------===//

#include "RuntimeFixture.h"
#include "lib/compile/Jit.h"
#include "lowering/Passes.h"
#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>

namespace {

struct Compiled {
  whale::Interpreter interp;
  std::unique_ptr<whale::JitProgram> program;
};

std::unique_ptr<Compiled> compile(const char *source) {
  auto c = std::make_unique<Compiled>();
  EXPECT_TRUE(c->interp.loadString(source, "model.whl"))
      << c->interp.renderDiagnostics();
  mlir::ModuleOp module = c->interp.module();
  mlir::PassManager pm(&c->interp.context());
  pm.addPass(whale::createWhaleAutodiff());
  pm.addPass(whale::createWhaleTrainStep());
  EXPECT_TRUE(mlir::succeeded(pm.run(module)));
  std::string error;
  c->program = whale::JitProgram::compile(module, error);
  EXPECT_TRUE(c->program) << error;
  return c;
}

const char *kMlp = R"(
import nn
model mlp(x: f32[B, 32], y: i32[B]) {
  replicate {
    loss = mean(cross_entropy(nn.linear(gelu(nn.linear(x, 64)), 10), y))
  }
  return loss
}
train mlp {
  data = synthetic(batch = 32)
  optimizer = sgd(lr = 0.1, momentum = 0.9)
  steps = 1
}
)";

void fillBatch(whale::testing::TestRuntime &rt, whale_rt_tensor *x,
               whale_rt_tensor *y) {
  // Scattered points (a hash of the index), so the 32 samples are in
  // general position and an MLP can fit their labels.
  float *xd = rt.data<float>(x);
  for (uint32_t i = 0; i < 32 * 32; ++i)
    xd[i] = static_cast<float>((i * 2654435761u) % 2001) / 1000.0f - 1.0f;
  int32_t *yd = rt.data<int32_t>(y);
  for (int i = 0; i < 32; ++i)
    yd[i] = (i * 7) % 10;
}

TEST(TrainStep, OneSgdStepIsTheParameterMinusLrTimesTheGradient) {
  auto c = compile(kMlp);
  ASSERT_TRUE(c->program);
  auto grad = c->program->lookup("mlp_grad");
  auto step = c->program->lookup("mlp_train");
  ASSERT_TRUE(grad && step);
  whale::testing::TestRuntime rt(4);
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {32, 32}),
                  *y = rt.make(WHALE_RT_I32, {32});
  fillBatch(rt, x, y);
  whale_rt_tensor *inputs[] = {x, y};
  whale_rt_tensor *results[5] = {};
  ASSERT_EQ(grad(rt.ctx, inputs, results), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  // The first layer's weight before the step, and its gradient. (The first
  // step with momentum is plain SGD: the velocity starts at the gradient.)
  int64_t shape[] = {32, 64};
  whale_rt_tensor *w = nullptr;
  ASSERT_EQ(whale_rt_param(rt.ctx, "mlp/linear_0/w", WHALE_RT_INIT_ZEROS,
                           nullptr, 0, 2, shape, &w),
            WHALE_RT_OK);
  std::vector<float> before(rt.data<float>(w), rt.data<float>(w) + 32 * 64);
  std::vector<float> g(rt.data<float>(results[1]),
                       rt.data<float>(results[1]) + 32 * 64);
  ASSERT_EQ(whale_rt_set_train_state(rt.ctx, 1, 1.0), WHALE_RT_OK);
  whale_rt_tensor *loss = nullptr;
  ASSERT_EQ(step(rt.ctx, inputs, &loss), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  EXPECT_FLOAT_EQ(*rt.data<float>(loss), *rt.data<float>(results[0]));
  const float *after = rt.data<float>(w);
  for (int i = 0; i < 32 * 64; ++i)
    ASSERT_FLOAT_EQ(after[i], before[i] - 0.1f * g[i]) << i;
}

TEST(TrainStep, SgdStepsDriveTheLossDown) {
  auto c = compile(kMlp);
  ASSERT_TRUE(c->program);
  auto step = c->program->lookup("mlp_train");
  whale::testing::TestRuntime rt(4);
  whale_rt_tensor *x = rt.make(WHALE_RT_F32, {32, 32}),
                  *y = rt.make(WHALE_RT_I32, {32});
  fillBatch(rt, x, y);
  whale_rt_tensor *inputs[] = {x, y};
  std::vector<float> losses;
  for (int i = 1; i <= 200; ++i) {
    ASSERT_EQ(whale_rt_set_train_state(rt.ctx, i, 1.0), WHALE_RT_OK);
    whale_rt_tensor *loss = nullptr;
    ASSERT_EQ(step(rt.ctx, inputs, &loss), WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    losses.push_back(*rt.data<float>(loss));
    whale_rt_tensor_release(rt.ctx, loss);
  }
  EXPECT_NEAR(losses.front(), std::log(10.0), 0.1);
  EXPECT_LT(losses.back(), 0.1 * losses.front()); // one fixed batch: memorized
  std::printf("sgd: loss %.4f -> %.4f in 200 steps\n", losses.front(),
              losses.back());
}

TEST(TrainStep, AdamWWithClippingTrainsATransformer) {
  const char *source = R"(
import nn
model gpt(tokens: i32[B, 8], targets: i32[B, 8]) {
  x = nn.embed(tokens, 32, 16) + param([8, 16], init = normal(0.1))
  x = nn.block(x, 2)
  return mean(cross_entropy(nn.linear(nn.norm(x), 32), targets))
}
train gpt {
  data = synthetic(batch = 4)
  optimizer = adamw(lr = 1e-2, weight_decay = 0.01)
  clip_grad_norm = 1.0
  steps = 1
}
)";
  auto c = compile(source);
  ASSERT_TRUE(c->program);
  auto step = c->program->lookup("gpt_train");
  ASSERT_TRUE(step);
  whale::testing::TestRuntime rt(8);
  whale_rt_tensor *tok = rt.make(WHALE_RT_I32, {4, 8}),
                  *tgt = rt.make(WHALE_RT_I32, {4, 8});
  for (int i = 0; i < 32; ++i) {
    rt.data<int32_t>(tok)[i] = (i * 5 + 1) % 32;
    rt.data<int32_t>(tgt)[i] = (i * 5 + 6) % 32; // predict the next token
  }
  whale_rt_tensor *inputs[] = {tok, tgt};
  int64_t before = 0;
  std::vector<float> losses;
  for (int i = 1; i <= 40; ++i) {
    ASSERT_EQ(whale_rt_set_train_state(rt.ctx, i, 1.0), WHALE_RT_OK);
    whale_rt_tensor *loss = nullptr;
    ASSERT_EQ(step(rt.ctx, inputs, &loss), WHALE_RT_OK)
        << whale_rt_last_error(rt.ctx);
    losses.push_back(*rt.data<float>(loss));
    whale_rt_tensor_release(rt.ctx, loss);
    if (i == 1)
      before = whale_rt_memory_in_use(rt.ctx);
    // Steps after the first allocate nothing that stays: no leak per step.
    ASSERT_EQ(whale_rt_memory_in_use(rt.ctx), before) << "step " << i;
  }
  EXPECT_NEAR(losses.front(), std::log(32.0), 0.3);
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  std::printf("adamw + clipping: loss %.4f -> %.4f in 40 steps\n",
              losses.front(), losses.back());
}

} // namespace
