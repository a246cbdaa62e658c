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

LogicalResult buildTrainStep(func::FuncOp model, func::FuncOp grad,
                             OpBuilder &b) {
  const TrainBlock train = TrainBlock::of(model);
  b.setInsertionPointAfter(grad);
  auto step = cast<func::FuncOp>(b.clone(*grad));
  step.setName((model.getName() + "_train").str());
  Block &entry = step.getBody().front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  SmallVector<Value> grads(ret.getOperands().drop_front());
  Value loss = ret.getOperand(0);

  // The parameters, by name, in the order of their gradients.
  llvm::StringMap<ParamOp> byName;
  step.walk([&](ParamOp p) { byName.try_emplace(p.getName(), p); });
  SmallVector<ParamOp> params;
  for (Attribute name : step->getAttrOfType<ArrayAttr>("whale.gradients"))
    params.push_back(byName.lookup(cast<StringAttr>(name).getValue()));

  // The gradients leave the return, so an in-place clip is their only user.
  ret->eraseOperands(1, grads.size());
  b.setInsertionPoint(ret);
  if (failed(emitOptimizerUpdates(b, step.getLoc(), model, train, params, grads,
                                  StringAttr())))
    return failure();
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
