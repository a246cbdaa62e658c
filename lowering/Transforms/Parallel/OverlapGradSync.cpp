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
// A sum never moves above a pipeline send that stood before it: the stage
// before waits for that send, so work placed ahead of it lengthens the
// pipeline's path once per micro-batch (the 1T Megatron-LM plan simulated
// 5% slower overlapped than not before this rule). A stage whose backward
// ends in a send so starts its buckets after it, while the stages before
// it run their own last backwards; the first stage, whose backward sends
// nothing, starts them inside its backward.
//
// The config's grad_sync = "after_backward" turns the pass off: every sum
// stays after the backward, as Megatron-LM's data parallelism of 2021 ran
// them (whale run and whale sim --no-overlap leave the pass out alike).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Threading.h"

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

/// The block's order as numbers with room between them, kept through the
/// pass's moves: MLIR's own order leaves little room, so a rank program of
/// many micro-batches, whose sums each move, would have its order counted
/// anew after nearly every move.
class Order {
public:
  explicit Order(Block &block) : block(block) { renumber(); }

  bool before(Operation *a, Operation *b) const {
    return position.lookup(a) < position.lookup(b);
  }
  /// Moves `op` (or places it, where it is new) to just after `after`.
  void moveAfter(Operation *op, Operation *after) {
    if (after->getNextNode() != op)
      op->moveAfter(after);
    place(op);
  }
  void moveBefore(Operation *op, Operation *before) {
    if (before->getPrevNode() != op)
      op->moveBefore(before);
    place(op);
  }
  /// Forgets `op`, which is about to be erased.
  void forget(Operation *op) { position.erase(op); }
  /// Numbers `op` where it now stands, between its neighbours.
  void place(Operation *op) {
    Operation *prev = op->getPrevNode(), *next = op->getNextNode();
    const int64_t lo =
        prev ? position.lookup(prev) : position.lookup(next) - 2 * kGap;
    const int64_t hi = next ? position.lookup(next) : lo + 2 * kGap;
    if (hi - lo < 2) {
      renumber();
      return;
    }
    position[op] = lo + (hi - lo) / 2;
  }

private:
  static constexpr int64_t kGap = int64_t(1) << 24;
  void renumber() {
    int64_t at = 0;
    for (Operation &op : block)
      position[&op] = at += kGap;
  }

  Block &block;
  llvm::DenseMap<Operation *, int64_t> position;
};

/// The last of the ops of `block` that define `values`; null when all are
/// the block's arguments.
Operation *lastDefinition(Block &block, const Order &order, ValueRange values) {
  Operation *last = nullptr;
  for (Value v : values)
    if (Operation *d = inBlock(block, v.getDefiningOp()))
      if (!last || order.before(last, d))
        last = d;
  return last;
}

/// A sum that may move: an add in `block` that is its operands' one reader.
bool movableSum(Block &block, Operation *op) {
  return op && op->getBlock() == &block && isa<AddOp>(op) &&
         llvm::all_of(op->getOperands(), [](Value v) { return v.hasOneUse(); });
}

/// For each sum of `block`, the last pipeline send before it.
llvm::DenseMap<Operation *, Operation *> sendsBeforeSums(Block &block) {
  llvm::DenseMap<Operation *, Operation *> barrier;
  Operation *lastSend = nullptr;
  for (Operation &op : block) {
    if (isa<SendOp>(op))
      lastSend = &op;
    else if (lastSend && isa<AddOp>(op))
      barrier[&op] = lastSend;
  }
  return barrier;
}

/// Moves the sum `root` (and the sums it reads, first) to just after what
/// it reads, where it is their only reader, but not above the send that
/// stood before it (`barrier`). The sums of a gradient over the
/// micro-batches form a chain as long as their count, so the walk is a
/// loop, not a recursion.
void hoistSums(Block &block, Order &order,
               const llvm::DenseMap<Operation *, Operation *> &barrier,
               Operation *root) {
  if (!movableSum(block, root))
    return;
  SmallVector<std::pair<Operation *, bool>> stack = {{root, false}};
  while (!stack.empty()) {
    auto [op, operandsDone] = stack.pop_back_val();
    if (!operandsDone) {
      stack.push_back({op, true});
      for (Value v : op->getOperands())
        if (movableSum(block, v.getDefiningOp()))
          stack.push_back({v.getDefiningOp(), false});
      continue;
    }
    Operation *after = lastDefinition(block, order, op->getOperands());
    // Held by the send before it: the sum stays where it is, after that
    // send and (sums only move up) after its operands.
    if (Operation *send = barrier.lookup(op))
      if (!after || order.before(after, send))
        continue;
    if (after)
      order.moveAfter(op, after);
  }
}

