//===- FuseRoundedSums.cpp - -whale-fuse-rounded-sums ---------------------===//
//
// Under amp's storage an activation gradient leaves its kernel in fp32
// (a layernorm's, a GELU's, attention's, the loss's) and two kernels read
// it: a cast rounds it to bf16 for the weight's and the input's GEMMs, and
// the bias's gradient sums the fp32 values over the rows. Each reads every
// element; at GPT-2 small's batch 8 that is 25 MB a projection and 1.6 GB
// for the logits. One whale.round_and_sum reads it once and does both,
// summing in the order the bias gradient's kernel sums, so the plan trains
// to the same bits with or without the fusion. Where the gradient is the
// loss's (the logits'), read by nothing else, the loss's gradient joins
// too (whale.rounded_cross_entropy_grad) and the f32 gradient is never
// stored at all.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"
#include "lowering/TopLevelOps.h"

#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALEFUSEROUNDEDSUMS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Whether `g` is the gradient of a bias added to every row of `dy`: the
/// sum of dy over its leading dimensions (a sum's gradient reads only its
/// dout, and its operands' shapes).
bool sumsRowsOf(BinaryGradOp g, Value dy) {
  if (g.getKind() != BinaryKind::add || g.getDout() != dy)
    return false;
  auto d = cast<RankedTensorType>(dy.getType());
  auto sum = cast<RankedTensorType>(g.getType());
  Value other = g.getOperand() == 1 ? g.getLhs() : g.getRhs();
  return sum.getElementType().isF32() && other.getType() == d &&
         sum.getRank() >= 1 && sum.getRank() < d.getRank() &&
         d.getShape().take_back(sum.getRank()) == sum.getShape();
}

/// Where `r` rounds and sums a cross entropy's gradient that nothing else
/// reads (the LM head's): one op computes the gradient, rounds and sums
/// it, and the f32 gradient is never stored.
void fuseLoss(RoundAndSumOp r) {
  auto g = r.getInput().getDefiningOp<CrossEntropyGradOp>();
  if (!g || !g->hasOneUse() || g->getBlock() != r->getBlock())
    return;
  // Where the gradient stood: its operands are ready there, and each
  // result before any of its readers.
  OpBuilder b(g);
  auto fused = RoundedCrossEntropyGradOp::create(
      b, g.getLoc(), r.getResultTypes(), g.getLogits(), g.getLabels(),
      g.getDloss());
  r.getRounded().replaceAllUsesWith(fused.getRounded());
  r.getSum().replaceAllUsesWith(fused.getSum());
  r.erase();
  g.erase();
}

/// Fuses the rounding `c` of an fp32 value with a bias gradient that sums
/// the same value in its block; false where there is none.
bool fuse(CastOp c) {
  Value x = c.getInput();
  if (!isBf16Tensor(c.getType()) ||
      !cast<RankedTensorType>(x.getType()).getElementType().isF32())
    return false;
  BinaryGradOp sum;
  for (Operation *user : x.getUsers())
    if (auto g = dyn_cast<BinaryGradOp>(user);
        g && g->getBlock() == c->getBlock() && sumsRowsOf(g, x)) {
      sum = g;
      break;
    }
  if (!sum)
    return false;
  // Where the earlier of the two stood: x is made before both, and each
  // result is then ready before any of its readers.
  Operation *at = c->isBeforeInBlock(sum) ? c.getOperation() : sum;
  OpBuilder b(at);
  auto fused = RoundAndSumOp::create(b, sum.getLoc(),
                                     TypeRange{c.getType(), sum.getType()}, x);
  c.getResult().replaceAllUsesWith(fused.getRounded());
  sum.getResult().replaceAllUsesWith(fused.getSum());
  c.erase();
  sum.erase();
  fuseLoss(fused);
  return true;
}

void fuseWithin(Operation *root) {
  SmallVector<CastOp> casts;
  root->walk([&](CastOp c) { casts.push_back(c); });
  // A fusion erases its cast and a bias gradient, never another cast.
  for (CastOp c : casts)
    fuse(c);
}

struct FuseRoundedSums
    : public whale::impl::WhaleFuseRoundedSumsBase<FuseRoundedSums> {
  void runOnOperation() override {
    forEachTopLevelOp(getOperation(), fuseWithin);
  }
};

} // namespace
