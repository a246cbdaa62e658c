//===- WhaleCommOps.cpp - verifiers and costs of the communication ops ----===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

LogicalResult whale::verifyGroupAndShards(Operation *op,
                                          std::optional<StringRef> group,
                                          std::optional<int64_t> shards) {
  if (!group)
    return shards ? op->emitOpError("takes shards only with a group")
                  : success();
  if (*group != "replicas" && *group != "stages" && *group != "shard_peers" &&
      *group != "hsdp")
    return op->emitOpError("group must be \"replicas\", \"stages\", "
                           "\"shard_peers\" or \"hsdp\", not \"")
           << *group << "\"";
  // A sharding group (hsdp) cuts the replicas, or with shards the peers.
  if (*group != "hsdp" && (*group == "shard_peers") != shards.has_value())
    return op->emitOpError("takes shards exactly when its group is "
                           "\"shard_peers\" (or, for a sharding group of "
                           "them, \"hsdp\")");
  if (shards && *shards < 1)
    return op->emitOpError("shards must be positive, not ") << *shards;
  return success();
}

/// What all_reduce and all_reduce_start check alike: a known group, shards
/// exactly for shard peers, and no other reader of the tensors summed in
/// place.
static LogicalResult verifyAllReduce(Operation *op, StringRef group,
                                     std::optional<int64_t> shards,
                                     std::optional<ArrayRef<int64_t>> owners,
                                     ValueRange values) {
  if (failed(verifyGroupAndShards(op, group, shards)))
    return failure();
  if (group == "hsdp" && !owners)
    return op->emitOpError("sums over a sharding group (\"hsdp\") only to "
                           "owners: a plain sum is over the replicas or the "
                           "shard peers");
  if (owners) {
    if (owners->size() != values.size())
      return op->emitOpError("has ")
             << owners->size() << " owners for " << values.size()
             << " operands: it needs one per operand";
    if (llvm::any_of(*owners, [](int64_t o) { return o < 0; }))
      return op->emitOpError("owners are positions in the group, so none "
                             "may be negative");
  }
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getValues().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the operands");
  return verifyAllReduce(*this, getGroup(), getShards(), getOwners(),
                         getValues());
}

LogicalResult AllReduceStartOp::verify() {
  // One wait ends it: a second would wait for nothing, none leaks it.
  if (!getPending().hasOneUse() ||
      !isa<AllReduceWaitOp>(*getPending().getUsers().begin()))
    return emitOpError("must be ended by exactly one whale.all_reduce_wait");
  return verifyAllReduce(*this, getGroup(), getShards(), getOwners(),
                         getValues());
}

LogicalResult AllReduceWaitOp::verify() {
  AllReduceStartOp start = getStart();
  if (!start)
    return emitOpError("waits for a value no whale.all_reduce_start made");
  if (start->getBlock() != (*this)->getBlock() ||
      !start->isBeforeInBlock(*this))
    return emitOpError("must follow its whale.all_reduce_start in its block");
  if (start.getValues().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the tensors its "
                       "whale.all_reduce_start sums");
  return success();
}

// A send writes nothing on this rank and keeps nothing alive; a recv reads
// nothing here; an all-reduce's results are its operands' buffers.
int64_t SendOp::getBytesWritten() { return 0; }
int64_t SendOp::getOutputMemory() { return 0; }
int64_t RecvOp::getBytesRead() { return 0; }
int64_t AllReduceOp::getOutputMemory() { return 0; }

LogicalResult BroadcastOp::verify() {
  if (getParams().empty())
    return emitOpError("hands on at least one parameter");
  for (Value p : getParams()) {
    auto param = p.getDefiningOp<ParamOp>();
    if (!param)
      return emitOpError("hands on parameters: its operands must come from "
                         "whale.param");
    // A parameter its owner alone keeps (ZeRO stage 3) is gathered where
    // read, and the other members have nowhere to receive it.
    if (param.getOwner())
      return emitOpError("hands on '")
             << param.getName()
             << "', which its owner alone keeps: it is gathered where read";
  }
  if (getOwners().size() != getParams().size())
    return emitOpError("has ") << getOwners().size() << " owners for "
                               << getParams().size()
                               << " parameters: it needs one per parameter";
  for (int64_t owner : getOwners())
    if (owner < 0)
      return emitOpError("owners must be positions in its group, not ")
             << owner;
  return verifyGroupAndShards(*this, getGroup(), getShards());
}
// Each gathered tensor is its parameter's type.
LogicalResult GatherParamsOp::inferReturnTypes(
    MLIRContext *, std::optional<Location>, ValueRange operands, DictionaryAttr,
    OpaqueProperties, RegionRange, SmallVectorImpl<Type> &inferred) {
  for (Value v : operands)
    inferred.push_back(v.getType());
  return success();
}

