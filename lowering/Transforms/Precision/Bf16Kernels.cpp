//===- Bf16Kernels.cpp - which whale ops the runtime runs on bf16 ---------===//

#include "lowering/Transforms/Precision/Bf16Kernels.h"

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

namespace {

/// Ops the runtime runs on bf16 tensors wherever their verifiers allow them.
bool wholeOpOnBf16(Operation *op) {
  // A fused region loads and stores its bf16 operands itself, converting
  // in registers (its element program names each operand's type).
  if (isa<CastOp, ReshapeOp, CopyOp, ConstantOp, TaskGraphOp, YieldOp, FusedOp,
          FusedYieldOp>(op) ||
      !op->getDialect() || !isa<WhaleDialect>(op->getDialect()))
    return true;
  // The epilogue ops' verifiers (and round_and_sum's) say which of their
  // tensors may be bf16;
  // attention's, that its three operands are bf16 together (its result
  // then too).
  if (isa<LinearOp, LinearWeightGradOp, GeluMatmulGradOp, AttentionOp,
          RoundAndSumOp>(op))
    return true;
  return isBf16Matmul(op);
}

} // namespace

bool takesBf16Operand(Operation *op, unsigned operand) {
  // Cross entropy and its gradient read the logits as they are stored;
  // the loss, its gradient and the logits' gradient are fp32.
  if (isa<CrossEntropyOp, CrossEntropyGradOp, RoundedCrossEntropyGradOp>(op))
    return operand == 0;
  // Attention's gradient reads the forward's operands and output as they
  // are stored, and dout in fp32 (a gradient GEMM's result).
  if (isa<AttentionGradOp>(op))
    return operand < 4;
  return wholeOpOnBf16(op);
}

bool storesBf16Result(Operation *op, unsigned result) {
  // Attention's gradients are fp32: the biases' gradients sum them, and a
  // plan that splits them sums in another order.
  if (isa<AttentionGradOp, CrossEntropyOp, CrossEntropyGradOp>(op))
    return false;
  // The fused loss gradient stores its rounding in bf16, its sum in f32.
  if (isa<RoundedCrossEntropyGradOp>(op))
    return result == 0;
  return wholeOpOnBf16(op);
}

bool runsOnBf16(Operation *op) {
  for (OpOperand &use : op->getOpOperands())
    if (isBf16Tensor(use.get().getType()) &&
        !takesBf16Operand(op, use.getOperandNumber()))
      return false;
  for (OpResult r : op->getResults())
    if (isBf16Tensor(r.getType()) && !storesBf16Result(op, r.getResultNumber()))
      return false;
  return true;
}

} // namespace whale
