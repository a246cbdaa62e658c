//===- Bf16Kernels.cpp - which whale ops the runtime runs on bf16 ---------===//

#include "lowering/Bf16Kernels.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"

using namespace mlir;

namespace whale {

bool isBf16Matmul(Operation *op) {
  if (!isa<MatmulOp, MatmulGradOp>(op))
    return false;
  return llvm::all_of(op->getOperandTypes(), isBf16Tensor) &&
         llvm::all_of(op->getResultTypes(), [](Type t) {
           Type e = elementOf(t);
           return e && (e.isBF16() || e.isF32());
         });
}

bool runsOnBf16(Operation *op) {
  // A fused region loads and stores its bf16 operands itself, converting
  // in registers (its element program names each operand's type).
  if (isa<CastOp, ReshapeOp, ConstantOp, TaskGraphOp, YieldOp, FusedOp,
          FusedYieldOp>(op) ||
      !op->getDialect() || !isa<WhaleDialect>(op->getDialect()))
    return true;
  // The epilogue ops' verifiers say which of their tensors may be bf16.
  if (isa<LinearOp, LinearWeightGradOp, GeluMatmulGradOp>(op))
    return true;
  return isBf16Matmul(op);
}

} // namespace whale
