//===- AutodiffTest.cpp - -whale-autodiff against finite differences ------===//
//
// The gradient functions that autodiff writes are JIT-compiled and run; the
// gradient of every parameter is checked along a random direction r:
//   sum(grad * r)  ==  (L(p + h r) - L(p - h r)) / 2h
// with the forward pass itself JIT-compiled, extrapolated from steps h and
// h/2 (Richardson) to cancel the difference's h^2 error. A direction sums
// over the whole tensor, so a wrong element anywhere shows, and the change
// of an f32 loss over such a step stays well above rounding.
//
//===----------------------------------------------------------------------===//

#include "RuntimeFixture.h"
#include "lib/compile/Jit.h"
#include "lowering/Passes.h"
#include "whale/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

struct Gradients {
  std::vector<std::string> names;
  double worst = 0; // largest relative error seen
  int checked = 0;  // parameters with a derivative above the noise floor
};

/// Loads `source`, runs autodiff, JIT-compiles, and checks every parameter
/// gradient of `model` on the given inputs.
Gradients check(const std::string &source, const std::string &model,
                std::vector<whale_rt_tensor *> inputs, whale_rt_context *rt,
                double h, double tolerance) {
  Gradients out;
  whale::InterpreterOptions opts;
  whale::Interpreter interp(opts);
  EXPECT_TRUE(interp.loadString(source, "model.whl"))
      << interp.renderDiagnostics();
  mlir::ModuleOp module = interp.module();
  EXPECT_TRUE(module);
  mlir::PassManager pm(&interp.context());
  pm.addPass(whale::createWhaleAutodiff());
  EXPECT_TRUE(mlir::succeeded(pm.run(module)));
  auto gradFn = module.lookupSymbol<mlir::func::FuncOp>(model + "_grad");
  EXPECT_TRUE(gradFn);
  for (mlir::Attribute a :
       gradFn->getAttrOfType<mlir::ArrayAttr>("whale.gradients"))
    out.names.push_back(mlir::cast<mlir::StringAttr>(a).str());

  std::string error;
  auto program = whale::JitProgram::compile(module, error);
  EXPECT_TRUE(program) << error;
  whale::JitProgram::Entry forward = program->lookup(model);
  whale::JitProgram::Entry grad = program->lookup(model + "_grad");
  EXPECT_TRUE(forward && grad);

  std::vector<whale_rt_tensor *> results(out.names.size() + 1, nullptr);
  EXPECT_EQ(grad(rt, inputs.data(), results.data()), WHALE_RT_OK)
      << whale_rt_last_error(rt);
  auto loss = [&] {
    whale_rt_tensor *l = nullptr;
    EXPECT_EQ(forward(rt, inputs.data(), &l), WHALE_RT_OK);
    double v = *static_cast<float *>(whale_rt_tensor_data(l));
    whale_rt_tensor_release(rt, l);
    return v;
  };
  EXPECT_NEAR(loss(), *static_cast<float *>(whale_rt_tensor_data(results[0])),
              1e-6);

  for (size_t k = 0; k < out.names.size(); ++k) {
    whale_rt_tensor *g = results[k + 1];
    int32_t rank = whale_rt_tensor_rank(g);
    const int64_t *shape = whale_rt_tensor_shape(g);
    whale_rt_tensor *p = nullptr; // the existing parameter, by name
    EXPECT_EQ(whale_rt_param(rt, out.names[k].c_str(), WHALE_RT_INIT_ZEROS,
                             nullptr, 0, rank, shape, &p),
              WHALE_RT_OK);
    float *pd = static_cast<float *>(whale_rt_tensor_data(p));
    const float *gd = static_cast<const float *>(whale_rt_tensor_data(g));
    int64_t n = 1;
    for (int32_t i = 0; i < rank; ++i)
      n *= shape[i];
    std::vector<float> saved(pd, pd + n), dir(n);
    double analytic = 0;
    for (int64_t i = 0; i < n; ++i) {
      dir[i] = ((i * 2654435761u + k * 40503u) >> 7) % 2 ? 1.0f : -1.0f;
      analytic += static_cast<double>(gd[i]) * dir[i];
    }
    auto difference = [&](double step) {
      for (int64_t i = 0; i < n; ++i)
        pd[i] = saved[i] + static_cast<float>(step) * dir[i];
      double up = loss();
      for (int64_t i = 0; i < n; ++i)
        pd[i] = saved[i] - static_cast<float>(step) * dir[i];
      double down = loss();
      std::memcpy(pd, saved.data(), n * sizeof(float));
      return (up - down) / (2 * step);
    };
    // Richardson: the central difference's h^2 term cancels, so h can stay
    // large enough for f32 losses to resolve the change.
    double numeric = (4 * difference(h / 2) - difference(h)) / 3;
    // An f32 loss changes by a few ulps more than its step: about 1e-4 in
    // these derivatives. Below 5e-3 the error is measured against that
    // floor; a wrong gradient is off by the size of the derivative itself.
    double err =
        std::fabs(numeric - analytic) / std::max(5e-3, std::fabs(analytic));
    EXPECT_LE(err, tolerance)
        << out.names[k] << ": analytic " << analytic << ", numeric " << numeric;
    out.worst = std::max(out.worst, err);
    out.checked += std::fabs(analytic) > 5e-3;
  }
  return out;
}

