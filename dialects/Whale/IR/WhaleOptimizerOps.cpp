//===- WhaleOptimizerOps.cpp - verifiers of the update ops ----------------===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

/// Updates write a parameter: their first operand must be one. An owner
/// names its group, and shards exactly for shard peers.
static LogicalResult verifyUpdatesParam(Operation *op, Value param,
                                        std::optional<int64_t> owner,
                                        std::optional<StringRef> group,
                                        std::optional<int64_t> shards) {
  if (!param.getDefiningOp<ParamOp>())
    return op->emitOpError("updates a parameter: its first operand must come "
                           "from whale.param");
  if (owner.has_value() != group.has_value())
    return op->emitOpError("takes an owner and its group together");
  if (owner && *owner < 0)
    return op->emitOpError("owner must be a position in its group, not ")
           << *owner;
  return verifyGroupAndShards(op, group, shards);
}

LogicalResult SgdUpdateOp::verify() {
  if (failed(verifyUpdatesParam(*this, getParam(), getOwner(), getGroup(),
                                getShards())))
    return failure();
  double lr = getLr().convertToDouble(), m = getMomentum().convertToDouble();
  if (!(lr >= 0) || !(m >= 0 && m < 1) ||
      !(getWeightDecay().convertToDouble() >= 0))
    return emitOpError(
        "needs lr >= 0, momentum in [0, 1) and weight_decay >= 0");
  return success();
}

LogicalResult AdamUpdateOp::verify() {
  if (failed(verifyUpdatesParam(*this, getParam(), getOwner(), getGroup(),
                                getShards())))
    return failure();
  double b1 = getBeta1().convertToDouble(), b2 = getBeta2().convertToDouble();
  if (!(getLr().convertToDouble() >= 0) || !(b1 >= 0 && b1 < 1) ||
      !(b2 >= 0 && b2 < 1) || !(getEps().convertToDouble() > 0) ||
      !(getWeightDecay().convertToDouble() >= 0))
    return emitOpError("needs lr >= 0, betas in [0, 1), eps > 0 and "
                       "weight_decay >= 0");
  return success();
}

LogicalResult ClipGradNormOp::verify() {
  if (getGrads().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the gradients");
  if (!(getMaxNorm().convertToDouble() > 0))
    return emitOpError("max_norm must be positive");
  if (auto g = getGroup(); g && *g != "replicas" && *g != "stages")
    return emitOpError("group must be \"replicas\" or \"stages\", not \"")
           << *g << "\"";
  if (getShards().has_value() != getSharded().has_value() ||
      (getSharded() && getSharded()->size() != getGrads().size()) ||
      (getShards() && *getShards() < 2))
    return emitOpError("shards (>= 2) and sharded (one flag per gradient) go "
                       "together");
  if (std::optional<ArrayRef<int64_t>> owners = getOwners()) {
    if (owners->size() != getGrads().size())
      return emitOpError("has ") << owners->size() << " owners for "
                                 << getGrads().size()
                                 << " gradients: it needs one per gradient";
    if (llvm::any_of(*owners, [](int64_t o) { return o < -1; }))
      return emitOpError("owners are positions in their groups, or -1");
  }
  return success();
}
