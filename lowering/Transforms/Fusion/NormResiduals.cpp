//===- NormResiduals.cpp - a norm's input gradient with its residual's ----===//
//
// The fused op stands where the sum stood when the norm's other gradients
// (dgamma, dbeta, dweight) are read only after it, else where the norm's
// gradient stood when the residual's gradient is made before it: either
// way every value is made before it is read. f32 only: under amp's storage
// a sum of rounded values is not this one.
//
//===----------------------------------------------------------------------===//

#include "lowering/Transforms/Fusion/NormResiduals.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace whale {

bool readAfter(ValueRange values, Operation *place) {
  Block *block = place->getBlock();
  for (Value v : values)
    for (Operation *user : v.getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at || !place->isBeforeInBlock(at))
        return false;
    }
  return true;
}

namespace {

/// Whether `v` is available at `at`: a block argument of its block, or
/// made before it there.
bool availableAt(Value v, Operation *at) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == at->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == at->getBlock() && def->isBeforeInBlock(at);
}

/// Where the fused op of `norm` (whose input gradient `dx` the sum `add`
/// alone reads) may stand; null where nowhere.
Operation *placeFor(AddOp add, Operation *norm, Value dx, Value residual,
                    ValueRange others) {
  if (!dx.hasOneUse() ||
      !cast<RankedTensorType>(add.getType()).getElementType().isF32() ||
      residual.getType() != dx.getType() ||
      add.getResult().getType() != dx.getType() ||
      norm->getBlock() != add->getBlock())
    return nullptr;
  if (readAfter(others, add))
    return add;
  if (availableAt(residual, norm))
    return norm;
  return nullptr;
}

bool fuse(AddOp add, Value dx, Value residual) {
  if (auto ln = dx.getDefiningOp<LayerNormGradOp>()) {
    if (ln.getDx() != dx || ln.getResidual())
      return false;
    Operation *at =
        placeFor(add, ln, dx, residual, {ln.getDgamma(), ln.getDbeta()});
    if (!at)
      return false;
    OpBuilder b(at);
    auto fused =
        LayerNormGradOp::create(b, ln.getLoc(), ln.getX(), ln.getGamma(),
                                ln.getDy(), residual, ln.getEpsAttr());
    add.getResult().replaceAllUsesWith(fused.getDx());
    ln.getDgamma().replaceAllUsesWith(fused.getDgamma());
    ln.getDbeta().replaceAllUsesWith(fused.getDbeta());
    add->erase();
    ln->erase();
    return true;
  }
  if (auto rms = dx.getDefiningOp<RmsNormGradOp>()) {
    if (rms.getDx() != dx || rms.getResidual())
      return false;
    Operation *at = placeFor(add, rms, dx, residual, {rms.getDweight()});
    if (!at)
      return false;
    OpBuilder b(at);
    auto fused =
        RmsNormGradOp::create(b, rms.getLoc(), rms.getX(), rms.getWeight(),
                              rms.getDy(), residual, rms.getEpsAttr());
    add.getResult().replaceAllUsesWith(fused.getDx());
    rms.getDweight().replaceAllUsesWith(fused.getDweight());
    add->erase();
    rms->erase();
    return true;
  }
  return false;
}

} // namespace

bool fuseNormResidual(AddOp add) {
  Value lhs = add.getLhs(), rhs = add.getRhs();
  return fuse(add, rhs, lhs) || fuse(add, lhs, rhs);
}

void fuseNormResiduals(Operation *root) {
  SmallVector<AddOp> sums;
  root->walk([&](AddOp add) { sums.push_back(add); });
  for (AddOp add : sums)
    fuseNormResidual(add);
}

} // namespace whale
