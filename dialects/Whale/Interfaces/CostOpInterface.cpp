//===- CostOpInterface.cpp - shared helpers of the cost model -------------===//

#include "dialects/Whale/Interfaces/CostOpInterface.h"

#include "mlir/IR/BuiltinTypes.h"
#include "support/Limits.h"

using namespace mlir;

namespace whale {

int64_t tensorElements(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  return shaped.getNumElements();
}

int64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<RankedTensorType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return 0;
  // Sub-byte types do not occur in Whale; round up to whole bytes anyway.
  int64_t bits = shaped.getElementTypeBitWidth();
  return shaped.getNumElements() * ((bits + 7) / 8);
}

int64_t operandBytes(Operation *op) {
  int64_t total = 0;
  for (Type t : op->getOperandTypes())
    total += tensorBytes(t);
  return total;
}

int64_t resultBytes(Operation *op) {
  int64_t total = 0;
  for (Type t : op->getResultTypes())
    total += tensorBytes(t);
  return total;
}

CostSummary summarizeCost(Operation *root) {
  CostSummary sum;
  root->walk<WalkOrder::PreOrder>([&](Operation *o) {
    auto op = dyn_cast<CostOpInterface>(o);
    if (!op)
      return WalkResult::advance();
    sum.flops = saturatingAdd(sum.flops, op.getFlops());
    sum.bytesRead = saturatingAdd(sum.bytesRead, op.getBytesRead());
    sum.bytesWritten = saturatingAdd(sum.bytesWritten, op.getBytesWritten());
    sum.outputMemory = saturatingAdd(sum.outputMemory, op.getOutputMemory());
    // An op with a body of its own (a fused region) prices it as a whole.
    return o->getNumRegions() ? WalkResult::skip() : WalkResult::advance();
  });
  return sum;
}

} // namespace whale

#include "dialects/Whale/Interfaces/CostOpInterface.cpp.inc"
