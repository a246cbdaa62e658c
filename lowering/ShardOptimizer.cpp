//===- ShardOptimizer.cpp - -whale-shard-optimizer ------------------------===//
//
// ZeRO stage 1: the optimizer's state sharded over the ranks that sum a
// parameter's gradient. With the config's `shard_optimizer`, each
// parameter whose gradient is all-reduced over a group of n > 1 ranks gets
// one owner in that group: only the owner takes the update (and keeps the
// momentum or Adam's moments), then hands the new parameter to the others
// (`whale.broadcast`). Owners are dealt out so that each rank of a group
// holds about 1/n of the state: parameters in program order, each to the
// member holding the fewest bytes so far.
//
// The ranks of a group run the same program, so every member sees the
// same owners. Runs on rank programs, before -whale-overlap-grad-sync.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <map>

namespace whale {
#define GEN_PASS_DEF_WHALESHARDOPTIMIZER
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// The all-reduce that summed `grad` (through clipping, which scales the
/// sums in place); null when none did.
AllReduceOp summedBy(Value grad) {
  if (auto clip = grad.getDefiningOp<ClipGradNormOp>())
    grad = clip.getGrads()[cast<OpResult>(grad).getResultNumber()];
  return grad.getDefiningOp<AllReduceOp>();
}

void shardUpdates(func::FuncOp fn, OpBuilder &b) {
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  const int64_t replicas = plan::intOf(rank, "replicas", 1);
  // Bytes of parameters each member owns, per group (kind, shards).
  std::map<std::pair<std::string, int64_t>, SmallVector<int64_t>> owned;
  SmallVector<Operation *> updates;
  fn.walk([&](Operation *op) {
    if (isa<SgdUpdateOp, AdamUpdateOp>(op))
      updates.push_back(op);
  });
  for (Operation *op : updates) {
    Value param = op->getOperand(0), grad = op->getOperand(1);
    AllReduceOp sum = summedBy(grad);
    if (!sum)
      continue; // no replica shares this parameter
    StringRef group = sum.getGroup();
    int64_t shards = sum.getShards().value_or(0);
    int64_t size = group == "shard_peers" ? replicas / std::max<int64_t>(1, shards)
                   : group == "replicas"  ? replicas
                                          : 1;
    if (size <= 1)
      continue;
    SmallVector<int64_t> &bytes = owned[{group.str(), shards}];
    bytes.resize(size, 0);
    int64_t owner = std::min_element(bytes.begin(), bytes.end()) - bytes.begin();
    bytes[owner] += tensorBytes(param.getType());
    op->setAttr("owner", b.getI64IntegerAttr(owner));
    op->setAttr("group", b.getStringAttr(group));
    if (shards)
      op->setAttr("shards", b.getI64IntegerAttr(shards));
    b.setInsertionPointAfter(op);
    BroadcastOp::create(b, op->getLoc(), param, b.getI64IntegerAttr(owner),
                        b.getStringAttr(group),
                        shards ? b.getI64IntegerAttr(shards) : IntegerAttr());
  }
}

struct ShardOptimizerPass
    : public whale::impl::WhaleShardOptimizerBase<ShardOptimizerPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation().walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty() &&
          settingsOf(fn).getShardOptimizer())
        shardUpdates(fn, b);
    });
  }
};

} // namespace
