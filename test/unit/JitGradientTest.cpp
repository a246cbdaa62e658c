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

// silu and its gradient, JIT-compiled (each a region of its own: nothing
// fuses them here), against their definitions computed in double:
// silu(x) = x / (1 + e^-x), its derivative s (1 + x (1 - s)), s = 1 / (1 +
// e^-x). The f32 formula rounds each of its 4 (forward) or 10 (gradient)
// operations and LLVM's exp is within a few ulps, so about 15 roundings of
// 2^-24 each, amplified by the conditioning of the expression: at most
// 1 + |x| (1 - s) <= 9 over x in [-8, 8]. So relative 15 * 9 * 6e-8 = 8e-6,
// held to 1e-5; a wrong formula (tanh for the sigmoid, a lost factor) is off
// by far more.
const char *kSilu = R"mlir(
func.func @silu(%x: tensor<64xf32>) -> tensor<64xf32> attributes {whale.model} {
  %y = whale.silu %x : tensor<64xf32>
  return %y : tensor<64xf32>
}
func.func @silu_grad(%x: tensor<64xf32>, %dy: tensor<64xf32>) -> tensor<64xf32> attributes {whale.model} {
  %y = whale.silu %x : tensor<64xf32>
  %dx = whale.formula_grad "whale.silu" %x, %y, %dy : tensor<64xf32>
  return %dx : tensor<64xf32>
}
)mlir";

TEST(JitGradient, SiluAndItsGradientAreTheirDefinitions) {
  mlir::MLIRContext ctx;
  ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
  whale::loadRuntimeLoweringDialects(ctx);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(kSilu, &ctx);
  ASSERT_TRUE(module);
  std::string error;
  std::unique_ptr<whale::JitProgram> program =
      whale::JitProgram::compile(*module, error);
  ASSERT_TRUE(program) << error;
  whale::JitProgram::Entry silu = program->lookup("silu");
  whale::JitProgram::Entry grad = program->lookup("silu_grad");
  ASSERT_TRUE(silu && grad);

  whale_rt_context *rt = whale_rt_context_create("cpu:0", 1, 0, 3);
  int64_t shape[] = {64};
  whale_rt_tensor *x = nullptr, *dy = nullptr;
  ASSERT_EQ(whale_rt_tensor_create(rt, WHALE_RT_F32, 1, shape, &x),
            WHALE_RT_OK);
  ASSERT_EQ(whale_rt_tensor_create(rt, WHALE_RT_F32, 1, shape, &dy),
            WHALE_RT_OK);
  float *xd = static_cast<float *>(whale_rt_tensor_data(x));
  float *dyd = static_cast<float *>(whale_rt_tensor_data(dy));
  for (int i = 0; i < 64; ++i) {
    xd[i] = -8.0f + 16.0f * (i + 0.5f) / 64; // [-8, 8], never 0
    dyd[i] = 0.5f + 0.03f * i;
  }
  whale_rt_tensor *forwardIn[] = {x}, *gradIn[] = {x, dy};
  whale_rt_tensor *y = nullptr, *dx = nullptr;
  ASSERT_EQ(silu(rt, forwardIn, &y), WHALE_RT_OK) << whale_rt_last_error(rt);
  ASSERT_EQ(grad(rt, gradIn, &dx), WHALE_RT_OK) << whale_rt_last_error(rt);
  const float *yd = static_cast<const float *>(whale_rt_tensor_data(y));
  const float *dxd = static_cast<const float *>(whale_rt_tensor_data(dx));
  for (int i = 0; i < 64; ++i) {
    const double v = xd[i], s = 1 / (1 + std::exp(-v));
    const double wantY = v * s;
    const double wantDx = dyd[i] * s * (1 + v * (1 - s));
    EXPECT_LE(std::fabs(yd[i] - wantY), 1e-5 * std::fabs(wantY))
        << "silu(" << v << ") = " << yd[i] << ", want " << wantY;
    EXPECT_LE(std::fabs(dxd[i] - wantDx), 1e-5 * std::fabs(wantDx))
        << "silu'(" << v << ") dy = " << dxd[i] << ", want " << wantDx;
  }
  whale_rt_tensor_release(rt, y);
  whale_rt_tensor_release(rt, dx);
  whale_rt_context_destroy(rt);
}

} // namespace
