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

using whale::number;

LogicalResult
whale::emitOptimizerUpdates(OpBuilder &b, Location loc, Operation *diagnose,
                            DictionaryAttr train, ArrayRef<ParamOp> params,
                            ArrayRef<Value> gradients, StringAttr clipGroup) {
  auto optimizer =
      train ? train.getAs<DictionaryAttr>("optimizer") : DictionaryAttr();
  StringAttr kind =
      optimizer ? optimizer.getAs<StringAttr>("kind") : StringAttr();
  if (!kind || (kind.getValue() != "sgd" && kind.getValue() != "adam" &&
                kind.getValue() != "adamw"))
    return diagnose->emitOpError(
        "the train block needs an optimizer: sgd, adam or adamw");
  SmallVector<Value> grads(gradients);
  // A clipped gradient replaces the original, which then has that one use.
  double clip = number(train, "clip_grad_norm", 0);
  if (clip > 0 && !grads.empty()) {
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
        b, loc, types, grads, b.getF64FloatAttr(clip), clipGroup,
        shards ? b.getI64IntegerAttr(shards) : IntegerAttr(),
        shards ? b.getDenseBoolArrayAttr(sharded) : DenseBoolArrayAttr(),
        /*owners=*/DenseI64ArrayAttr());
    grads.assign(clipOp.getResults().begin(), clipOp.getResults().end());
  }
  double lr = number(optimizer, "lr", 1e-3),
         wd = number(optimizer, "weight_decay", 0);
  for (auto [param, g] : llvm::zip(params, grads)) {
    ParamOp p = param;
    if (kind.getValue() == "sgd")
      SgdUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(lr),
                          b.getF64FloatAttr(number(optimizer, "momentum", 0)),
                          b.getF64FloatAttr(wd), IntegerAttr(), StringAttr(),
                          IntegerAttr());
    else
      AdamUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(lr),
                           b.getF64FloatAttr(number(optimizer, "beta1", 0.9)),
                           b.getF64FloatAttr(number(optimizer, "beta2", 0.999)),
                           b.getF64FloatAttr(number(optimizer, "eps", 1e-8)),
                           b.getF64FloatAttr(wd),
                           kind.getValue() == "adamw" ? b.getUnitAttr()
                                                      : UnitAttr(),
                           IntegerAttr(), StringAttr(), IntegerAttr());
  }
  return success();
}
