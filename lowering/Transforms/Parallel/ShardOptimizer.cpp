//===- ShardOptimizer.cpp - -whale-shard-optimizer ------------------------===//
//
// ZeRO stage 1: the optimizer's state sharded over the ranks that sum a
// parameter's gradient. With the config's `shard_optimizer`, each
// parameter whose gradient is all-reduced over a group of n > 1 ranks gets
// one owner in that group: only the owner takes the update (and keeps the
// momentum or Adam's moments), then hands the new parameter to the others.
// The parameters of one gradient bucket travel together: one
// `whale.broadcast` after the last of their updates. Owners are dealt out
// so that each rank of a group holds about 1/n of the state: parameters in
// program order, each to the member holding the fewest bytes so far.
//
// The gradients then need summing on their owners alone: an all-reduce
// whose every result feeds an owned update (directly, or through a
// clipping) becomes a reduce to owners (`owners` on `whale.all_reduce`),
// and the clipping counts each owned gradient's squares on its owner (a
// part of a split parameter's among its shard peers). Each member then
// sends the parts it does not own, and with the broadcast ZeRO moves what
// a plain all-reduce does, not 1.5 times that. A bucket with any other
// reader stays an all-reduce.
//
// Hybrid sharding (the config's `shard_group = s`, HSDP): the owners are
// dealt out within sharding groups of s consecutive replicas (s / shards
// shard peers for a split parameter's part), group "hsdp": each sharding
// group holds one copy of the state, its members about 1/s each, and the
// reduce to owners sums over every copy (the runtime's second step, among
// the owners at one position of every group).
//
// The ranks of a group run the same program, so every member sees the
// same owners. Runs on rank programs, before -whale-overlap-grad-sync.
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"
#include "lowering/Plan.h"

#include "dialects/Whale/IR/TrainAttrs.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/MapVector.h"

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

/// The members of a sharding group of `sharding` replicas in a group of
/// `size` members over which `update`'s gradient is summed (`shards`: the
/// shard peers of a split parameter's part); 0 after an error where the
/// groups do not fit.
int64_t shardingMembers(Operation *update, int64_t sharding, int64_t size,
                        int64_t shards) {
  const int64_t members = shards ? sharding / shards : sharding;
  if ((shards && sharding % shards != 0) || size % members != 0) {
    auto diag = update->emitOpError("cannot be sharded in groups of ")
                << sharding << " replicas (the config's shard_group): ";
    if (shards && sharding % shards != 0)
      diag << "its parameter is split over " << shards
           << " replicas, which shard_group must be a multiple of";
    else
      diag << "its gradient is summed over " << size
           << (shards ? " shard peers" : " replicas") << ", which groups of "
           << members << " do not divide";
    return 0;
  }
  return members;
}

bool shardUpdates(func::FuncOp fn, OpBuilder &b) {
  auto rank = fn->getAttrOfType<DictionaryAttr>("whale.rank");
  const int64_t replicas = plan::intOf(rank, "replicas", 1);
  const int64_t sharding = settingsOf(fn).shardingGroup();
  // Bytes of parameters each member owns, per group (kind, shards).
  std::map<std::pair<std::string, int64_t>, SmallVector<int64_t>> owned;
  SmallVector<Operation *> updates;
  // The owned parameters of each bucket (the all-reduce that summed their
  // gradients), in program order, with their owners and last update.
  struct Handed {
    StringAttr group;
    SmallVector<Value> params;
    SmallVector<int64_t> owners;
    Operation *last = nullptr;
  };
  llvm::MapVector<std::pair<Operation *, Block *>, Handed> buckets;
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
    int64_t size = group == "shard_peers"
                       ? replicas / std::max<int64_t>(1, shards)
                   : group == "replicas" ? replicas
                                         : 1;
    if (size <= 1)
      continue;
    if (sharding > 0) {
      size = shardingMembers(op, sharding, size, shards);
      if (size == 0)
        return false;
      group = "hsdp";
    }
    SmallVector<int64_t> &bytes = owned[{group.str(), shards}];
    bytes.resize(size, 0);
    int64_t owner =
        std::min_element(bytes.begin(), bytes.end()) - bytes.begin();
    bytes[owner] += tensorBytes(param.getType());
    op->setAttr("owner", b.getI64IntegerAttr(owner));
    op->setAttr("group", b.getStringAttr(group));
    if (shards)
      op->setAttr("shards", b.getI64IntegerAttr(shards));
    Handed &h = buckets[{sum, op->getBlock()}];
    h.group = b.getStringAttr(group);
    h.params.push_back(param);
    h.owners.push_back(owner);
    if (!h.last || h.last->isBeforeInBlock(op))
      h.last = op;
  }
  // Under shard_parameters the owners keep the parameters: nobody is
  // handed them (-whale-shard-parameters gathers them where read).
  if (settingsOf(fn).getShardParameters())
    return true;
  for (auto &[key, h] : buckets) {
    auto sum = cast<AllReduceOp>(key.first);
    b.setInsertionPointAfter(h.last);
    BroadcastOp::create(b, h.last->getLoc(), h.params,
                        b.getDenseI64ArrayAttr(h.owners), h.group,
                        sum.getShardsAttr());
  }
  return true;
}

