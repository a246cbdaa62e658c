//===- IdentityGradients.cpp - gradients that are their dout --------------===//

#include "lowering/IdentityGradients.h"

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

void forwardIdentityGradients(Block &block) {
  for (Operation &op : llvm::make_early_inc_range(block)) {
    auto g = dyn_cast<BinaryGradOp>(op);
    if (!g || g.getType() != g.getDout().getType() ||
        !(g.getKind() == BinaryKind::add ||
          (g.getKind() == BinaryKind::sub && g.getOperand() == 0)))
      continue;
    Value dout = g.getDout();
    if (llvm::any_of(g->getUsers(), writesInPlace) ||
        llvm::any_of(dout.getUsers(), writesInPlace))
      continue;
    g.getResult().replaceAllUsesWith(dout);
    g.erase();
  }
}

} // namespace whale
