//===- StepCost.cpp - what a training step computes for each forward op ---===//

#include "perfmodel/StepCost.h"

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace whale::perf {
namespace {

using mlir::Operation;
using mlir::Value;

bool isFloatTensor(Value v) {
  auto t = llvm::dyn_cast<mlir::RankedTensorType>(v.getType());
  return t && llvm::isa<mlir::FloatType>(t.getElementType());
}

/// Which values of a model need a gradient (a trainable parameter's, or
/// computed from one) and which reach its loss: autodiff runs an op's
/// backward for the results that reach the loss and keeps the gradients of
/// the operands that need one.
struct GradientFlow {
  llvm::DenseSet<Value> needs, reaches;

  explicit GradientFlow(Operation *scope) {
    llvm::SmallVector<Operation *> order;
    scope->walk<mlir::WalkOrder::PostOrder>(
        [&](Operation *op) { order.push_back(op); });
    for (Operation *op : order) {
      if (auto p = llvm::dyn_cast<ParamOp>(op)) {
        if (!p.getFrozen())
          needs.insert(p.getResult());
      } else if (auto tg = llvm::dyn_cast<TaskGraphOp>(op)) {
        Operation *yield = tg.getBody().front().getTerminator();
        for (auto [r, v] : llvm::zip(tg.getResults(), yield->getOperands()))
          if (needs.contains(v))
            needs.insert(r);
      } else if (llvm::any_of(op->getOperands(),
                              [&](Value v) { return needs.contains(v); })) {
        for (Value r : op->getResults())
          if (isFloatTensor(r))
            needs.insert(r);
      }
    }
    for (Operation *op : llvm::reverse(order)) {
      if (llvm::isa<mlir::func::ReturnOp>(op)) {
        reaches.insert(op->operand_begin(), op->operand_end());
      } else if (auto tg = llvm::dyn_cast<TaskGraphOp>(op)) {
        Operation *yield = tg.getBody().front().getTerminator();
        for (auto [r, v] : llvm::zip(tg.getResults(), yield->getOperands()))
          if (reaches.contains(r))
            reaches.insert(v);
      } else if (!llvm::isa<YieldOp>(op) &&
                 llvm::any_of(op->getResults(),
                              [&](Value r) { return reaches.contains(r); })) {
        reaches.insert(op->operand_begin(), op->operand_end());
      }
    }
  }
};

/// Records the ops a builder inserts into one block (not those inside
/// their regions, which go with them).
struct Inserted : mlir::OpBuilder::Listener {
  mlir::Block *block = nullptr;
  llvm::SmallVector<Operation *> ops;
  void notifyOperationInserted(Operation *op,
                               mlir::OpBuilder::InsertPoint) override {
    if (op->getBlock() == block)
      ops.push_back(op);
  }
};

/// The backward of `op` that autodiff keeps (what the gradients of the
/// operands that need one read), priced: built after `op`, then erased.
void backwardOf(Operation *op, GradientOpInterface diff,
                const GradientFlow &flow, bool bf16,
                llvm::SmallVectorImpl<OpCost> &out) {
  mlir::OpBuilder b(op->getContext());
  Inserted inserted;
  inserted.block = op->getBlock();
  b.setListener(&inserted);
  b.setInsertionPointAfter(op);
  // Stand-ins for the gradients of the results that reach the loss.
  llvm::SmallVector<Value> resultGrads;
  for (Value r : op->getResults())
    resultGrads.push_back(
        flow.reaches.contains(r) && isFloatTensor(r)
            ? mlir::UnrealizedConversionCastOp::create(
                  b, op->getLoc(), r.getType(), mlir::ValueRange{})
                  .getResult(0)
            : Value());
  const size_t standIns = inserted.ops.size();
  llvm::SmallVector<Value> grads = diff.buildGradients(b, resultGrads);
  llvm::DenseSet<Value> live;
  for (auto [operand, g] : llvm::zip(op->getOperands(), grads))
    if (g && flow.needs.contains(operand))
      live.insert(g);
  // Latest first: an op is kept when something kept reads it.
  llvm::SmallVector<OpCost, 4> kept;
  for (size_t i = inserted.ops.size(); i-- > standIns;) {
    Operation *built = inserted.ops[i];
    if (llvm::none_of(built->getResults(),
                      [&](Value r) { return live.contains(r); }))
      continue;
    live.insert(built->operand_begin(), built->operand_end());
    if (llvm::isa<CostOpInterface>(built))
      kept.push_back(
          opCostOf(built, bf16, [&](Value v) { return live.contains(v); }));
  }
  out.append(kept.rbegin(), kept.rend());
  for (Operation *built : llvm::reverse(inserted.ops))
    built->erase();
}

/// The add that sums a second (third, ...) gradient into a value's.
OpCost accumulation(Value v) {
  OpCost add;
  auto t = llvm::cast<mlir::RankedTensorType>(v.getType());
  add.flops = double(t.getNumElements());
  add.bytes = 3.0 * double(tensorBytes(t));
  return add;
}

} // namespace

llvm::SmallVector<StepOpCosts, 0> stepCostsOf(llvm::ArrayRef<Operation *> ops,
                                              Operation *scope, bool bf16) {
  const GradientFlow flow(scope);
  llvm::DenseMap<Value, int> gradients; // per value, gradients made so far
  llvm::SmallVector<StepOpCosts, 0> out(ops.size());
  for (auto [op, costs] : llvm::zip(ops, out)) {
    if (llvm::isa<ParamOp, TaskGraphOp, YieldOp>(op))
      continue;
    if (llvm::isa<CostOpInterface>(op))
      costs.forward.push_back(opCostOf(op, bf16));
    auto diff = llvm::dyn_cast<GradientOpInterface>(op);
    if (!diff || op->getNumOperands() == 0 ||
        llvm::none_of(op->getResults(),
                      [&](Value r) { return flow.reaches.contains(r); }) ||
        llvm::none_of(op->getOperands(),
                      [&](Value v) { return flow.needs.contains(v); }))
      continue;
    backwardOf(op, diff, flow, bf16, costs.backward);
    for (Value v : op->getOperands())
      if (flow.needs.contains(v) && isFloatTensor(v) && ++gradients[v] > 1)
        costs.backward.push_back(accumulation(v));
  }
  return out;
}

} // namespace whale::perf
