//===- ShardGradients.cpp - -whale-shard-gradients ------------------------===//
//
// ZeRO stage 2 while micro-batches accumulate (the config's
// `shard_gradients`): a rank program adds each micro-batch's gradients to
// running sums and reduces the sums to their owners once, after the last
// micro-batch, so every member holds whole gradients (twice over: the sum
// and the next micro-batch's) until then. Here each micro-batch's
// gradients are reduced to their owners as soon as they are final, and
// only the owners add them up: the first micro-batch's bucket becomes a
// reduce to owners (`whale.all_reduce` with `owners`), each later one a
// reduce to owners whose sums `whale.add_into_owners` adds into those. A
// member keeps no gradient it does not own past its micro-batch's
// reduction (the runtime frees them), at the price of one reduction per
// micro-batch. The reductions are all-reduces like any other, so
// -whale-overlap-grad-sync overlaps each with the next micro-batch's work,
// and moves its addition to where the next one starts.
//
// The sums are the same numbers added in another order (each micro-batch
// summed over the group, then the micro-batches), so they may differ from
// stage 1's in the last bits. A bucket whose gradients are not all a
// running sum of the micro-batches' stays as it is. Runs on rank programs
// after -whale-shard-optimizer.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace whale {
#define GEN_PASS_DEF_WHALESHARDGRADIENTS
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// The `m` micro-batches' gradients whose running sum `sum` is
/// (add(...add(add(g1, g2), g3)..., gm), each add read by the next alone),
/// with the adds; false where it is not one.
bool runningSum(Value sum, int64_t m, SmallVectorImpl<Value> &parts,
                SmallVectorImpl<Operation *> &adds) {
  parts.assign(m, Value());
  Value at = sum;
  for (int64_t t = m - 1; t > 0; --t) {
    auto add = at.getDefiningOp<AddOp>();
    if (!add || !at.hasOneUse() || add.getLhs().getType() != at.getType() ||
        add.getRhs().getType() != at.getType())
      return false;
    parts[t] = add.getRhs();
    adds.push_back(add);
    at = add.getLhs();
  }
  parts[0] = at;
  return true;
}

/// The op of `block` at or above `v`'s definition, or null for an argument.
Operation *definedAt(Block &block, Value v) {
  Operation *def = v.getDefiningOp();
  return def ? block.findAncestorOpInBlock(*def) : nullptr;
}

void shardGradients(func::FuncOp fn, OpBuilder &b) {
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  const int64_t m = plan::intOf(rank, "micro_batches", 1);
  if (m < 2)
    return;
  Block &body = fn.getBody().front();
  SmallVector<AllReduceOp> buckets;
  for (AllReduceOp op : body.getOps<AllReduceOp>())
    if (op.getOwners())
      buckets.push_back(op);
  for (AllReduceOp bucket : buckets) {
    // parts[t][j]: micro-batch t's gradient of the bucket's j-th sum.
    SmallVector<SmallVector<Value>> parts(m);
    SmallVector<Operation *> adds;
    bool all = true;
    for (Value sum : bucket.getValues()) {
      SmallVector<Value> mine;
      if (!runningSum(sum, m, mine, adds)) {
        all = false;
        break;
      }
      for (int64_t t = 0; t < m; ++t)
        parts[t].push_back(mine[t]);
    }
    if (!all)
      continue;
    // Each micro-batch's reduction as soon as its gradients are final (and
    // after the one before, whose sums it adds to).
    SmallVector<Value> sums;
    Operation *after = nullptr;
    for (int64_t t = 0; t < m; ++t) {
      for (Value v : parts[t])
        if (Operation *def = definedAt(body, v))
          if (!after || after->isBeforeInBlock(def))
            after = def;
      if (after)
        b.setInsertionPointAfter(after);
      else
        b.setInsertionPointToStart(&body);
      SmallVector<Type> types(ValueRange(parts[t]).getTypes());
      Operation *reduced = AllReduceOp::create(
          b, bucket.getLoc(), types, parts[t], bucket.getGroupAttr(),
          bucket.getShardsAttr(), bucket.getOwnersAttr());
      if (t > 0)
        reduced = AddIntoOwnersOp::create(
            b, bucket.getLoc(), types, reduced->getResults(), sums,
            bucket.getOwnersAttr(), bucket.getGroupAttr(),
            bucket.getShardsAttr());
      sums.assign(reduced->getResults().begin(), reduced->getResults().end());
      after = reduced;
    }
    bucket.replaceAllUsesWith(sums);
    bucket.erase();
    for (Operation *add : adds)
      if (add->use_empty())
        add->erase();
  }
}

struct ShardGradientsPass
    : public whale::impl::WhaleShardGradientsBase<ShardGradientsPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty() &&
          settingsOf(fn).getShardGradients())
        shardGradients(fn, b);
  }
};

} // namespace