/// What gather_params and gather_params_start check alike: parameters,
/// one owner each in the group, the owners their whale.params name.
int64_t whale::gatheredBucketBytes(ValueRange params,
                                   std::optional<ArrayRef<bool>> bf16) {
  int64_t bytes = 0;
  for (auto [i, p] : llvm::enumerate(params)) {
    const int64_t n = tensorElements(p.getType());
    bytes += bf16 && i < bf16->size() && (*bf16)[i] ? 4 * ((n + 1) / 2) : 4 * n;
  }
  return bytes;
}

static LogicalResult verifyGather(Operation *op, ValueRange params,
                                  ArrayRef<int64_t> owners, StringRef group,
                                  std::optional<int64_t> shards,
                                  std::optional<ArrayRef<bool>> bf16) {
  if (params.empty())
    return op->emitOpError("gathers at least one parameter");
  if (bf16 && bf16->size() != params.size())
    return op->emitOpError("has ")
           << bf16->size() << " bf16 flags for " << params.size()
           << " parameters: it needs one per parameter";
  if (owners.size() != params.size())
    return op->emitOpError("has ")
           << owners.size() << " owners for " << params.size()
           << " parameters: it needs one per parameter";
  for (auto [p, owner] : llvm::zip(params, owners)) {
    auto param = p.getDefiningOp<ParamOp>();
    if (!param)
      return op->emitOpError("gathers parameters: its operands must come "
                             "from whale.param");
    if (owner < 0)
      return op->emitOpError("owners must be positions in its group, not ")
             << owner;
    if (param.getOwner() &&
        (static_cast<int64_t>(*param.getOwner()) != owner ||
         param.getGroup() != group ||
         param.getShards() != shards))
      return op->emitOpError("gathers '")
             << param.getName() << "' from " << owner << " over \"" << group
             << "\", but its whale.param places it on " << *param.getOwner()
             << " over \"" << param.getGroup().value_or("") << "\"";
  }
  return verifyGroupAndShards(op, group, shards);
}

LogicalResult GatherParamsOp::verify() {
  return verifyGather(*this, getParams(), getOwners(), getGroup(), getShards(),
                      getBf16());
}

LogicalResult AddIntoOwnersOp::verify() {
  if (getGrads().empty())
    return emitOpError("adds at least one gradient");
  if (getGrads().getTypes() != getSums().getTypes() ||
      getSums().getTypes() != getResults().getTypes())
    return emitOpError("needs one sum of each gradient's type, and results "
                       "of the sums' types");
  if (getGroup() == "stages")
    return emitOpError("adds over the replicas or the shard peers, not the "
                       "stages");
  // The owners of the reduce to owners whose sums it adds.
  return verifyAllReduce(*this, getGroup(), getShards(), getOwners(),
                         getGrads());
}
// The sums are written in place: no new tensor.
int64_t AddIntoOwnersOp::getOutputMemory() { return 0; }

LogicalResult GatherParamsStartOp::verify() {
  if (!getPending().hasOneUse() ||
      !isa<GatherParamsWaitOp>(*getPending().getUsers().begin()))
    return emitOpError("must be ended by exactly one whale.gather_params_wait");
  return verifyGather(*this, getParams(), getOwners(), getGroup(), getShards(),
                      getBf16());
}

LogicalResult GatherParamsWaitOp::verify() {
  GatherParamsStartOp start = getStart();
  if (!start)
    return emitOpError("waits for a value no whale.gather_params_start made");
  if (start->getBlock() != (*this)->getBlock() ||
      !start->isBeforeInBlock(*this))
    return emitOpError("must follow its whale.gather_params_start in its "
                       "block");
  if (start.getParams().getTypes() != getGathered().getTypes())
    return emitOpError("results must have the types of the parameters its "
                       "whale.gather_params_start gathers");
  return success();
}

// The start packs the owner's part into the bucket the group gathers (no
// tensor of its own); the wait makes the gathered tensors.
int64_t GatherParamsStartOp::getBytesWritten() { return 0; }
int64_t GatherParamsStartOp::getOutputMemory() { return 0; }
int64_t GatherParamsWaitOp::getBytesRead() { return resultBytes(*this); }

// The parameter is written in place: no new tensor.
int64_t BroadcastOp::getOutputMemory() { return 0; }
// The start packs the tensors into the bucket the group sums; the wait
// unpacks the sums into the same tensors, so neither makes a tensor.
int64_t AllReduceStartOp::getBytesWritten() { return operandBytes(*this); }
int64_t AllReduceStartOp::getOutputMemory() { return 0; }
int64_t AllReduceWaitOp::getBytesRead() { return resultBytes(*this); }
int64_t AllReduceWaitOp::getOutputMemory() { return 0; }
