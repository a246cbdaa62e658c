//===- FormulaRegions.cpp - formula ops the fusion left alone -------------===//

#include "lowering/Transforms/Fusion/FormulaRegions.h"

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/Builders.h"

using namespace mlir;

namespace whale {

namespace {

bool isFormulaOp(Operation *op) {
  return isa<ScalarFormulaOpInterface, FormulaGradOp>(op);
}

LogicalResult wrap(Operation *op) {
  for (Type t : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
    if (!cast<RankedTensorType>(t).getElementType().isF32())
      return op->emitOpError("is computed from its formula on f32 tensors; "
                             "a bf16 value reaches it only through "
                             "whale.cast");
  OpBuilder b(op);
  // Each operand once: a formula's gradient may read one value twice.
  SmallVector<Value> inputs;
  for (Value v : op->getOperands())
    if (!llvm::is_contained(inputs, v))
      inputs.push_back(v);
  auto fused =
      FusedOp::createAround(b, op->getLoc(), {op}, inputs, op->getResults());
  op->replaceAllUsesWith(fused->getResults());
  op->erase();
  return success();
}

} // namespace

LogicalResult wrapFormulaOps(ModuleOp module) {
  SmallVector<Operation *> alone;
  module.walk([&](Operation *op) {
    if (isFormulaOp(op) && !op->getParentOfType<FusedOp>())
      alone.push_back(op);
  });
  for (Operation *op : alone)
    if (failed(wrap(op)))
      return failure();
  return success();
}

} // namespace whale
