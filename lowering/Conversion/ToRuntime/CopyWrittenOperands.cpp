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
  return isa<AllReduceOp, AllReduceStartOp, ClipGradNormOp>(op);
}

void whale::copyWrittenOperands(func::FuncOp fn) {
  if (fn.isExternal())
    return;
  // The ops in the order the lowering runs them (TaskGraph bodies in
  // place, a fused region as one op); a TaskGraph's results are the values
  // its yield hands on.
  SmallVector<Operation *> ops;
  DenseMap<Value, Value> alias;
  fn.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (auto y = dyn_cast<YieldOp>(op))
      for (auto [r, v] : llvm::zip(y->getParentOp()->getResults(),
                                   y.getValues()))
        alias[r] = v;
    ops.push_back(op);
    return isa<FusedOp>(op) ? WalkResult::skip() : WalkResult::advance();
  });
  auto resolve = [&](Value v) {
    while (alias.count(v))
      v = alias.lookup(v);
    return v;
  };
  DenseMap<Value, Operation *> lastUse;
  for (Operation *op : ops)
    for (Value v : op->getOperands())
      lastUse[resolve(v)] = op;
  llvm::DenseSet<Value> results;
  fn.walk([&](func::ReturnOp ret) {
    for (Value v : ret.getOperands())
      results.insert(resolve(v));
  });

  for (Operation *op : ops) {
    if (!writesOperandsInPlace(op))
      continue;
    llvm::SmallDenseSet<Value, 8> seen;
    for (OpOperand &use : op->getOpOperands()) {
      Value v = resolve(use.get());
      // Another reader after this op, a bucket that names the value twice,
      // or memory that is not this function's to write: the parameter
      // store, the caller's inputs and results.
      bool shared = lastUse.lookup(v) != op || !seen.insert(v).second ||
                    results.contains(v) || isa<BlockArgument>(v) ||
                    v.getDefiningOp<ParamOp>();
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
