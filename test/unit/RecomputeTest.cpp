//===- RecomputeTest.cpp - recomputation's segments for the micro-batches held
//
// plan::recomputeSegments cuts a stage's forward where what the stage holds
// is least, as the memory model counts it: the checkpoints of every
// micro-batch it holds at once (and one more), plus three times a segment's
// activations. A chain of equal ops is cut into about sqrt(n)
// segments for one micro-batch, and into one when the stage holds many:
// its checkpoints would then outweigh the segment they save.
//
//===----------------------------------------------------------------------===//

#include "lowering/Recompute.h"
#include "dialects/Whale/IR/WhaleDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <string>

namespace {

/// A function of `n` ReLUs in a chain, each 64 x 64 floats (16 KiB).
std::string chain(int n) {
  std::string text = "func.func @chain(%v0: tensor<64x64xf32>) -> "
                     "tensor<64x64xf32> {\n";
  for (int i = 1; i <= n; ++i)
    text += "  %v" + std::to_string(i) + " = whale.relu %v" +
            std::to_string(i - 1) + " : tensor<64x64xf32>\n";
  text += "  return %v" + std::to_string(n) + " : tensor<64x64xf32>\n}\n";
  return text;
}

struct Chain {
  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  llvm::SmallVector<mlir::Operation *> ops;

  explicit Chain(int n) {
    ctx.loadDialect<whale::WhaleDialect, mlir::func::FuncDialect>();
    module = mlir::parseSourceString<mlir::ModuleOp>(chain(n), &ctx);
    if (!module)
      return;
    auto fn = *module->getOps<mlir::func::FuncOp>().begin();
    for (mlir::Operation &op : fn.getBody().front().without_terminator())
      ops.push_back(&op);
  }
};

TEST(Recompute, OneMicroBatchCutsAChainIntoAboutSqrtNSegments) {
  Chain c(16);
  ASSERT_TRUE(c.module);
  llvm::SmallVector<size_t> ends = whale::plan::recomputeSegments(c.ops, 1);
  // c cuts and c + 1 segments: 2 x c x 16 KiB of checkpoints against three
  // times a segment of 16 / (c + 1) ops, least near c + 1 = sqrt(24).
  EXPECT_GE(ends.size(), 4u);
  EXPECT_LE(ends.size(), 8u);
  EXPECT_EQ(ends.back(), 16u);
  whale::plan::RecomputeBytes bytes = whale::plan::recomputeBytes(c.ops, 1);
  EXPECT_EQ(bytes.checkpoints, double(ends.size() - 1) * 64 * 64 * 4);
}

TEST(Recompute, AStageHoldingManyMicroBatchesKeepsOneSegment) {
  Chain c(16);
  ASSERT_TRUE(c.module);
  // Holding 64, a cut costs 65 checkpoints to save at most three times 15
  // ops of one segment: none is worth it.
  llvm::SmallVector<size_t> ends = whale::plan::recomputeSegments(c.ops, 64);
  EXPECT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends.back(), 16u);
  whale::plan::RecomputeBytes bytes = whale::plan::recomputeBytes(c.ops, 64);
  EXPECT_EQ(bytes.checkpoints, 0);
  EXPECT_EQ(bytes.segment, 16.0 * 64 * 64 * 4);
}

TEST(Recompute, MoreMicroBatchesHeldNeverMeansMoreSegments) {
  Chain c(36);
  ASSERT_TRUE(c.module);
  size_t before = whale::plan::recomputeSegments(c.ops, 1).size();
  for (int64_t held : {2, 4, 8, 16, 32}) {
    size_t now = whale::plan::recomputeSegments(c.ops, held).size();
    EXPECT_LE(now, before) << held << " micro-batches held";
    before = now;
  }
}

TEST(Recompute, ARanksShareOfSplitValuesIsWhatItHolds) {
  // A rank of a shard group sharing its rows holds its share of a split
  // TaskGraph's values: the bytes are counted at that share, and a chain
  // all at one share is cut where the whole one is.
  Chain c(16);
  ASSERT_TRUE(c.module);
  auto eighth = [](mlir::Operation *) { return 0.125; };
  whale::plan::RecomputeBytes whole = whale::plan::recomputeBytes(c.ops, 1);
  whale::plan::RecomputeBytes part =
      whale::plan::recomputeBytes(c.ops, 1, eighth);
  EXPECT_EQ(whale::plan::recomputeSegments(c.ops, 1, eighth),
            whale::plan::recomputeSegments(c.ops, 1));
  EXPECT_EQ(part.checkpoints, whole.checkpoints / 8);
  EXPECT_EQ(part.segment, whole.segment / 8);
  // The first half split, the second whole: the split half is cheap to
  // hold, so the segments bunch where the whole values are.
  auto firstHalf = [&](mlir::Operation *op) {
    return op->isBeforeInBlock(c.ops[8]) ? 0.125 : 1.0;
  };
  llvm::SmallVector<size_t> ends =
      whale::plan::recomputeSegments(c.ops, 1, firstHalf);
  size_t inFirst = 0;
  for (size_t e : ends)
    inFirst += e <= 8;
  EXPECT_LT(inFirst, ends.size() - inFirst);
}

} // namespace
