//===- LoweringOrder.h - a model's ops in the order they run ------*- C++
//-*-===//
//
// The lowering turns a model function into calls in one order: its whale
// ops with TaskGraph bodies in place, a fused region as one op (its ops are
// its kernel's). A TaskGraph's results are the values its yield hands on.
// What depends on that order (where a tensor is released, which operand an
// in-place op may write) reads it from here, so the two never disagree.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGORDER_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGORDER_H

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace whale {

struct LoweringOrder {
  explicit LoweringOrder(mlir::func::FuncOp fn) {
    fn.walk<mlir::WalkOrder::PreOrder>([&](mlir::Operation *op) {
      if (auto y = mlir::dyn_cast<YieldOp>(op)) {
        for (auto [r, v] :
             llvm::zip(y->getParentOp()->getResults(), y.getValues()))
          alias[r] = v;
      } else if (op->getDialect() &&
                 mlir::isa<WhaleDialect>(op->getDialect()) &&
                 !mlir::isa<TaskGraphOp>(op)) {
        ops.push_back(op);
        if (mlir::isa<FusedOp>(op))
          return mlir::WalkResult::skip();
      }
      return mlir::WalkResult::advance();
    });
  }

  /// The value `v` stands for (a TaskGraph's result: what its yield hands
  /// on).
  mlir::Value resolve(mlir::Value v) const {
    while (alias.count(v))
      v = alias.lookup(v);
    return v;
  }

  /// The last op of `ops` to read each value (resolved).
  llvm::DenseMap<mlir::Value, mlir::Operation *> lastUses() const {
    llvm::DenseMap<mlir::Value, mlir::Operation *> last;
    for (mlir::Operation *op : ops)
      for (mlir::Value v : op->getOperands())
        last[resolve(v)] = op;
    return last;
  }

  llvm::SmallVector<mlir::Operation *> ops;
  llvm::DenseMap<mlir::Value, mlir::Value> alias;
};

} // namespace whale

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_LOWERINGORDER_H
