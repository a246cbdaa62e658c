//===- CloneBody.h - a block's ops, cloned in place of an op ------*- C++
//-*-===//
//
// What inlining a call, undoing a fused region and standing a step's body
// in a rank program inline share: a single-block body's ops cloned at a
// builder's insertion point, its arguments standing for given values.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CLONEBODY_H
#define WHALE_LOWERING_CLONEBODY_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace whale {

/// Clones `body`'s ops but its terminator at b's insertion point, its
/// arguments standing for `args`, handing each clone to `cloned` where
/// given; returns what the terminator's operands became there.
inline llvm::SmallVector<mlir::Value>
cloneBody(mlir::OpBuilder &b, mlir::Block &body, mlir::ValueRange args,
          llvm::function_ref<void(mlir::Operation *)> cloned = {}) {
  mlir::IRMapping map;
  map.map(body.getArguments(), args);
  for (mlir::Operation &op : body.without_terminator()) {
    mlir::Operation *clone = b.clone(op, map);
    if (cloned)
      cloned(clone);
  }
  llvm::SmallVector<mlir::Value> results;
  for (mlir::Value v : body.getTerminator()->getOperands())
    results.push_back(map.lookupOrDefault(v));
  return results;
}

} // namespace whale

#endif
