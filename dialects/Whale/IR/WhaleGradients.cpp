//===- WhaleGradients.cpp - each op's reverse-mode derivative -------------===//
//
// GradientOpInterface for every differentiable op: the backward ops it
// emits given its results' gradients. Ops whose gradient is a forward op
// (reshape, transpose, concat) emit that; the rest emit WhaleGradientOps.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

namespace {

bool isFloatTensor(Value v) {
  return isa<FloatType>(cast<RankedTensorType>(v.getType()).getElementType());
}

SmallVector<Value> binaryGradients(Operation *op, OpBuilder &b, BinaryKind kind,
                                   Value grad) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  if (!grad || !isFloatTensor(lhs))
    return {Value(), Value()};
  auto make = [&](Value operand, int64_t index) -> Value {
    return BinaryGradOp::create(b, op->getLoc(), operand.getType(), kind, lhs,
                                rhs, grad, index);
  };
  return {make(lhs, 0), make(rhs, 1)};
}

} // namespace

SmallVector<Value> whale::unaryGradients(Operation *op, OpBuilder &b,
                                         UnaryKind kind, Value grad) {
  if (!grad)
    return {Value()};
  return {UnaryGradOp::create(b, op->getLoc(), op->getResult(0).getType(), kind,
                              op->getOperand(0), op->getResult(0), grad)};
}

SmallVector<Value> whale::formulaGradients(Operation *op, OpBuilder &b,
                                           Value grad) {
  if (!grad)
    return {Value()};
  return {FormulaGradOp::create(
      b, op->getLoc(), op->getResult(0).getType(),
      b.getStringAttr(op->getName().getStringRef()), op->getOperand(0),
      op->getResult(0), grad)};
}

namespace {

SmallVector<Value> reduceGradients(Operation *op, OpBuilder &b, ReduceKind kind,
                                   ArrayRef<int64_t> axes, Value grad) {
  if (!grad)
    return {Value()};
  Value x = op->getOperand(0);
  return {ReduceGradOp::create(b, op->getLoc(), x.getType(), kind, x, grad,
                               b.getDenseI64ArrayAttr(axes))};
}

} // namespace

SmallVector<Value> MatmulOp::buildGradients(OpBuilder &b,
                                            ArrayRef<Value> grads) {
  if (!grads[0])
    return {Value(), Value()};
  // A bf16 product stored in f32 (amp's storage) gets an f32 gradient; its
  // operands' gradients are bf16 products too, of the gradient rounded.
  Value dout = grads[0];
  Type operandElement = getLhs().getType().getElementType();
  if (getType().getElementType() != operandElement)
    dout = CastOp::create(
        b, getLoc(),
        RankedTensorType::get(getType().getShape(), operandElement), dout);
  auto make = [&](Value operand, int64_t index) -> Value {
    return MatmulGradOp::create(b, getLoc(), operand.getType(), getLhs(),
                                getRhs(), dout, index, getTransposeLhs(),
                                getTransposeRhs());
  };
  return {make(getLhs(), 0), make(getRhs(), 1)};
}

SmallVector<Value> AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  return binaryGradients(*this, b, BinaryKind::add, g[0]);
}
SmallVector<Value> SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  return binaryGradients(*this, b, BinaryKind::sub, g[0]);
}
SmallVector<Value> MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  return binaryGradients(*this, b, BinaryKind::mul, g[0]);
}
SmallVector<Value> DivOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  return binaryGradients(*this, b, BinaryKind::div, g[0]);
}

// The unary functions' gradients come with their ODS class
// (Whale_UnaryOp): a unary_grad of their kind.

// The gradient of a conversion is the conversion back: a bf16 activation's
// gradient reaches an f32 parameter as f32.
SmallVector<Value> CastOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {CastOp::create(b, getLoc(), getInput().getType(), g[0])};
}

SmallVector<Value> CausalMaskOp::buildGradients(OpBuilder &b,
                                                ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {CausalMaskGradOp::create(b, getLoc(), getType(), g[0])};
}

SmallVector<Value> SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), g[0],
                                getAxis())};
}

SmallVector<Value> AttentionOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value(), Value()};
  auto grad = AttentionGradOp::create(
      b, getLoc(), getQuery(), getKey(), getValue(), getResult(), g[0],
      getScaleAttr(), getCausalAttr(), getSequenceMajorAttr());
  return {grad.getDquery(), grad.getDkey(), grad.getDvalue()};
}

// Positions have no gradient; values take theirs back to where they were.
SmallVector<Value> TopKOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0] || getIndices())
    return {Value()};
  return {TopKGradOp::create(b, getLoc(), getInput(), g[0], getKAttr())};
}

// Routing is linear in the tokens and in the gates: each direction's
// gradient is the other direction with the same gates, and a gate's is the
// dot product of its token's row with its slot's row. Expert choices are
// positions: no gradient.
SmallVector<Value> MoeDispatchOp::buildGradients(OpBuilder &b,
                                                 ArrayRef<Value> g) {
  SmallVector<Value> grads(getNumOperands());
  if (!g[0])
    return grads;
  grads[0] = MoeCombineOp::create(b, getLoc(), getTokens().getType(), g[0],
                                  getExperts(), getGates());
  if (getGates())
    grads[2] = MoeGateGradOp::create(b, getLoc(), getGates().getType(),
                                     getTokens(), g[0], getExperts());
  return grads;
}

