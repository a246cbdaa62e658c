//===- TopLevelOps.h - a pass's work on each op of a module -----*- C++ -*-===//
//
// Rewrites that stay within a function (the fusions) run on a module's
// functions side by side: functions are isolated from each other, and a
// large pipeline's rank programs hold hundreds of thousands of ops.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TOPLEVELOPS_H
#define WHALE_LOWERING_TOPLEVELOPS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Threading.h"

namespace whale {

/// Calls `work` on each op of `module`'s body: first, one by one, those not
/// isolated from above (they may share values), then the isolated ones
/// (functions) on the context's threads. `work` must touch nothing outside
/// the op it is given.
inline void
forEachTopLevelOp(mlir::ModuleOp module,
                  llvm::function_ref<void(mlir::Operation *)> work) {
  llvm::SmallVector<mlir::Operation *> isolated;
  for (mlir::Operation &op : module.getBody()->getOperations())
    if (op.hasTrait<mlir::OpTrait::IsIsolatedFromAbove>())
      isolated.push_back(&op);
    else
      work(&op);
  mlir::parallelForEach(module.getContext(), isolated, work);
}

} // namespace whale

#endif
