//===- OptimizerUpdates.cpp - the update half of a train step -------------===//
//
// Shared by -whale-train-step (one device) and -whale-rank-programs (each
// rank updates the parameters of its stage).
//
//===----------------------------------------------------------------------===//

#include "lowering/Passes.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

LogicalResult
whale::emitOptimizerUpdates(OpBuilder &b, Location loc, Operation *diagnose,
                            const TrainBlock &train, ArrayRef<ParamOp> params,
                            ArrayRef<Value> gradients, StringAttr clipGroup) {
  const OptimizerBlock &o = train.optimizer;
  if (o.kind != "sgd" && o.kind != "adam" && o.kind != "adamw")
    return diagnose->emitOpError(
        "the train block needs an optimizer: sgd, adam or adamw");
  SmallVector<Value> grads(gradients);
  // A clipped gradient replaces the original.
  if (train.clipGradNorm > 0 && !grads.empty()) {
    SmallVector<Type> types;
    for (Value g : grads)
      types.push_back(g.getType());
    // Parts of split parameters add their squares over the shard group.
    SmallVector<bool> sharded;
    int64_t shards = 0;
    for (ParamOp p : params) {
      sharded.push_back(p.getShard().has_value());
      if (p.getShard())
        shards = (*p.getShard())[1];
    }
    auto clipOp = ClipGradNormOp::create(
        b, loc, types, grads, b.getF64FloatAttr(train.clipGradNorm), clipGroup,
        shards ? b.getI64IntegerAttr(shards) : IntegerAttr(),
        shards ? b.getDenseBoolArrayAttr(sharded) : DenseBoolArrayAttr(),
        /*owners=*/DenseI64ArrayAttr());
    grads.assign(clipOp.getResults().begin(), clipOp.getResults().end());
  }
  for (auto [param, g] : llvm::zip(params, grads)) {
    ParamOp p = param;
    if (o.kind == "sgd")
      SgdUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(o.lr),
                          b.getF64FloatAttr(o.momentum),
                          b.getF64FloatAttr(o.weightDecay), IntegerAttr(),
                          StringAttr(), IntegerAttr());
    else
      AdamUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(o.lr),
                           b.getF64FloatAttr(o.beta1),
                           b.getF64FloatAttr(o.beta2), b.getF64FloatAttr(o.eps),
                           b.getF64FloatAttr(o.weightDecay),
                           o.kind == "adamw" ? b.getUnitAttr() : UnitAttr(),
                           IntegerAttr(), StringAttr(), IntegerAttr());
  }
  return success();
}
