//===- WhaleCommOps.cpp - verifiers and costs of the communication ops ----===//

#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

LogicalResult AllReduceOp::verify() {
  if (getValues().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the operands");
  if (getGroup() != "replicas" && getGroup() != "stages" &&
      getGroup() != "shard_peers")
    return emitOpError("group must be \"replicas\", \"stages\" or "
                       "\"shard_peers\", not \"")
           << getGroup() << "\"";
  if ((getGroup() == "shard_peers") != getShards().has_value())
    return emitOpError("takes shards exactly when its group is "
                       "\"shard_peers\"");
  // It sums its operands in place, so nothing else may read them.
  for (Value v : getValues())
    if (!v.hasOneUse())
      return emitOpError(
          "sums its operands in place, so it must be their only user");
  return success();
}

// A send writes nothing on this rank and keeps nothing alive; a recv reads
// nothing here; an all-reduce's results are its operands' buffers.
int64_t SendOp::getBytesWritten() { return 0; }
int64_t SendOp::getOutputMemory() { return 0; }
int64_t RecvOp::getBytesRead() { return 0; }
int64_t AllReduceOp::getOutputMemory() { return 0; }
