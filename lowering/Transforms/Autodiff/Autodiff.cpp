//===- Autodiff.cpp - -whale-autodiff -------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"
#include "lowering/Recompute.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/RegionUtils.h"

namespace whale {
#define GEN_PASS_DEF_WHALEAUTODIFF
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

void whale::inlineTaskGraphs(func::FuncOp fn) {
  SmallVector<TaskGraphOp> taskgraphs;
  fn.walk([&](TaskGraphOp tg) { taskgraphs.push_back(tg); });
  for (TaskGraphOp tg : taskgraphs) {
    Block &body = tg.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    tg.replaceAllUsesWith(yield.getValues());
    yield.erase();
    tg->getBlock()->getOperations().splice(Block::iterator(tg),
                                           body.getOperations());
    tg.erase();
  }
}

LogicalResult whale::backpropagate(OpBuilder &b, ArrayRef<Operation *> forward,
                                   DenseMap<Value, Value> &gradients) {
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(gradients.lookup(r));
      any = any || resultGrads.back();
    }
    if (!any || op->getNumOperands() == 0)
      continue;
    auto diff = dyn_cast<GradientOpInterface>(op);
    if (!diff)
      return op->emitOpError("has no gradient, but the loss depends on it");
    SmallVector<Value> operandGrads = diff.buildGradients(b, resultGrads);
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!g)
        continue;
      auto [it, inserted] = gradients.try_emplace(operand, g);
      if (!inserted)
        it->second =
            AddOp::create(b, op->getLoc(), operand.getType(), it->second, g);
    }
  }
  return success();
}

LogicalResult whale::backpropagateRecomputing(OpBuilder &b,
                                              ArrayRef<Operation *> forward,
                                              ArrayRef<size_t> ends,
                                              DenseMap<Value, Value> &grads) {
  for (size_t seg = ends.size(); seg-- > 0;) {
    size_t begin = seg ? ends[seg - 1] : 0;
    ArrayRef<Operation *> ops = forward.slice(begin, ends[seg] - begin);
    IRMapping again;
    SmallVector<Operation *> copies;
    for (Operation *op : ops) {
      copies.push_back(b.clone(*op, again));
      // A copy that reads an activation from before the segment (a
      // checkpoint) is marked, so that -cse cannot take it, and all that
      // follows from it, for the forward's op: that would keep the
      // segment's activations alive, which recomputing is there to avoid.
      // What follows from parameters and constants alone is shared.
      if (llvm::any_of(op->getOperands(), [&](Value v) {
            return !again.contains(v) && !v.getDefiningOp<ParamOp>() &&
                   !v.getDefiningOp<ConstantOp>();
          }))
        copies.back()->setAttr(kRecomputedAttr, b.getUnitAttr());
      // The step's running statistics moved once, in the first forward.
      if (auto bn = dyn_cast<BatchNormOp>(copies.back()))
        bn.setMomentum(APFloat(0.0));
    }
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (auto it = grads.find(r); it != grads.end()) {
          Value g = it->second;
          grads.erase(it);
          grads[again.lookup(r)] = g;
        }
    if (failed(backpropagate(b, copies, grads)))
      return failure();
    // The copies' gradients are spent; their keys must not outlive an
    // erased copy (a new op could take its address).
    for (Operation *op : copies)
      for (Value r : op->getResults())
        grads.erase(r);
    // Copies the backward does not read (a forward-only value such as the
    // mean loss) are not run again; communication stays, so every member
    // of a group makes the same calls.
    for (Operation *op : llvm::reverse(copies))
      if (op->use_empty() && isMemoryEffectFree(op))
        op->erase();
  }
  return success();
}

namespace {

LogicalResult differentiate(func::FuncOp model, OpBuilder &b) {
  auto ret = cast<func::ReturnOp>(model.getBody().front().getTerminator());
  if (ret.getNumOperands() != 1)
    return model.emitOpError("a differentiated model returns one loss");
  auto lossType = dyn_cast<RankedTensorType>(ret.getOperand(0).getType());
  if (!lossType || lossType.getRank() != 0 ||
      !isa<FloatType>(lossType.getElementType()))
    return model.emitOpError("a differentiated model returns a scalar "
                             "floating-point loss, not ")
           << ret.getOperand(0).getType();

  // The gradient function starts as a copy of the model, flattened.
  b.setInsertionPointAfter(model);
  auto grad = cast<func::FuncOp>(b.clone(*model));
  grad.setName((model.getName() + "_grad").str());
  inlineTaskGraphs(grad);
  Block &entry = grad.getBody().front();
  auto gret = cast<func::ReturnOp>(entry.getTerminator());
  Value loss = gret.getOperand(0);

  SmallVector<Operation *> forward;
  SmallVector<ParamOp> params;
  for (Operation &op : entry.without_terminator()) {
    forward.push_back(&op);
    if (auto p = dyn_cast<ParamOp>(op); p && !p.getFrozen())
      params.push_back(p);
  }

  // Gradients accumulate per value; the loss's own gradient is 1.
  b.setInsertionPoint(gret);
  DenseMap<Value, Value> gradients;
  gradients[loss] =
      ConstantOp::create(b, grad.getLoc(), lossType, b.getF64FloatAttr(1.0));

  if (plan::recomputes(model)) {
    SmallVector<Operation *> compute;
    for (Operation *op : forward)
      if (!isa<ParamOp>(op))
        compute.push_back(op);
    if (failed(backpropagateRecomputing(
            b, compute, plan::recomputeSegments(compute), gradients)))
      return failure();
  } else if (failed(backpropagate(b, forward, gradients))) {
    return failure();
  }

  SmallVector<Value> results = {loss};
  SmallVector<Attribute> names;
  for (ParamOp p : params) {
    Value g = gradients.lookup(p.getResult());
    if (!g)
      g = ConstantOp::create(b, p.getLoc(), p.getType(),
                             b.getF64FloatAttr(0.0));
    results.push_back(g);
    names.push_back(p.getNameAttr());
  }
  func::ReturnOp::create(b, gret.getLoc(), results);
  gret.erase();
  // Gradients of inputs (and of values no parameter influences) were built
  // along the way but feed nothing: drop them, latest first.
  SmallVector<Operation *> built;
  for (Operation &op : entry.without_terminator())
    built.push_back(&op);
  for (Operation *op : llvm::reverse(built))
    if (!isa<ParamOp>(op) && isOpTriviallyDead(op))
      op->erase();
  SmallVector<Type> types;
  for (Value v : results)
    types.push_back(v.getType());
  grad.setFunctionType(b.getFunctionType(grad.getArgumentTypes(), types));
  grad->setAttr("whale.gradients", b.getArrayAttr(names));
  grad->removeAttr("whale.train");
  return success();
}

struct AutodiffPass : public whale::impl::WhaleAutodiffBase<AutodiffPass> {
  void runOnOperation() override {
    SmallVector<func::FuncOp> models;
    getOperation().walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.model") && !fn->hasAttr("whale.gradients"))
        models.push_back(fn);
    });
    OpBuilder b(&getContext());
    for (func::FuncOp fn : models)
      if (failed(differentiate(fn, b)))
        return signalPassFailure();
  }
};

} // namespace