/// A classifier's batch: `rows` inputs of `width` features, scale x
/// Tokens and next-token targets [rows, length] over a vocabulary of 32:
/// (7i + 3) mod 32 and (11i + 1) mod 32.
std::pair<whale_rt_tensor *, whale_rt_tensor *>
tokenBatch(whale::testing::TestRuntime &runtime, int rows, int length) {
  whale_rt_tensor *tok = runtime.make(WHALE_RT_I32, {rows, length});
  whale_rt_tensor *tgt = runtime.make(WHALE_RT_I32, {rows, length});
  for (int i = 0; i < rows * length; ++i) {
    static_cast<int32_t *>(whale_rt_tensor_data(tok))[i] = (i * 7 + 3) % 32;
    static_cast<int32_t *>(whale_rt_tensor_data(tgt))[i] = (i * 11 + 1) % 32;
  }
  return {tok, tgt};
}

/// sin(step x i) over the elements (both signs, many sizes), and labels
/// (i x stride) mod classes.
std::pair<whale_rt_tensor *, whale_rt_tensor *>
sineBatch(whale::testing::TestRuntime &runtime, int rows, int width,
          float step, float scale, int classes, int stride) {
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {rows, width});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {rows});
  for (int i = 0; i < rows * width; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] =
        std::sin(step * i) * scale;
  for (int i = 0; i < rows; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = (i * stride) % classes;
  return {x, y};
}

