//===- WhaleGradientOps.cpp - verifiers of the backward ops ---------------===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace whale;
using namespace whale::verify;

LogicalResult MatmulGradOp::verify() {
  FailureOr<SmallVector<int64_t>> out =
      matmulResultShape(*this, getLhs().getType(), getRhs().getType(),
                        getTransposeLhs(), getTransposeRhs());
  if (failed(out) ||
      failed(expectShape(*this, *out, getDout().getType(), "dout")))
    return failure();
  if (failed(expectSameElementType(*this, getLhs().getType(),
                                   getRhs().getType(), "operand")) ||
      failed(expectSameElementType(*this, getLhs().getType(),
                                   getDout().getType(), "operand and dout")))
    return failure();
  RankedTensorType want =
      getOperand() == 0 ? getLhs().getType() : getRhs().getType();
  if (getType().getShape() != want.getShape())
    return emitOpError() << "the gradient of operand " << getOperand()
                         << " must be " << want << ", got " << getType();
  return expectMatmulResultElement(*this, want, getType());
}

ScalarFormulaOpInterface::Concept *FormulaGradOp::getFormula() {
  std::optional<RegisteredOperationName> name =
      RegisteredOperationName::lookup(getOf(), getContext());
  return name ? name->getInterface<ScalarFormulaOpInterface>() : nullptr;
}

LogicalResult FormulaGradOp::verify() {
  if (!getFormula())
    return emitOpError("takes the gradient of '")
           << getOf()
           << "', which is not an elementwise op defined by its formula";
  return success();
}

LogicalResult BinaryGradOp::verify() {
  RankedTensorType lhs = getLhs().getType(), rhs = getRhs().getType();
  if (failed(expectSameElementType(*this, lhs, rhs, "operand")) ||
      failed(expectSameElementType(*this, lhs, getDout().getType(),
                                   "operand and dout")))
    return failure();
  FailureOr<SmallVector<int64_t>> full =
      broadcastShapes(lhs.getShape(), rhs.getShape());
  if (failed(full))
    return emitOpError() << "operand shapes do not broadcast: " << lhs
                         << " and " << rhs;
  if (failed(expectShape(*this, *full, getDout().getType(), "dout")))
    return failure();
  Type want = getOperand() == 0 ? lhs : rhs;
  if (getType() != want)
    return emitOpError() << "the gradient of operand " << getOperand()
                         << " must be " << want << ", got " << getType();
  return success();
}

LogicalResult SoftmaxGradOp::verify() {
  return normalizeAxis(*this, getAxis(), getType().getRank());
}

LogicalResult CausalMaskGradOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("needs rank >= 2 (query and key positions)");
  return success();
}

void AttentionGradOp::build(OpBuilder &b, OperationState &state, Value query,
                            Value key, Value value, Value out, Value dout,
                            FloatAttr scale, UnitAttr causal,
                            UnitAttr sequenceMajor) {
  Type element = getElementTypeOrSelf(dout.getType());
  auto keyType = cast<RankedTensorType>(key.getType());
  build(b, state, dout.getType(), keyType.clone(element),
        keyType.clone(element), query, key, value, out, dout, scale, causal,
        sequenceMajor);
}

LogicalResult AttentionGradOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   dout = getDout().getType(), dk = getDkey().getType();
  if (failed(verifyAttentionOperands(*this, q, k, getCausal(),
                                     getSequenceMajor())))
    return failure();
  if (failed(expectShape(*this, q.getShape(), dout, "dout")) ||
      failed(expectShape(*this, k.getShape(), dk, "dkey")))
    return failure();
  // The gradients are dout's type; under amp's storage that may be f32
  // beside bf16 operands (a gradient GEMM's result is stored unrounded).
  Type element = dout.getElementType();
  if (failed(expectSameElementType(*this, dout, dk, "dout and dkey")))
    return failure();
  if (element != q.getElementType() && !element.isF32())
    return emitOpError() << "dout and the gradients are " << element
                         << "; expected the operands' " << q.getElementType()
                         << " or f32";
  return success();
}

LogicalResult TopKGradOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      topkResultShape(*this, getInput().getType(), getK());
  if (failed(shape))
    return failure();
  return expectShape(*this, *shape, getDy().getType(), "dy");
}

LogicalResult MoeGateGradOp::verify() {
  if (failed(verifyMoeSlots(*this, getTokens().getType(),
                            getExperts().getType(), Value(),
                            getSlotted().getType())))
    return failure();
  return expectShape(*this, getExperts().getType().getShape(), getType(),
                     "dgates");
}

LogicalResult Conv2dGradOp::verify() {
  FailureOr<SmallVector<int64_t>> shape = conv2dResultShape(
      *this, getInput().getType(), getWeight().getType(), getStride(),
      getPadding(), getDilation(), getGroups());
  if (failed(shape))
    return failure();
  return expectShape(*this, *shape, getDy().getType(), "dy");
}

