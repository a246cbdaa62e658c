//===- CostOpInterface.h - FLOPs, bytes and memory of an op -----*- C++ -*-===//

#ifndef WHALE_DIALECTS_WHALE_INTERFACES_COSTOPINTERFACE_H
#define WHALE_DIALECTS_WHALE_INTERFACES_COSTOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

namespace whale {

/// Bytes of a statically shaped tensor (0 for anything else).
int64_t tensorBytes(mlir::Type type);
/// Number of elements of a statically shaped tensor (1 for a scalar).
int64_t tensorElements(mlir::Type type);
/// Sum of tensorBytes over the operands / results of `op`.
int64_t operandBytes(mlir::Operation *op);
int64_t resultBytes(mlir::Operation *op);

/// The cost of a region of ops (a function, a TaskGraph): the sum over every
/// op that implements CostOpInterface.
struct CostSummary {
  int64_t flops = 0;
  int64_t bytesRead = 0;
  int64_t bytesWritten = 0;
  int64_t outputMemory = 0;
};
CostSummary summarizeCost(mlir::Operation *root);

} // namespace whale

#include "dialects/Whale/Interfaces/CostOpInterface.h.inc"

#endif
