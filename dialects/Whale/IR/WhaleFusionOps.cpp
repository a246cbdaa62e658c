//===- WhaleFusionOps.cpp - verifier and cost of fused regions ------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "runtime/Limits.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace whale;

bool FusedOp::isFusible(Operation *op) {
  if (op->getNumResults() != 1)
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  // The kernels are generated for f32, the type training runs in.
  if (!type || !type.getElementType().isF32())
    return false;
  if (auto g = dyn_cast<BinaryGradOp>(op))
    // Only where nothing is summed: the gradient has dout's shape.
    return g.getType() == g.getDout().getType();
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, GeluOp, TanhOp, ExpOp,
             LogOp, SqrtOp, UnaryGradOp>(op);
}

LogicalResult FusedOp::verify() {
  if (getNumResults() == 0)
    return emitOpError("has no results");
  ArrayRef<int64_t> shape = getIterationShape();
  Type element = cast<RankedTensorType>(getResult(0).getType()).getElementType();
  // The kernels are generated for f32, the type training runs in.
  if (!element.isF32())
    return emitOpError("computes f32 only, not ") << element;
  for (Type t : getResultTypes())
    if (t != getResult(0).getType())
      return emitOpError("results must all have one type, not ")
             << getResult(0).getType() << " and " << t;
  for (auto [i, t] : llvm::enumerate(getInputs().getTypes())) {
    auto rt = cast<RankedTensorType>(t);
    if (rt.getElementType() != element)
      return emitOpError("input ") << i << " has element type "
                                   << rt.getElementType() << ", not " << element;
    ArrayRef<int64_t> in = rt.getShape();
    bool broadcasts = in.size() <= shape.size();
    for (size_t d = 0; broadcasts && d < in.size(); ++d) {
      int64_t full = shape[shape.size() - in.size() + d];
      broadcasts = in[d] == full || in[d] == 1;
    }
    if (!broadcasts)
      return emitOpError("input ") << i << " of type " << t
                                   << " does not broadcast to the iteration "
                                      "shape of the results";
  }
  return success();
}

LogicalResult FusedOp::verifyRegions() {
  Block &body = getBody().front();
  if (body.getNumArguments() != getNumOperands())
    return emitOpError("body takes ")
           << body.getNumArguments() << " arguments for " << getNumOperands()
           << " inputs";
  for (auto [arg, t] : llvm::zip(body.getArguments(), getInputs().getTypes()))
    if (arg.getType() != t)
      return emitOpError("body argument ")
             << arg.getArgNumber() << " has type " << arg.getType()
             << ", not its input's " << t;
  Type iteration = getResult(0).getType();
  for (Operation &op : body.without_terminator()) {
    if (!isFusible(&op))
      return op.emitOpError("cannot be part of a fused region");
    if (op.getResult(0).getType() != iteration)
      return op.emitOpError("makes ")
             << op.getResult(0).getType()
             << " in a fused region that iterates over " << iteration;
  }
  auto yield = cast<FusedYieldOp>(body.getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("body yields ")
           << yield.getNumOperands() << " values for " << getNumResults()
           << " results of type " << iteration;
  return success();
}

int64_t FusedOp::getFlops() {
  int64_t flops = 0;
  for (Operation &op : getBody().front().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops = saturatingAdd(flops, cost.getFlops());
  return flops;
}

std::string FusedOp::getBodySignature() {
  std::string s;
  llvm::raw_string_ostream os(s);
  Block &body = getBody().front();
  llvm::DenseMap<Value, int64_t> number;
  for (BlockArgument a : body.getArguments())
    number[a] = a.getArgNumber();
  auto numbers = [&](ValueRange values) {
    llvm::interleave(
        values, os, [&](Value v) { os << number.lookup(v); }, ",");
  };
  for (Operation &op : body.without_terminator()) {
    os << op.getName().stripDialect();
    if (auto g = dyn_cast<UnaryGradOp>(op))
      os << "." << stringifyUnaryKind(g.getKind());
    if (auto g = dyn_cast<BinaryGradOp>(op))
      os << "." << stringifyBinaryKind(g.getKind()) << g.getOperand();
    os << "(";
    numbers(op.getOperands());
    os << ") ";
    number[op.getResult(0)] = static_cast<int64_t>(number.size());
  }
  os << "| ";
  numbers(body.getTerminator()->getOperands());
  return s;
}
