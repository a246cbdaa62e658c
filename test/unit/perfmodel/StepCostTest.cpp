//===- StepCostTest.cpp - a step's backward as autodiff builds it ---------===//
//
// The planning passes price a step as each forward op and the backward
// autodiff builds for it. These pin which gradients count: only those that
// reach a trainable parameter, only for results that reach the loss, and
// one add per further use of a value whose gradient accumulates; and that
// the model is left as it was.
//
//===----------------------------------------------------------------------===//

#include "perfmodel/StepCost.h"
#include "whale/Interpreter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

namespace {

struct Model {
  whale::Interpreter interp{whale::InterpreterOptions{}};
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::func::FuncOp fn;
  llvm::SmallVector<mlir::Operation *> ops;

  explicit Model(const std::string &body) {
    module = mlir::parseSourceString<mlir::ModuleOp>(body, &interp.context());
    EXPECT_TRUE(module);
    fn = *module->getOps<mlir::func::FuncOp>().begin();
    for (mlir::Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
  }
  size_t opCount() {
    size_t n = 0;
    fn.walk([&](mlir::Operation *) { ++n; });
    return n;
  }
};

TEST(StepCost, AProductOfAnInputCountsTheWeightsGradientOnly) {
  Model m(R"(
func.func @f(%x: tensor<8x4xf32>) -> tensor<f32> {
  %w = whale.param "w" zeros [] : tensor<4x6xf32>
  %h = whale.matmul %x, %w : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %l = whale.reduce_mean %h axes = [0, 1] : tensor<8x6xf32> -> tensor<f32>
  return %l : tensor<f32>
})");
  const size_t before = m.opCount();
  auto costs = whale::perf::stepCostsOf(m.ops, m.fn, /*bf16=*/false);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_TRUE(costs[0].forward.empty()); // the parameter
  EXPECT_TRUE(costs[0].backward.empty());
  ASSERT_EQ(costs[1].forward.size(), 1u);
  EXPECT_EQ(costs[1].forward[0].flops, 2.0 * 8 * 4 * 6);
  // dW = x^T dh: a 4x6 product over the 8 rows, as many FLOPs; no dx.
  ASSERT_EQ(costs[1].backward.size(), 1u);
  EXPECT_TRUE(costs[1].backward[0].matmul);
  EXPECT_EQ(costs[1].backward[0].flops, 2.0 * 8 * 4 * 6);
  EXPECT_EQ(costs[1].backward[0].m, 4);
  EXPECT_EQ(costs[1].backward[0].n, 6);
  EXPECT_EQ(costs[1].backward[0].k, 8);
  EXPECT_FALSE(costs[2].backward.empty()); // the mean's broadcast
  EXPECT_EQ(m.opCount(), before);          // the scratch backward is gone
}

TEST(StepCost, AProductOfTwoTrainedValuesCountsBothGradients) {
  Model m(R"(
func.func @f(%x: tensor<8x4xf32>) -> tensor<f32> {
  %a = whale.param "a" zeros [] : tensor<4x4xf32>
  %w = whale.param "w" zeros [] : tensor<4x6xf32>
  %g = whale.matmul %x, %a : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %h = whale.matmul %g, %w : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %l = whale.reduce_mean %h axes = [0, 1] : tensor<8x6xf32> -> tensor<f32>
  return %l : tensor<f32>
})");
  auto costs = whale::perf::stepCostsOf(m.ops, m.fn, false);
  EXPECT_EQ(costs[2].backward.size(), 1u); // %g's product: dA only
  EXPECT_EQ(costs[3].backward.size(), 2u); // %h's: dG and dW
}

TEST(StepCost, FrozenParametersAndUnusedResultsCostNoBackward) {
  Model m(R"(
func.func @f(%x: tensor<8x4xf32>) -> tensor<f32> {
  %w = whale.param "w" zeros [] {frozen} : tensor<4x6xf32>
  %h = whale.matmul %x, %w : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %v = whale.param "v" zeros [] : tensor<4x6xf32>
  %u = whale.matmul %x, %v : tensor<8x4xf32>, tensor<4x6xf32> -> tensor<8x6xf32>
  %l = whale.reduce_mean %h axes = [0, 1] : tensor<8x6xf32> -> tensor<f32>
  return %l : tensor<f32>
})");
  auto costs = whale::perf::stepCostsOf(m.ops, m.fn, false);
  EXPECT_TRUE(costs[1].backward.empty()); // nothing trainable before it
  EXPECT_TRUE(costs[3].backward.empty()); // %u does not reach the loss
  EXPECT_EQ(costs[3].forward.size(), 1u); // but it still runs forward
  EXPECT_TRUE(costs[4].backward.empty()); // its input needs no gradient
}

TEST(StepCost, ASecondUseAddsItsGradientIntoTheFirst) {
  Model m(R"(
func.func @f(%x: tensor<8x4xf32>) -> tensor<f32> {
  %w = whale.param "w" zeros [] : tensor<4x4xf32>
  %h = whale.matmul %x, %w : tensor<8x4xf32>, tensor<4x4xf32> -> tensor<8x4xf32>
  %r = whale.relu %h : tensor<8x4xf32>
  %s = whale.add %r, %h : tensor<8x4xf32>, tensor<8x4xf32> -> tensor<8x4xf32>
  %l = whale.reduce_mean %s axes = [0, 1] : tensor<8x4xf32> -> tensor<f32>
  return %l : tensor<f32>
})");
  auto costs = whale::perf::stepCostsOf(m.ops, m.fn, false);
  // The add reads %h second: its gradient of %h is summed into the relu's
  // path, one add of 32 elements that reads two and writes one tensor.
  ASSERT_FALSE(costs[3].backward.empty());
  const whale::perf::OpCost &sum = costs[3].backward.back();
  EXPECT_EQ(sum.flops, 32.0);
  EXPECT_EQ(sum.bytes, 3.0 * 32 * 4);
}

} // namespace
