//===- JitTest.cpp - whale IR JIT-compiled and run on the runtime ---------===//

#include "lib/compile/Jit.h"
#include "RuntimeFixture.h"
#include "whale/Interpreter.h"

#include "mlir/IR/BuiltinOps.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

namespace {

struct Runtime : whale::testing::TestRuntime {
  Runtime() : TestRuntime(/*seed=*/11) {}
  whale_rt_tensor *tensor(int32_t dtype, std::vector<int64_t> shape) {
    return make(dtype, std::move(shape));
  }
};

std::unique_ptr<whale::JitProgram> compileExample(whale::Interpreter &interp,
                                                  const char *name) {
  EXPECT_TRUE(
      interp.loadFile(std::string(WHALE_SOURCE_DIR) + "/examples/" + name))
      << interp.renderDiagnostics();
  mlir::ModuleOp module = interp.module();
  EXPECT_TRUE(module);
  std::string error;
  std::unique_ptr<whale::JitProgram> program =
      whale::JitProgram::compile(module, error);
  EXPECT_TRUE(program) << error;
  return program;
}

float scalar(whale_rt_tensor *t) {
  return *static_cast<float *>(whale_rt_tensor_data(t));
}

TEST(Jit, TheMlpForwardPassMatchesTheRuntimeOpByOp) {
  whale::Interpreter interp;
  std::unique_ptr<whale::JitProgram> program =
      compileExample(interp, "mlp.whl");
  ASSERT_TRUE(program);
  whale::JitProgram::Entry mlp = program->lookup("mlp");
  ASSERT_TRUE(mlp);

  Runtime rt;
  whale_rt_tensor *x = rt.tensor(WHALE_RT_F32, {64, 32});
  whale_rt_tensor *y = rt.tensor(WHALE_RT_I32, {64});
  float *xd = static_cast<float *>(whale_rt_tensor_data(x));
  int32_t *yd = static_cast<int32_t *>(whale_rt_tensor_data(y));
  for (int i = 0; i < 64 * 32; ++i)
    xd[i] = std::sin(0.37f * i);
  for (int i = 0; i < 64; ++i)
    yd[i] = (i * 7) % 10;

  whale_rt_tensor *inputs[] = {x, y};
  whale_rt_tensor *loss = nullptr;
  ASSERT_EQ(mlp(rt.ctx, inputs, &loss), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  ASSERT_TRUE(loss);
  EXPECT_EQ(whale_rt_tensor_rank(loss), 0);

  // The same computation through the C ABI, with the parameters the JIT
  // made (fetched by name from the same context): bitwise the same loss.
  auto param = [&](const char *name, std::vector<int64_t> shape) {
    whale_rt_tensor *p = nullptr;
    int32_t kind =
        shape.size() == 2 ? WHALE_RT_INIT_NORMAL : WHALE_RT_INIT_ZEROS;
    double args[] = {0.0, 0.02};
    EXPECT_EQ(whale_rt_param(rt.ctx, name, kind, args,
                             kind == WHALE_RT_INIT_NORMAL ? 2 : 0,
                             static_cast<int32_t>(shape.size()), shape.data(),
                             &p),
              WHALE_RT_OK);
    return p;
  };
  whale_rt_tensor *w0 = param("mlp/linear_0/w", {32, 128}),
                  *b0 = param("mlp/linear_0/b", {128});
  whale_rt_tensor *w1 = param("mlp/linear_1/w", {128, 10}),
                  *b1 = param("mlp/linear_1/b", {10});
  whale_rt_tensor *h = rt.tensor(WHALE_RT_F32, {64, 128}),
                  *hb = rt.tensor(WHALE_RT_F32, {64, 128}),
                  *r = rt.tensor(WHALE_RT_F32, {64, 128}),
                  *l = rt.tensor(WHALE_RT_F32, {64, 10}),
                  *lb = rt.tensor(WHALE_RT_F32, {64, 10}),
                  *ce = rt.tensor(WHALE_RT_F32, {64}),
                  *m = rt.tensor(WHALE_RT_F32, {});
  int64_t axes[] = {0};
  ASSERT_EQ(whale_rt_matmul(rt.ctx, x, w0, h, 0, 0), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_binary(rt.ctx, WHALE_RT_ADD, h, b0, hb), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_unary(rt.ctx, WHALE_RT_RELU, hb, r), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_matmul(rt.ctx, r, w1, l, 0, 0), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_binary(rt.ctx, WHALE_RT_ADD, l, b1, lb), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_cross_entropy(rt.ctx, lb, y, ce), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_reduce(rt.ctx, WHALE_RT_MEAN, ce, 1, axes, m),
            WHALE_RT_OK);
  EXPECT_EQ(scalar(loss), scalar(m));
  // Small initial weights: logits near zero, loss near ln(10).
  EXPECT_NEAR(scalar(loss), std::log(10.0), 0.05);
}

TEST(Jit, ErrorsComeBackAsStatusesAndIntermediatesAreReleased) {
  whale::Interpreter interp;
  std::unique_ptr<whale::JitProgram> program =
      compileExample(interp, "mlp.whl");
  ASSERT_TRUE(program);
  whale::JitProgram::Entry mlp = program->lookup("mlp");
  Runtime rt;
  whale_rt_tensor *x = rt.tensor(WHALE_RT_F32, {64, 32});
  whale_rt_tensor *y = rt.tensor(WHALE_RT_I32, {64});
  std::memset(whale_rt_tensor_data(x), 0, 64 * 32 * 4);
  std::memset(whale_rt_tensor_data(y), 0, 64 * 4);
  whale_rt_tensor *inputs[] = {x, y};
  whale_rt_tensor *loss = nullptr;
  ASSERT_EQ(mlp(rt.ctx, inputs, &loss), WHALE_RT_OK);
  // What stays: the inputs, the four parameters and the loss.
  int64_t kept =
      64 * 32 * 4 + 64 * 4 + (32 * 128 + 128 + 128 * 10 + 10) * 4 + 4;
  EXPECT_EQ(whale_rt_memory_in_use(rt.ctx), kept);
  EXPECT_GT(whale_rt_memory_peak(rt.ctx), kept);
  // A label outside the 10 classes stops the pass with the runtime's error.
  static_cast<int32_t *>(whale_rt_tensor_data(y))[3] = 10;
  EXPECT_EQ(mlp(rt.ctx, inputs, &loss), WHALE_RT_INVALID_ARGUMENT);
  EXPECT_STREQ(whale_rt_last_error(rt.ctx),
               "label 10 at position 3 is outside the 10 classes");
}

TEST(Jit, TheGptForwardPassRunsEveryTransformerOp) {
  whale::Interpreter interp;
  std::unique_ptr<whale::JitProgram> program =
      compileExample(interp, "gpt.whl");
  ASSERT_TRUE(program);
  whale::JitProgram::Entry gpt = program->lookup("gpt");
  ASSERT_TRUE(gpt);
  Runtime rt;
  whale_rt_tensor *tokens = rt.tensor(WHALE_RT_I32, {16, 64});
  whale_rt_tensor *targets = rt.tensor(WHALE_RT_I32, {16, 64});
  int32_t *t = static_cast<int32_t *>(whale_rt_tensor_data(tokens));
  int32_t *g = static_cast<int32_t *>(whale_rt_tensor_data(targets));
  for (int i = 0; i < 16 * 64; ++i) {
    t[i] = (i * 31) % 256;
    g[i] = (i * 17 + 3) % 256;
  }
  whale_rt_tensor *inputs[] = {tokens, targets};
  whale_rt_tensor *loss = nullptr;
  ASSERT_EQ(gpt(rt.ctx, inputs, &loss), WHALE_RT_OK)
      << whale_rt_last_error(rt.ctx);
  // An untrained byte model predicts nearly uniformly: loss near ln(256).
  EXPECT_NEAR(scalar(loss), std::log(256.0), 0.1);
}

} // namespace