/// The owner of the update that reads `sum` (through clipping, when
/// `throughClip`), or -1: `sum`'s one reader must be an owned update's
/// gradient. A clipping must count the gradient as what it is: a part of a
/// split parameter exactly when `part` (its owner is then among the shard
/// peers, else among the replicas).
int64_t ownerOf(Value sum, bool throughClip, bool part) {
  if (!sum.hasOneUse())
    return -1;
  OpOperand &use = *sum.getUses().begin();
  Operation *reader = use.getOwner();
  if (auto clip = dyn_cast<ClipGradNormOp>(reader)) {
    const unsigned i = use.getOperandNumber();
    std::optional<ArrayRef<bool>> sharded = clip.getSharded();
    if (!throughClip || (sharded ? (*sharded)[i] : false) != part)
      return -1;
    return ownerOf(clip.getResult(i), false, part);
  }
  auto owner = reader->getAttrOfType<IntegerAttr>("owner");
  if (!isa<SgdUpdateOp, AdamUpdateOp>(reader) || !owner ||
      use.getOperandNumber() != 1)
    return -1;
  return owner.getInt();
}

/// Whether a clipping can count owned gradients on their owners: it sums
/// over the stages if at all (the replicas are the owners' groups).
bool clipTakesOwners(ClipGradNormOp clip) {
  return !clip.getGroup() || *clip.getGroup() == "stages";
}

/// Turns each all-reduce whose sums only owned updates read into a reduce
/// to owners, and tells the clipping which gradients have owners.
void reduceToOwners(func::FuncOp fn, OpBuilder &b) {
  SmallVector<AllReduceOp> sums;
  fn.walk([&](AllReduceOp op) { sums.push_back(op); });
  for (AllReduceOp sum : sums) {
    // A clipping over the replicas themselves counts every gradient where
    // it lies.
    const bool part = sum.getGroup() == "shard_peers";
    bool throughClip = part || sum.getGroup() == "replicas";
    for (Operation *user : sum->getUsers())
      if (auto clip = dyn_cast<ClipGradNormOp>(user))
        throughClip = throughClip && clipTakesOwners(clip);
    SmallVector<int64_t> owners;
    for (Value v : sum.getResults())
      owners.push_back(ownerOf(v, throughClip, part));
    if (owners.empty() || llvm::is_contained(owners, -1))
      continue;
    sum.setOwnersAttr(b.getDenseI64ArrayAttr(owners));
    // Owners in sharding groups: summed there, then over the copies.
    if (settingsOf(fn).shardingGroup() > 0)
      sum.setGroup("hsdp");
  }
  fn.walk([&](ClipGradNormOp clip) {
    SmallVector<int64_t> owners;
    bool any = false;
    for (Value g : clip.getGrads()) {
      auto sum = g.getDefiningOp<AllReduceOp>();
      int64_t owner = -1;
      if (sum && sum.getOwners())
        owner = (*sum.getOwners())[cast<OpResult>(g).getResultNumber()];
      any = any || owner >= 0;
      owners.push_back(owner);
    }
    if (any)
      clip.setOwnersAttr(b.getDenseI64ArrayAttr(owners));
  });
}

struct ShardOptimizerPass
    : public whale::impl::WhaleShardOptimizerBase<ShardOptimizerPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    // The rank programs are the module's own functions (not found by a
    // walk, which would visit every op of a large pipeline's programs).
    for (func::FuncOp fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("whale.rank") && !fn.getBody().empty() &&
          settingsOf(fn).shardsOptimizerState()) {
        if (!shardUpdates(fn, b))
          return signalPassFailure();
        reduceToOwners(fn, b);
      }
  }
};

} // namespace
