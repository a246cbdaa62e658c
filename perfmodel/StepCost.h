//===- StepCost.h - what a training step computes for each forward op -*- C++
//-*-===//
//
// A training step runs each forward op and the backward -whale-autodiff
// builds for it. The planning passes see the forward model only, so to
// price a step as the simulator replays it they ask each op's gradient
// interface for that backward, in a scratch place they erase again: the
// gradients of its operands that reach a trainable parameter (autodiff
// drops the others as dead), and one add per further use of a value whose
// gradient accumulates.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_STEPCOST_H
#define WHALE_PERFMODEL_STEPCOST_H

#include "perfmodel/OpCost.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir {
class Operation;
} // namespace mlir

namespace whale::perf {

/// What a step computes for one forward op: the op itself (empty for an op
/// without the cost interface) and its backward's ops.
struct StepOpCosts {
  llvm::SmallVector<OpCost, 1> forward;
  llvm::SmallVector<OpCost, 2> backward;
};

/// Per op of `ops` (ops of the model `scope`, in program order): what a
/// training step computes for it, at bf16 matrix rates when `bf16`. Which
/// values need gradients and reach the loss is read from all of `scope`
/// (values cross TaskGraphs through their yields).
llvm::SmallVector<StepOpCosts, 0>
stepCostsOf(llvm::ArrayRef<mlir::Operation *> ops, mlir::Operation *scope,
            bool bf16);

} // namespace whale::perf

#endif
