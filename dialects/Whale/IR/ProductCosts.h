//===- ProductCosts.h - FLOPs of products from their types ------*- C++ -*-===//
//
// The FLOPs of the dialect's products and their gradients, from the types
// the forward op holds: the ops' cost methods (WhaleCost.cpp) call these,
// and so does what prices the gradients a plan's rank programs will build
// before they exist (the search's bound on a planned cut,
// lib/perf/CutBound.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECTS_WHALE_IR_PRODUCTCOSTS_H
#define WHALE_DIALECTS_WHALE_IR_PRODUCTCOSTS_H

#include "mlir/IR/BuiltinTypes.h"

#include <cstdint>

namespace whale {

/// A matrix product's (and each of its operand gradients'): 2 x (elements
/// of the result) x K, K read from the left factor.
int64_t productFlops(mlir::RankedTensorType lhs, mlir::RankedTensorType result,
                     bool transposeLhs);

/// A fused attention's forward: the scores (2E a pair), the softmax (5) and
/// the weighted sum (2E). T is axis -2, or -3 when `sequenceMajor`.
int64_t attentionFlops(mlir::RankedTensorType query, mlir::RankedTensorType key,
                       bool causal, bool sequenceMajor);

/// Its backward, one op for the three gradients: the scores again, dv, dP,
/// dq and dk (2E each) and the softmax's backward (8).
int64_t attentionGradFlops(mlir::RankedTensorType query,
                           mlir::RankedTensorType key, bool causal,
                           bool sequenceMajor);

} // namespace whale

#endif // WHALE_DIALECTS_WHALE_IR_PRODUCTCOSTS_H
