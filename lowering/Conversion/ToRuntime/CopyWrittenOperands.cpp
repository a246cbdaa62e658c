//===- CopyWrittenOperands.cpp - -whale-copy-written-operands ------------===//
//
// Tensors are values: a whale.all_reduce's or whale.clip_grad_norm's
// operands keep their values, and its results are new ones. The runtime
// sums and scales in place, into the operands' tensors, which is right only
// where nothing else reads an operand afterwards. Upstream -cse makes that
// common (two equal casts merged, one all-reduced, the other read later), so
// here, before the lowering, each such operand that something else still
// needs gets a whale.copy of its own, as bufferization copies a tensor
// before writing it where it is still read.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/LoweringOrder.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace whale {
#define GEN_PASS_DEF_WHALECOPYWRITTENOPERANDS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

bool whale::writesOperandsInPlace(Operation *op) {
  return isa<AllReduceOp, AllReduceStartOp, ClipGradNormOp, AddIntoOwnersOp>(
      op);
}

void whale::copyWrittenOperands(func::FuncOp fn) {
  if (fn.isExternal())
    return;
  const LoweringOrder order(fn);
  DenseMap<Value, Operation *> lastUse = order.lastUses();
  llvm::DenseSet<Value> results;
  fn.walk([&](func::ReturnOp ret) {
    for (Value v : ret.getOperands())
      results.insert(order.resolve(v));
  });
  // A value an op outside the lowering's order reads (a step's call before
  // the steps are inlined) counts as read after every writer.
  llvm::DenseSet<Value> readElsewhere;
  fn.walk([&](Operation *op) {
    if (op->getDialect() && !isa<WhaleDialect>(op->getDialect()) &&
        !isa<func::ReturnOp>(op))
      for (Value v : op->getOperands())
        readElsewhere.insert(order.resolve(v));
  });

  for (Operation *op : order.ops) {
    if (!writesOperandsInPlace(op))
      continue;
    llvm::SmallDenseSet<Value, 8> seen;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = order.resolve(use.get());
      // Another reader after this op, a bucket that names the value twice,
      // or memory that is not this function's to write: the parameter
      // store, the caller's inputs and results.
      bool shared = lastUse.lookup(v) != op || !seen.insert(v).second ||
                    results.contains(v) || readElsewhere.contains(v) ||
                    isa<BlockArgument>(v) || v.getDefiningOp<ParamOp>();
      if (!shared)
        continue;
      OpBuilder b(op);
      use.set(CopyOp::create(b, op->getLoc(), use.get()));
    }
  }
}

namespace {

struct CopyWrittenOperands
    : public whale::impl::WhaleCopyWrittenOperandsBase<CopyWrittenOperands> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) { copyWrittenOperands(fn); });
  }
};

} // namespace