LogicalResult Pool2dGradOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      pool2dResultShape(*this, getInput().getType(), getKind(), getKernel(),
                        getStride(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, *shape, getDy().getType(), "dy");
}

LogicalResult LayerNormGradOp::verify() {
  RankedTensorType x = getX().getType();
  if (x.getRank() < 1)
    return emitOpError("input needs rank >= 1");
  if (failed(expectShape(*this, {x.getShape().back()}, getGamma().getType(),
                         "gamma")))
    return failure();
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  if (Value r = getResidual(); r && r.getType() != x)
    return emitOpError("residual must have the input's type ")
           << x << ", got " << r.getType();
  return success();
}

LogicalResult RmsNormGradOp::verify() {
  RankedTensorType x = getX().getType();
  if (x.getRank() < 1)
    return emitOpError("input needs rank >= 1");
  if (failed(expectShape(*this, {x.getShape().back()}, getWeight().getType(),
                         "weight")))
    return failure();
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  if (Value r = getResidual(); r && r.getType() != x)
    return emitOpError("residual must have the input's type ")
           << x << ", got " << r.getType();
  return success();
}

LogicalResult BatchNormGradOp::verify() {
  RankedTensorType x = getX().getType();
  if (x.getRank() < 2)
    return emitOpError() << "needs [N, C, ...] (rank >= 2), got " << x;
  return expectShape(*this, {x.getShape()[1]}, getGamma().getType(), "gamma");
}

LogicalResult EmbeddingGradOp::verify() {
  RankedTensorType table = getType(), ids = getIds().getType();
  if (table.getRank() != 2)
    return emitOpError() << "the table gradient needs rank 2 [vocab, dim], got "
                         << table;
  SmallVector<int64_t> want(ids.getShape());
  want.push_back(table.getShape()[1]);
  if (failed(expectSameElementType(*this, table, getDout().getType(),
                                   "dout and result")))
    return failure();
  return expectShape(*this, want, getDout().getType(), "dout");
}

void CrossEntropyGradOp::build(OpBuilder &b, OperationState &state,
                               Value logits, Value labels, Value dloss) {
  build(b, state,
        cast<RankedTensorType>(logits.getType())
            .clone(getElementTypeOrSelf(dloss.getType())),
        logits, labels, dloss);
}

LogicalResult CrossEntropyGradOp::verify() {
  RankedTensorType logits = getLogits().getType();
  if (logits.getRank() < 1)
    return emitOpError("logits need rank >= 1 (the class dimension last)");
  ArrayRef<int64_t> batch = logits.getShape().drop_back();
  if (failed(expectShape(*this, batch, getLabels().getType(), "labels")) ||
      failed(expectShape(*this, batch, getDloss().getType(), "dloss")) ||
      failed(expectShape(*this, logits.getShape(), getType(), "result")))
    return failure();
  // bf16 logits (amp's storage) beside an f32 loss's gradient and result.
  if (failed(expectMatmulResultElement(*this, logits, getDloss().getType(),
                                       "dloss")))
    return failure();
  return expectSameElementType(*this, getDloss().getType(), getType(),
                               "dloss and result");
}

LogicalResult ReduceGradOp::verify() {
  RankedTensorType x = getX().getType(), dout = getDout().getType();
  int64_t prev = -1, kept = 1;
  for (int64_t a : getAxes()) {
    if (a < 0 || a >= x.getRank())
      return emitOpError() << "axis " << a << " is out of range for rank "
                           << x.getRank();
    if (a <= prev)
      return emitOpError("axes must be sorted and distinct");
    prev = a;
  }
  for (int64_t i = 0; i < x.getRank(); ++i)
    if (!llvm::is_contained(getAxes(), i))
      kept *= x.getShape()[i];
  // dout is the forward output, with or without the reduced axes kept as 1.
  if (dout.getNumElements() != kept)
    return emitOpError() << "dout " << dout << " does not have the " << kept
                         << " elements of the reduction";
  return expectSameElementType(*this, x, dout, "input and dout");
}

LogicalResult SliceGradOp::verify() {
  RankedTensorType dout = getDout().getType(), full = getType();
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), full.getRank());
  if (failed(axis))
    return failure();
  if (dout.getRank() != full.getRank())
    return emitOpError("dout and result differ in rank");
  for (int64_t d = 0; d < full.getRank(); ++d)
    if (d != *axis && dout.getShape()[d] != full.getShape()[d])
      return emitOpError() << "dout and result differ in dimension " << d
                           << " which is not the slice axis";
  // I64Attr reads back unsigned; a negative start is meant as written.
  const int64_t start = getStart();
  if (start < 0 || start + dout.getShape()[*axis] > full.getShape()[*axis])
    return emitOpError() << "a slice of " << dout.getShape()[*axis] << " at "
                         << start << " does not fit in "
                         << full.getShape()[*axis];
  return expectSameElementType(*this, dout, full, "dout and result");
}
