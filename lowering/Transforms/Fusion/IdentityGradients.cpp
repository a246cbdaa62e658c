//===- IdentityGradients.cpp - gradients that are their dout --------------===//

#include "lowering/Transforms/Fusion/IdentityGradients.h"

#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;

namespace whale {

namespace {

/// Ops that overwrite their operands (so each must be their operand's only
/// reader).
bool writesInPlace(Operation *op) {
  return isa<AllReduceOp, AllReduceStartOp, ClipGradNormOp>(op);
}

} // namespace

bool forwardIdentityGradient(BinaryGradOp g) {
  if (g.getType() != g.getDout().getType() ||
      !(g.getKind() == BinaryKind::add ||
        (g.getKind() == BinaryKind::sub && g.getOperand() == 0)))
    return false;
  Value dout = g.getDout();
  if (llvm::any_of(g->getUsers(), writesInPlace) ||
      llvm::any_of(dout.getUsers(), writesInPlace))
    return false;
  g.getResult().replaceAllUsesWith(dout);
  g.erase();
  return true;
}

void forwardIdentityGradients(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block))
    if (auto g = dyn_cast<BinaryGradOp>(op))
      forwardIdentityGradient(g);
}

} // namespace whale