TEST(Autodiff, AnMlpInATaskGraphMatchesFiniteDifferences) {
  // The mlp example's shape with gelu: finite differences need a smooth
  // loss (relu's gradient is checked by the kernel tests, off its kink).
  const char *source = R"(
import nn
model mlp(x: f32[B, 32], y: i32[B]) {
  replicate {
    loss = mean(cross_entropy(nn.linear(gelu(nn.linear(x, 128)), 10), y))
  }
  return loss
}
train mlp {
  data = synthetic(batch = 64)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(5);
  auto [x, y] = sineBatch(runtime, 64, 32, 0.61f, 2, 10, 3);
  Gradients g = check(source, "mlp", {x, y}, runtime.ctx, 2e-2, 1e-2);
  EXPECT_EQ(g.names.size(), 4u);
  EXPECT_EQ(g.checked, 4);
}

TEST(Autodiff, ASwiGluMlpMatchesFiniteDifferences) {
  // silu is defined by its formula; its gradient is whale.formula_grad,
  // computed from silu's derivative in a region of its own (no fusion
  // here). Inputs of both signs and of several sizes reach its curve.
  const char *source = R"(
import nn
model mlp(x: f32[B, 16], y: i32[B]) {
  replicate {
    gate = silu(x @ param([16, 24], init = normal(0.5)))
    h = gate * (x @ param([16, 24], init = normal(0.5)))
    loss = mean(cross_entropy(h @ param([24, 7], init = normal(0.5)), y))
  }
  return loss
}
train mlp {
  data = synthetic(batch = 32)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(5);
  auto [x, y] = sineBatch(runtime, 32, 16, 0.37f, 3, 7, 5);
  Gradients g = check(source, "mlp", {x, y}, runtime.ctx, 2e-2, 1e-2);
  EXPECT_EQ(g.names.size(), 3u);
  EXPECT_EQ(g.checked, 3);
}

TEST(Autodiff, RmsNormMatchesFiniteDifferences) {
  // RMSNorm's kernel and its gradient kernel (the input's and the weight's,
  // the weight away from ones so its gradient is not the input's alone).
  const char *source = R"(
model m(x: f32[B, 12], y: i32[B]) {
  replicate {
    h = rms_norm(x @ param([12, 20], init = normal(0.5)),
                 param([20], init = normal(1.0)), eps = 1e-3)
    loss = mean(cross_entropy(h @ param([20, 5], init = normal(0.5)), y))
  }
  return loss
}
train m {
  data = synthetic(batch = 16)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(5);
  auto [x, y] = sineBatch(runtime, 16, 12, 0.41f, 3, 5, 7);
  Gradients g = check(source, "m", {x, y}, runtime.ctx, 2e-2, 1e-2);
  EXPECT_EQ(g.names.size(), 3u);
  EXPECT_EQ(g.checked, 3);
}

TEST(Autodiff, ALlamaBlockMatchesFiniteDifferences) {
  // A Llama block written out (the stdlib's llama_block with weights of
  // size 0.3 to 1, so that most gradients stand above the check's floor):
  // RMSNorm, rotary positions on the queries and keys (their gradient the
  // inverse turn), causal attention, SwiGLU, residuals.
  const char *source = R"(
import nn
def w(rows: int, cols: int) { return param([rows, cols], init = normal(0.3)) }
model llama(tokens: i32[B, 8], targets: i32[B, 8]) {
  x = embedding(param([32, 16], init = normal(1.0)), tokens)
  n = rms_norm(x, param([16], init = normal(1.0)))
  q = rope(nn.split_heads(n @ w(16, 16), 2))
  k = rope(nn.split_heads(n @ w(16, 16), 2), theta = 500000)
  v = nn.split_heads(n @ w(16, 16), 2)
  scores = causal_mask(matmul(q, k, transpose_b = true) * 0.35)
  h = x + nn.merge_heads(matmul(softmax(scores), v)) @ w(16, 16)
  m = rms_norm(h, param([16], init = normal(1.0)))
  h = h + (silu(m @ w(16, 24)) * (m @ w(16, 24))) @ w(24, 16)
  return mean(cross_entropy(h @ w(16, 32), targets))
}
train llama {
  data = synthetic(batch = 4)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(9);
  auto [tok, tgt] = tokenBatch(runtime, 4, 8);
  Gradients g = check(source, "llama", {tok, tgt}, runtime.ctx, 2e-2, 2e-2);
  // table, 2 norms, q k v o, gate up down, head
  EXPECT_EQ(g.names.size(), 11u);
  EXPECT_EQ(g.checked, 11);
  std::printf("llama block: %zu parameter gradients, %d with a large "
              "directional derivative, worst relative error %.2e\n",
              g.names.size(), g.checked, g.worst);
}

TEST(Autodiff, ATransformerGradientsMatchFiniteDifferences) {
  // Every op of the stdlib's transformer block: embedding, layernorm,
  // attention (reshape, permute, batched matmuls, scale, causal mask,
  // softmax), gelu MLP, residual adds, cross entropy.
  const char *source = R"(
import nn
model gpt(tokens: i32[B, 8], targets: i32[B, 8]) {
  x = nn.embed(tokens, 32, 16) + param([8, 16], init = normal(0.1))
  x = nn.block(x, 2)
  logits = nn.linear(nn.norm(x), 32)
  return mean(cross_entropy(logits, targets))
}
train gpt {
  data = synthetic(batch = 2)
  optimizer = adam()
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(9);
  whale_rt_context *rt = runtime.ctx;
  auto [tok, tgt] = tokenBatch(runtime, 2, 8);
  Gradients g = check(source, "gpt", {tok, tgt}, rt, 2e-2, 2e-2);
  // table, positions, block (2 norms x 2, 4 attention and 2 mlp linears
  // x 2), final norm x 2, head x 2
  EXPECT_EQ(g.names.size(), 22u);
  EXPECT_GE(g.checked, 11); // measured: 11 of 22 above the floor
  std::printf(
      "transformer: %zu parameter gradients, %d with a large directional "
      "derivative, worst relative error %.2e\n",
      g.names.size(), g.checked, g.worst);
}

TEST(Autodiff, AConvNetsGradientsMatchFiniteDifferences) {
  // conv2d with padding, stride, dilation and groups, average pooling, gelu
  // between (smooth, for finite differences; max pooling's gradient is
  // checked against its definition in the runtime's tests).
  const char *source = R"(
model cnn(x: f32[B, 72], y: i32[B]) {
  img = reshape(x, [B, 2, 6, 6])
  a = gelu(conv2d(img, param([4, 2, 3, 3], init = normal(0.3)), padding = 1))
  b = gelu(conv2d(a, param([4, 2, 3, 3], init = normal(0.3)), stride = 2,
                  padding = [2, 1], dilation = [2, 1], groups = 2))
  c = avg_pool2d(b, 2, stride = 1)
  flat = reshape(c, [B, 16])
  return mean(cross_entropy(matmul(flat, param([16, 5], init = normal(0.3))), y))
}
train cnn {
  data = synthetic(batch = 3)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(11);
  whale_rt_context *rt = runtime.ctx;
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {3, 72});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {3});
  for (int i = 0; i < 3 * 72; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] = std::sin(0.37f * i) * 2;
  for (int i = 0; i < 3; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = (i * 2) % 5;
  Gradients g = check(source, "cnn", {x, y}, rt, 2e-2, 1e-2);
  EXPECT_EQ(g.names.size(), 3u);
  EXPECT_EQ(g.checked, 3);
  std::printf("conv net: worst relative error %.2e\n", g.worst);
}

TEST(Autodiff, ATopKsGradientsMatchFiniteDifferences) {
  // A router's shape: the two largest gate scores of each row, weighted.
  // The selection is piecewise linear; the step stays far below the gaps
  // between the scores of this input, so no choice changes within it.
  const char *source = R"(
model router(x: f32[B, 8], y: i32[B]) {
  g = x @ param([8, 6], init = normal(0.5))
  top = topk(g, 2)
  return mean(cross_entropy(top @ param([2, 3], init = normal(0.5)), y))
}
train router {
  data = synthetic(batch = 4)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(13);
  whale_rt_context *rt = runtime.ctx;
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {4, 8});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {4});
  for (int i = 0; i < 4 * 8; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] = std::sin(1.3f * i) * 2;
  for (int i = 0; i < 4; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = i % 3;
  Gradients g = check(source, "router", {x, y}, rt, 2e-3, 1e-2);
  EXPECT_EQ(g.names.size(), 2u);
  EXPECT_EQ(g.checked, 2);
  std::printf("top-k router: worst relative error %.2e\n", g.worst);
}

TEST(Autodiff, AMixtureOfExpertsGradientsMatchFiniteDifferences) {
  // Top-2 routing with a capacity that drops choices, the experts as
  // stacked parameters, and the balancing loss: every parameter's gradient
  // (router, experts, head). The router's logits spread widely (std 1
  // weights), so no choice changes within the step; the step is large for
  // the f32 loss to resolve the change (Richardson keeps it accurate).
  const char *source = R"(
import nn
model moe(x: f32[B, 48], y: i32[B, 6]) {
  h = reshape(x, [B, 6, 8])
  logits = h @ param([8, 4], init = normal(1.0))
  out = h + nn.moe(h, logits, 10, 2, 0.75)
  ce = mean(cross_entropy(matmul(out, param([8, 5], init = normal(0.3))), y))
  return ce + 0.1 * mean(nn.balance_loss(logits))
}
train moe {
  data = synthetic(batch = 3)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(17);
  whale_rt_context *rt = runtime.ctx;
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {3, 48});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {3, 6});
  for (int i = 0; i < 3 * 48; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] = std::sin(0.73f * i) * 2;
  for (int i = 0; i < 3 * 6; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = (i * 3) % 5;
  Gradients g = check(source, "moe", {x, y}, rt, 1e-2, 1e-2);
  // Router, w1, b1, w2, b2, head, all within the tolerance; b1's
  // derivative along the probe is below the 5e-3 floor, so five count as
  // checked against their own size.
  EXPECT_EQ(g.names.size(), 6u);
  EXPECT_GE(g.checked, 5);
  std::printf("mixture of experts: worst relative error %.2e\n", g.worst);
}

TEST(Autodiff, BatchNormalizationsGradientsMatchFiniteDifferences) {
  // Statistics of the batch in the forward: every sample's output depends on
  // every other's, which the gradient must carry (dx's two mean terms). A
  // batch normalization of images [N, C, H, W] and one of features [N, C],
  // with gamma and beta away from their initial values.
  const char *source = R"(
model bn(x: f32[B, 48], y: i32[B]) {
  img = reshape(x, [B, 3, 4, 4])
  c = conv2d(img, param([4, 3, 3, 3], init = normal(0.3)), padding = 1)
  g = param([4], init = normal(1.0, 0.3))
  b = param([4], init = normal(0.0, 0.3))
  n = batch_norm(c, g, b, param([4], init = zeros(), trainable = false),
                 param([4], init = ones(), trainable = false))
  h = gelu(reshape(avg_pool2d(gelu(n), 2), [B, 16])) @ param([16, 6], init = normal(0.4))
  f = batch_norm(h, param([6], init = normal(1.0, 0.3)),
                 param([6], init = normal(0.0, 0.3)),
                 param([6], init = zeros(), trainable = false),
                 param([6], init = ones(), trainable = false), momentum = 0.5)
  return mean(cross_entropy(gelu(f) @ param([6, 5], init = normal(0.4)), y))
}
train bn {
  data = synthetic(batch = 5)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(23);
  whale_rt_context *rt = runtime.ctx;
  ASSERT_EQ(whale_rt_set_rows(rt, 0, /*training=*/1), WHALE_RT_OK);
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {5, 48});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {5});
  for (int i = 0; i < 5 * 48; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] =
        std::sin(0.41f * i) * 1.5f + 0.3f;
  for (int i = 0; i < 5; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = (i * 3) % 5;
  Gradients g = check(source, "bn", {x, y}, rt, 1e-2, 1e-2);
  // Seven trained parameters; the four running statistics are state that
  // takes no gradient.
  EXPECT_EQ(g.names.size(), 7u);
  EXPECT_EQ(g.checked, 7);
  std::printf("batch normalization: worst relative error %.2e\n", g.worst);
}

TEST(Autodiff, DropoutsGradientIsItsMask) {
  // Training: the mask is fixed for a step, so the loss is smooth in the
  // parameters and the gradient goes through the kept elements only.
  const char *source = R"(
model drop(x: f32[B, 8], y: i32[B]) {
  h = dropout(gelu(x @ param([8, 12], init = normal(0.5))), 0.4)
  return mean(cross_entropy(h @ param([12, 3], init = normal(0.5)), y))
}
train drop {
  data = synthetic(batch = 6)
  optimizer = sgd(lr = 0.1)
  steps = 1
}
)";
  whale::testing::TestRuntime runtime(19);
  whale_rt_context *rt = runtime.ctx;
  ASSERT_EQ(whale_rt_set_rows(rt, 0, /*training=*/1), WHALE_RT_OK);
  whale_rt_tensor *x = runtime.make(WHALE_RT_F32, {6, 8});
  whale_rt_tensor *y = runtime.make(WHALE_RT_I32, {6});
  for (int i = 0; i < 6 * 8; ++i)
    static_cast<float *>(whale_rt_tensor_data(x))[i] = std::sin(0.9f * i);
  for (int i = 0; i < 6; ++i)
    static_cast<int32_t *>(whale_rt_tensor_data(y))[i] = i % 3;
  Gradients g = check(source, "drop", {x, y}, rt, 2e-3, 1e-2);
  EXPECT_EQ(g.names.size(), 2u);
  EXPECT_EQ(g.checked, 2);
  std::printf("dropout: worst relative error %.2e\n", g.worst);
}

} // namespace