SmallVector<Value> MoeCombineOp::buildGradients(OpBuilder &b,
                                                ArrayRef<Value> g) {
  SmallVector<Value> grads(getNumOperands());
  if (!g[0])
    return grads;
  RankedTensorType slotted = getSlotted().getType();
  int64_t groups = getExperts().getType().getShape()[0];
  grads[0] = MoeDispatchOp::create(
      b, getLoc(), slotted, g[0], getExperts(), getGates(),
      slotted.getShape()[0], moeCapacity(slotted, groups));
  if (getGates())
    grads[2] = MoeGateGradOp::create(b, getLoc(), getGates().getType(), g[0],
                                     getSlotted(), getExperts());
  return grads;
}

// Dropout is linear with the same mask forward and back: its gradient is
// itself applied to the output's gradient.
SmallVector<Value> DropoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {DropoutOp::create(b, getLoc(), getType(), g[0], getRateAttr(),
                            getKeyAttr(), getRowOffsetAttr())};
}

SmallVector<Value> OneHotOp::buildGradients(OpBuilder &, ArrayRef<Value>) {
  return {Value()};
}

SmallVector<Value> Conv2dOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value()};
  auto grad = Conv2dGradOp::create(b, getLoc(), getInput(), getWeight(), g[0],
                                   getStrideAttr(), getPaddingAttr(),
                                   getDilationAttr(), getGroupsAttr());
  return {grad.getDinput(), grad.getDweight()};
}

SmallVector<Value> Pool2dOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  auto grad = Pool2dGradOp::create(b, getLoc(), getInput(), g[0],
                                   getKindAttr(), getKernelAttr(),
                                   getStrideAttr(), getPaddingAttr());
  return {grad.getDinput()};
}

SmallVector<Value> LayerNormOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value(), Value()};
  auto grad = LayerNormGradOp::create(b, getLoc(), getInput(), getGamma(), g[0],
                                      /*residual=*/Value(), getEpsAttr());
  return {grad.getDx(), grad.getDgamma(), grad.getDbeta()};
}

// A rotation's transpose is its inverse: the gradient turns back.
SmallVector<Value> RopeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {RopeOp::create(b, getLoc(), g[0], getPosition(), getThetaAttr(),
                         getScalingAttr(),
                         getInverse() ? UnitAttr() : b.getUnitAttr())};
}

SmallVector<Value> RmsNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value()};
  auto grad = RmsNormGradOp::create(b, getLoc(), getInput(), getWeight(), g[0],
                                    /*residual=*/Value(), getEpsAttr());
  return {grad.getDx(), grad.getDweight()};
}

SmallVector<Value> BatchNormOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  // The statistics' own gradients are not taken: a loss reading `mean` or
  // `invstd` directly is not differentiated through them.
  if (!g[0])
    return {Value(), Value(), Value(), Value(), Value()};
  auto grad = BatchNormGradOp::create(b, getLoc(), getInput(), getGamma(),
                                      getMean(), getInvstd(), g[0]);
  return {grad.getDx(), grad.getDgamma(), grad.getDbeta(), Value(), Value()};
}

SmallVector<Value> EmbeddingOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value()};
  return {EmbeddingGradOp::create(b, getLoc(), getTable().getType(), getIds(),
                                  g[0]),
          Value()};
}

SmallVector<Value> CrossEntropyOp::buildGradients(OpBuilder &b,
                                                  ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value()};
  return {
      CrossEntropyGradOp::create(b, getLoc(), getLogits(), getLabels(), g[0]),
      Value()};
}

SmallVector<Value> ReduceSumOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  return reduceGradients(*this, b, ReduceKind::sum, getAxes(), g[0]);
}
SmallVector<Value> ReduceMeanOp::buildGradients(OpBuilder &b,
                                                ArrayRef<Value> g) {
  return reduceGradients(*this, b, ReduceKind::mean, getAxes(), g[0]);
}
SmallVector<Value> ReduceMaxOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  return reduceGradients(*this, b, ReduceKind::max, getAxes(), g[0]);
}

SmallVector<Value> ReshapeOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0] || !isFloatTensor(getInput()))
    return {Value()};
  return {ReshapeOp::create(b, getLoc(), getInput().getType(), g[0])};
}

SmallVector<Value> TransposeOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  if (!g[0] || !isFloatTensor(getInput()))
    return {Value()};
  ArrayRef<int64_t> perm = getPermutation();
  SmallVector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[perm[i]] = static_cast<int64_t>(i);
  return {TransposeOp::create(b, getLoc(), getInput().getType(), g[0],
                              b.getDenseI64ArrayAttr(inverse))};
}

SmallVector<Value> SliceOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0] || !isFloatTensor(getInput()))
    return {Value()};
  const int64_t rank = getType().getRank();
  const int64_t axis = resolveAxis(getAxis(), rank);
  return {SliceGradOp::create(b, getLoc(), getInput().getType(), g[0], axis,
                              getStart())};
}

SmallVector<Value> ConcatOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  SmallVector<Value> out;
  if (!g[0] || !isFloatTensor(getInputs().front())) {
    out.resize(getInputs().size());
    return out;
  }
  const int64_t rank = getType().getRank();
  const int64_t axis = resolveAxis(getAxis(), rank);
  int64_t offset = 0;
  for (Value in : getInputs()) {
    int64_t len = cast<RankedTensorType>(in.getType()).getShape()[axis];
    out.push_back(SliceOp::create(b, getLoc(), in.getType(), g[0], axis, offset,
                                  offset + len));
    offset += len;
  }
  return out;
}
