//===- OverlapGradSync.cpp - -whale-overlap-grad-sync ---------------------===//
//
// Overlaps the gradient all-reduces with the backward that is still to
// run. Each `whale.all_reduce` of a rank program becomes a
// `whale.all_reduce_start`, placed as soon as its bucket's gradients are
// final, and a `whale.all_reduce_wait`, placed where its sums are first
// read (the clipping or the optimizer): the bucket is summed on the rank's
// collective thread while the backward of the parameters before it runs.
//
// A gradient is final after the last micro-batch's backward adds its part
// to the running sum. The rank programs add the micro-batches' gradients
// after each backward; those sums move up to just after their operands
// are made. A sum moves only when it is the one reader of its operands, so
// no value lives longer: each move frees two tensors earlier and makes one
// earlier.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace whale {
#define GEN_PASS_DEF_WHALEOVERLAPGRADSYNC
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// The op of `block` that holds `op` (itself, or the op whose region does).
Operation *inBlock(Block &block, Operation *op) {
  while (op && op->getBlock() != &block)
    op = op->getParentOp();
  return op;
}

/// The last of the ops of `block` that define `values`; null when all are
/// the block's arguments.
Operation *lastDefinition(Block &block, ValueRange values) {
  Operation *last = nullptr;
  for (Value v : values)
    if (Operation *d = inBlock(block, v.getDefiningOp()))
      if (!last || last->isBeforeInBlock(d))
        last = d;
  return last;
}

/// Moves the sum `op` (and the sums it reads, first) to just after what it
/// reads, where it is their only reader.
void hoistSums(Block &block, Operation *op) {
  if (!op || op->getBlock() != &block || !isa<AddOp>(op))
    return;
  for (Value v : op->getOperands())
    if (!v.hasOneUse())
      return;
  for (Value v : op->getOperands())
    hoistSums(block, v.getDefiningOp());
  if (Operation *after = lastDefinition(block, op->getOperands()))
    if (after->getNextNode() != op)
      op->moveAfter(after);
}

void overlap(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  SmallVector<AllReduceOp> syncs;
  for (Operation &op : body)
    if (auto ar = dyn_cast<AllReduceOp>(op))
      syncs.push_back(ar);
  OpBuilder b(fn.getContext());
  for (AllReduceOp ar : syncs) {
    for (Value v : ar.getValues())
      hoistSums(body, v.getDefiningOp());
    if (Operation *after = lastDefinition(body, ar.getValues()))
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(&body);
    auto start =
        AllReduceStartOp::create(b, ar.getLoc(), ar.getValues(),
                                 ar.getGroupAttr(), ar.getShardsAttr(),
                                 ar.getOwnersAttr());
    b.setInsertionPoint(ar);
    auto wait = AllReduceWaitOp::create(b, ar.getLoc(), ar.getResultTypes(),
                                        start.getPending());
    ar.replaceAllUsesWith(wait.getResults());
    ar.erase();
    // Waits go where the sums are first read.
    Operation *first = nullptr;
    for (Operation *user : wait->getUsers())
      if (Operation *u = inBlock(body, user))
        if (!first || u->isBeforeInBlock(first))
          first = u;
    if (first && first != wait->getNextNode())
      wait->moveBefore(first);
  }
}

struct OverlapGradSyncPass
    : public whale::impl::WhaleOverlapGradSyncBase<OverlapGradSyncPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp fn) {
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty())
        overlap(fn);
    });
  }
};

} // namespace
