//===- TrainStep.cpp - -whale-train-step ----------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALETRAINSTEP
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

double number(DictionaryAttr d, StringRef key, double dflt) {
  if (auto f = d.getAs<FloatAttr>(key))
    return f.getValueAsDouble();
  if (auto i = d.getAs<IntegerAttr>(key))
    return static_cast<double>(i.getInt());
  return dflt;
}

LogicalResult buildTrainStep(func::FuncOp model, func::FuncOp grad,
                             OpBuilder &b) {
  auto train = model->getAttrOfType<DictionaryAttr>("whale.train");
  auto optimizer = train.getAs<DictionaryAttr>("optimizer");
  StringAttr kind =
      optimizer ? optimizer.getAs<StringAttr>("kind") : StringAttr();
  if (!kind || (kind.getValue() != "sgd" && kind.getValue() != "adam" &&
                kind.getValue() != "adamw"))
    return model.emitOpError(
        "the train block needs an optimizer: sgd, adam or adamw");

  b.setInsertionPointAfter(grad);
  auto step = cast<func::FuncOp>(b.clone(*grad));
  step.setName((model.getName() + "_train").str());
  Block &entry = step.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> grads(ret.getOperands().drop_front());
  Value loss = ret.getOperand(0);

  // The parameters, by name, in the order of their gradients.
  llvm::StringMap<ParamOp> params;
  step.walk([&](ParamOp p) { params.try_emplace(p.getName(), p); });
  auto names = step->getAttrOfType<ArrayAttr>("whale.gradients");

  b.setInsertionPoint(ret);
  Location loc = step.getLoc();
  // A clipped gradient replaces the original, which then has that one use.
  double clip = number(train, "clip_grad_norm", 0);
  if (clip > 0 && !grads.empty()) {
    SmallVector<Type> types;
    for (Value g : grads)
      types.push_back(g.getType());
    ret->eraseOperands(1, grads.size());
    auto clipOp =
        ClipGradNormOp::create(b, loc, types, grads, b.getF64FloatAttr(clip));
    grads.assign(clipOp.getResults().begin(), clipOp.getResults().end());
  } else {
    ret->eraseOperands(1, grads.size());
  }

  double lr = number(optimizer, "lr", 1e-3),
         wd = number(optimizer, "weight_decay", 0);
  for (auto [name, g] : llvm::zip(names, grads)) {
    ParamOp p = params.lookup(cast<StringAttr>(name).getValue());
    if (kind.getValue() == "sgd")
      SgdUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(lr),
                          b.getF64FloatAttr(number(optimizer, "momentum", 0)),
                          b.getF64FloatAttr(wd));
    else
      AdamUpdateOp::create(b, loc, p, g, b.getF64FloatAttr(lr),
                           b.getF64FloatAttr(number(optimizer, "beta1", 0.9)),
                           b.getF64FloatAttr(number(optimizer, "beta2", 0.999)),
                           b.getF64FloatAttr(number(optimizer, "eps", 1e-8)),
                           b.getF64FloatAttr(wd),
                           kind.getValue() == "adamw" ? b.getUnitAttr()
                                                      : UnitAttr());
  }
  step.setFunctionType(
      b.getFunctionType(step.getArgumentTypes(), {loss.getType()}));
  step->removeAttr("whale.gradients");
  return success();
}

struct TrainStepPass : public whale::impl::WhaleTrainStepBase<TrainStepPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> models;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.model") && fn->hasAttr("whale.train"))
        models.push_back(fn);
    });
    OpBuilder b(&getContext());
    for (func::FuncOp m : models) {
      auto grad =
          module.lookupSymbol<func::FuncOp>((m.getName() + "_grad").str());
      if (!grad) {
        m.emitOpError("has no gradient function; run -whale-autodiff first");
        return signalPassFailure();
      }
      if (failed(buildTrainStep(m, grad, b)))
        return signalPassFailure();
    }
  }
};

} // namespace
