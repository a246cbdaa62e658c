//===- WhaleCommOps.cpp - verifiers and costs of the communication ops ----===//

#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

LogicalResult AllReduceOp::verify() {
  if (getValues().getTypes() != getResults().getTypes())
    return emitOpError("results must have the types of the operands");
  if (getGroup() != "replicas" && getGroup() != "stages")
    return emitOpError("group must be \"replicas\" or \"stages\", not \"")
           << getGroup() << "\"";
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
