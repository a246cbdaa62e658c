//===- JitGradientTest.cpp - backward ops, JIT-compiled, against numbers --===//
//
// A backward pass written in whale IR (as autodiff will emit it) is lowered,
// JIT-compiled and run; its weight gradient must match central differences
// of the JIT-compiled forward pass. This checks the gradient ops' shapes,
// their lowering, the ABI and the kernels together.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lib/compile/Jit.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace {

// x @ w + b -> gelu -> @ v -> cross entropy -> mean, and the gradient of w.
const char *kProgram = R"mlir(
func.func @forward(%x: tensor<4x3xf32>, %y: tensor<4xi32>) -> tensor<f32> attributes {whale.model} {
  %w = whale.param "w" normal [0.0, 0.5] : tensor<3x5xf32>
  %b = whale.param "b" normal [0.0, 0.5] : tensor<5xf32>
  %v = whale.param "v" normal [0.0, 0.5] : tensor<5x2xf32>
  %h = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  %hb = whale.add %h, %b : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %g = whale.gelu %hb : tensor<4x5xf32>
  %l = whale.matmul %g, %v : tensor<4x5xf32>, tensor<5x2xf32> -> tensor<4x2xf32>
  %ce = whale.cross_entropy %l, %y : tensor<4x2xf32>, tensor<4xi32> -> tensor<4xf32>
  %m = whale.reduce_mean %ce axes = [0] : tensor<4xf32> -> tensor<f32>
  return %m : tensor<f32>
}

func.func @grad_w(%x: tensor<4x3xf32>, %y: tensor<4xi32>) -> tensor<3x5xf32> attributes {whale.model} {
  %w = whale.param "w" normal [0.0, 0.5] : tensor<3x5xf32>
  %b = whale.param "b" normal [0.0, 0.5] : tensor<5xf32>
  %v = whale.param "v" normal [0.0, 0.5] : tensor<5x2xf32>
  %h = whale.matmul %x, %w : tensor<4x3xf32>, tensor<3x5xf32> -> tensor<4x5xf32>
  %hb = whale.add %h, %b : tensor<4x5xf32>, tensor<5xf32> -> tensor<4x5xf32>
  %g = whale.gelu %hb : tensor<4x5xf32>
  %l = whale.matmul %g, %v : tensor<4x5xf32>, tensor<5x2xf32> -> tensor<4x2xf32>
  %ce = whale.cross_entropy %l, %y : tensor<4x2xf32>, tensor<4xi32> -> tensor<4xf32>
  %one = whale.constant 1.0 : tensor<f32>
  %dce = whale.reduce_grad mean %ce, %one axes = [0] : tensor<4xf32>, tensor<f32>
  %dl = whale.cross_entropy_grad %l, %y, %dce : tensor<4x2xf32>, tensor<4xi32>, tensor<4xf32>
  %dg = whale.matmul_grad %g, %v, %dl operand = 0 : tensor<4x5xf32>, tensor<5x2xf32>, tensor<4x2xf32> -> tensor<4x5xf32>
  %dhb = whale.unary_grad gelu %hb, %g, %dg : tensor<4x5xf32>
  %dh = whale.binary_grad add %h, %b, %dhb operand = 0 : tensor<4x5xf32>, tensor<5xf32>, tensor<4x5xf32> -> tensor<4x5xf32>
  %dw = whale.matmul_grad %x, %w, %dh operand = 1 : tensor<4x3xf32>, tensor<3x5xf32>, tensor<4x5xf32> -> tensor<3x5xf32>
  return %dw : tensor<3x5xf32>
}
)mlir";

TEST(JitGradient, AHandWrittenBackwardPassMatchesFiniteDifferences) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  whale::loadRuntimeLoweringDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kProgram, &ctx);
  ASSERT_TRUE(module);
  std::string error;
  std::unique_ptr<whale::JitProgram> program =
      whale::JitProgram::compile(*module, error);
  ASSERT_TRUE(program) << error;
  whale::JitProgram::Entry forward = program->lookup("forward");
  whale::JitProgram::Entry gradW = program->lookup("grad_w");
  ASSERT_TRUE(forward && gradW);

  whale_rt_context *rt = whale_rt_context_create("cpu:0", 2, 0, 21);
  int64_t xs[] = {4, 3}, ys[] = {4};
  whale_rt_tensor *x = nullptr, *y = nullptr;
  ASSERT_EQ(whale_rt_tensor_create(rt, WHALE_RT_F32, 2, xs, &x), WHALE_RT_OK);
  ASSERT_EQ(whale_rt_tensor_create(rt, WHALE_RT_I32, 1, ys, &y), WHALE_RT_OK);
  float *xd = static_cast<float *>(whale_rt_tensor_data(x));
  for (int i = 0; i < 12; ++i)
    xd[i] = std::cos(0.9f * i);
  int32_t labels[] = {0, 1, 1, 0};
  std::memcpy(whale_rt_tensor_data(y), labels, sizeof labels);
  whale_rt_tensor *inputs[] = {x, y};

  whale_rt_tensor *dw = nullptr;
  ASSERT_EQ(gradW(rt, inputs, &dw), WHALE_RT_OK) << whale_rt_last_error(rt);
  std::vector<float> analytic(static_cast<float *>(whale_rt_tensor_data(dw)),
                              static_cast<float *>(whale_rt_tensor_data(dw)) +
                                  15);

  // The same parameter tensor the program uses, by name.
  int64_t ws[] = {3, 5};
  double init[] = {0.0, 0.5};
  whale_rt_tensor *w = nullptr;
  ASSERT_EQ(whale_rt_param(rt, "w", WHALE_RT_INIT_NORMAL, init, 2, 2, ws, &w),
            WHALE_RT_OK);
  float *wd = static_cast<float *>(whale_rt_tensor_data(w));
  auto loss = [&] {
    whale_rt_tensor *out = nullptr;
    EXPECT_EQ(forward(rt, inputs, &out), WHALE_RT_OK);
    double l = *static_cast<float *>(whale_rt_tensor_data(out));
    whale_rt_tensor_release(rt, out);
    return l;
  };
  // f32 with h = 1e-2: truncation ~h^2 and rounding ~1e-7 / h, both far
  // below the 2e-3 allowed, while a wrong gradient is off by its own size.
  double maxAbs = 0;
  for (int i = 0; i < 15; ++i) {
    float saved = wd[i];
    wd[i] = saved + 1e-2f;
    double up = loss();
    wd[i] = saved - 1e-2f;
    double down = loss();
    wd[i] = saved;
    double numeric = (up - down) / 2e-2;
    maxAbs = std::max(maxAbs, std::fabs(numeric));
    EXPECT_NEAR(analytic[i], numeric, 2e-3) << "w[" << i << "]";
  }
  EXPECT_GT(maxAbs, 1e-2); // the check is not vacuous: gradients are not ~0
  whale_rt_context_destroy(rt);
}

} // namespace