void overlap(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  Order order(body);
  const llvm::DenseMap<Operation *, Operation *> barrier =
      sendsBeforeSums(body);
  SmallVector<AllReduceOp> syncs;
  for (Operation &op : body)
    if (auto ar = dyn_cast<AllReduceOp>(op))
      syncs.push_back(ar);
  OpBuilder b(fn.getContext());
  for (AllReduceOp ar : syncs) {
    for (Value v : ar.getValues())
      hoistSums(body, order, barrier, v.getDefiningOp());
    Operation *after = lastDefinition(body, order, ar.getValues());
    if (after)
      b.setInsertionPointAfter(after);
    else
      b.setInsertionPointToStart(&body);
    auto start = AllReduceStartOp::create(b, ar.getLoc(), ar.getValues(),
                                          ar.getGroupAttr(), ar.getShardsAttr(),
                                          ar.getOwnersAttr());
    order.place(start);
    b.setInsertionPoint(ar);
    auto wait = AllReduceWaitOp::create(b, ar.getLoc(), ar.getResultTypes(),
                                        start.getPending());
    order.place(wait);
    ar.replaceAllUsesWith(wait.getResults());
    order.forget(ar);
    ar.erase();
    // Waits go where the sums are first read.
    Operation *first = nullptr;
    for (Operation *user : wait->getUsers())
      if (Operation *u = inBlock(body, user))
        if (!first || order.before(u, first))
          first = u;
    if (first)
      order.moveBefore(wait, first);
  }
  // Stage 2's additions of a micro-batch's reduced gradients into their
  // owners' sums (-whale-shard-gradients) move down, with their waits, to
  // just before the next micro-batch makes its first gradient of the
  // bucket (or where the sums are first read, after the last): each
  // reduction runs under the rest of its backward and the next
  // micro-batch's forward, and its packed bucket is gone before the next
  // micro-batch's gradients of the bucket are made, so a rank never holds
  // two micro-batches' gradients of a bucket.
  SmallVector<AddIntoOwnersOp> adds;
  for (Operation &op : body)
    if (auto add = dyn_cast<AddIntoOwnersOp>(op))
      adds.push_back(add);
  // Where the first gradient a started reduction reads is made (or
  // `limit`, when that is earlier).
  auto firstMade = [&](AllReduceWaitOp wait, Operation *limit) {
    Operation *first = limit;
    for (Value g : wait.getStart().getValues())
      if (Operation *def = inBlock(body, g.getDefiningOp()))
        if (!first || order.before(def, first))
          first = def;
    return first;
  };
  // The wait that makes `v`, when `add` alone reads it.
  auto waitOnlyFor = [&](Value v, AddIntoOwnersOp add) {
    auto wait = v.getDefiningOp<AllReduceWaitOp>();
    if (!wait || wait->getBlock() != &body ||
        !llvm::all_of(wait->getUsers(), [&](Operation *u) { return u == add; }))
      return AllReduceWaitOp();
    return wait;
  };
  for (AddIntoOwnersOp add : adds) {
    AllReduceWaitOp reduced = waitOnlyFor(add.getGrads().front(), add);
    // The first micro-batch's sums, waited for before the second makes
    // its first gradient of the bucket.
    if (reduced)
      for (Value v : add.getSums())
        if (AllReduceWaitOp wait = waitOnlyFor(v, add))
          if (Operation *first = firstMade(reduced, nullptr))
            if (order.before(first, wait))
              order.moveBefore(wait, first);
    Operation *target = nullptr;
    for (Operation *user : add->getUsers()) {
      Operation *u = inBlock(body, user);
      if (auto next = dyn_cast_or_null<AddIntoOwnersOp>(u))
        if (AllReduceWaitOp wait = waitOnlyFor(next.getGrads().front(), next))
          u = firstMade(wait, u);
      if (u && (!target || order.before(u, target)))
        target = u;
    }
    if (!target || !order.before(add, target))
      continue;
    if (reduced)
      order.moveBefore(reduced, target);
    order.moveBefore(add, target);
  }
}

struct OverlapGradSyncPass
    : public whale::impl::WhaleOverlapGradSyncBase<OverlapGradSyncPass> {
  void runOnOperation() override {
    // Each rank program is a function of its own: they are rewritten side
    // by side on the context's threads.
    // The config's grad_sync = "after_backward" keeps every sum where the
    // rank programs put it, after the whole backward.
    if (!settingsOf(getOperation()).overlapGradSync())
      return;
    // The rank programs are the module's own functions: a walk into them
    // to find them would visit every op of a large pipeline's programs.
    SmallVector<func::FuncOp> programs;
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty())
        programs.push_back(fn);
    parallelForEach(&getContext(), programs, overlap);
  }
};

} // namespace
