//===- WhaleCost.cpp - the cost model of each whale op --------------------===//
//
// FLOP conventions (docs/cost-model.md): a multiply-add is 2 FLOPs; simple
// arithmetic 1 per element; transcendental functions 4 per element; gelu
// (tanh form) 8; softmax 5 (max, subtract, exp, sum, divide); layernorm 8
// (mean, variance, normalize, scale, shift); rms_norm 4 (square, sum,
// normalize, scale); cross entropy 5 per logit.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/ProductCosts.h"
#include "dialects/Whale/IR/WhaleOps.h"
#include "support/Limits.h"

using namespace mlir;
using namespace whale;

static int64_t elementsOf(Value v) { return tensorElements(v.getType()); }

int64_t ParamOp::getBytesRead() { return 0; }

int64_t whale::productFlops(RankedTensorType lhs, RankedTensorType result,
                            bool transposeLhs) {
  ArrayRef<int64_t> ls = lhs.getShape();
  int64_t k = transposeLhs ? ls[ls.size() - 2] : ls.back();
  return saturatingMul(2 * tensorElements(result), k);
}

int64_t MatmulOp::getFlops() {
  return productFlops(getLhs().getType(), getType(), getTransposeLhs());
}

/// The product, the bias (1 an element) and the GELU (8 an element).
int64_t LinearOp::getFlops() {
  const int64_t elements = elementsOf(getResult());
  return saturatingAdd(
      productFlops(getInput().getType(), getResult().getType(), false),
      elements * (getGelu() ? 9 : 1));
}

/// The weight's product over every row, and the bias's sum (1 an element
/// of dout).
int64_t LinearWeightGradOp::getFlops() {
  return saturatingAdd(
      productFlops(getInput().getType(), getDout().getType(), false),
      elementsOf(getDout()));
}

/// The input's product, then the GELU's gradient (12 an element, as
/// UnaryGradOp counts it).
int64_t GeluMatmulGradOp::getFlops() {
  return saturatingAdd(
      productFlops(getDout().getType(), getResult().getType(), false),
      12 * elementsOf(getResult()));
}

/// The rounding and the sum: 1 each an element.
int64_t RoundAndSumOp::getFlops() { return 2 * elementsOf(getInput()); }
/// Cross entropy's gradient (7 a logit, as CrossEntropyGradOp counts it),
/// then the rounding and the sum.
int64_t RoundedCrossEntropyGradOp::getFlops() {
  return 9 * elementsOf(getLogits());
}

int64_t AddOp::getFlops() { return elementsOf(getResult()); }
int64_t SubOp::getFlops() { return elementsOf(getResult()); }
int64_t MulOp::getFlops() { return elementsOf(getResult()); }
int64_t DivOp::getFlops() { return elementsOf(getResult()); }

// The unary functions' counts are their ODS rows' (Whale_UnaryOp).

int64_t CausalMaskOp::getFlops() { return elementsOf(getResult()); }
// A conversion: one operation per element, for the vector units.
int64_t CastOp::getFlops() { return elementsOf(getResult()); }
int64_t SoftmaxOp::getFlops() { return 5 * elementsOf(getResult()); }
int64_t LayerNormOp::getFlops() { return 8 * elementsOf(getResult()); }
// Two products and a sum per element (the angles' table is T * E / 2).
int64_t RopeOp::getFlops() { return 3 * elementsOf(getResult()); }
// Each query row against every row the cache can hold (an upper bound: the
// rows after the position are skipped), two multiply-adds an entry of the
// scores and the sum of values, plus the softmax's exponent.
int64_t KvAttentionOp::getFlops() {
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  const int64_t rows = getKeyCache().getType().getShape()[2];
  return saturatingMul(saturatingMul(q[0] * q[1] * q[2], rows), 4 * q[3] + 5);
}
// The square and its sum (2), then the scaling by rstd and by the weight (2).
int64_t RmsNormOp::getFlops() { return 4 * elementsOf(getResult()); }
// Batch normalization: a channel sum, the centred squares (3 per element),
// then normalize, scale and shift (4); its gradient two sums (4) and dx (5).
int64_t BatchNormOp::getFlops() { return 8 * elementsOf(getResult()); }
int64_t BatchNormGradOp::getFlops() {
  return saturatingMul(9, elementsOf(getDx()));
}

// k scans of each row, a comparison per entry; the gradient scans again
// and writes every input element.
int64_t TopKOp::getFlops() {
  return saturatingMul(getK(), getInput().getType().getNumElements());
}
int64_t TopKGradOp::getFlops() {
  return saturatingMul(getK() + 1, getInput().getType().getNumElements());
}

// Routing copies (or scales) one row of D per kept choice, and zeroes the
// slots; a gate's gradient is a dot product of two rows.
int64_t MoeDispatchOp::getFlops() {
  return saturatingMul(getGates() ? 2 : 1, elementsOf(getResult()));
}
int64_t MoeCombineOp::getFlops() {
  return saturatingMul(2 * getExperts().getType().getShape().back(),
                       elementsOf(getResult()));
}
int64_t MoeGateGradOp::getFlops() {
  return saturatingMul(2 * getExperts().getType().getShape().back(),
                       elementsOf(getTokens()));
}
int64_t OneHotOp::getFlops() { return elementsOf(getResult()); }
// A hash and a scale per element.
int64_t DropoutOp::getFlops() {
  return saturatingMul(2, elementsOf(getResult()));
}

/// A convolution's multiply-adds: each output element sums (C / groups) x
/// KH x KW products, 2 FLOPs each (as a GEMM counts them).
static int64_t convFlops(RankedTensorType weight, RankedTensorType out) {
  ArrayRef<int64_t> w = weight.getShape();
  return saturatingMul(2 * w[1] * w[2] * w[3], out.getNumElements());
}
int64_t Conv2dOp::getFlops() {
  return convFlops(getWeight().getType(), getType());
}
// The input's gradient and the weight's: two products of the forward's size.
int64_t Conv2dGradOp::getFlops() {
  return saturatingMul(2, convFlops(getWeight().getType(), getDy().getType()));
}
// A comparison or an add per tap of each window.
int64_t Pool2dOp::getFlops() {
  ArrayRef<int64_t> k = getKernel();
  return saturatingMul(k[0] * k[1], elementsOf(getResult()));
}
// Each input element visits the windows that cover it (max searches each
// again for its maximum).
int64_t Pool2dGradOp::getFlops() {
  ArrayRef<int64_t> k = getKernel();
  int64_t perWindow = getKind() == "max" ? k[0] * k[1] : 1;
  return saturatingMul(k[0] * k[1] * perWindow,
                       getInput().getType().getNumElements());
}

/// The (query, key) pairs an attention computes: every one, or for a causal
/// one each query's keys up to itself, T (T + 1) / 2 a head.
static int64_t attentionPairs(RankedTensorType q, RankedTensorType k,
                              bool causal, bool sequenceMajor) {
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  const size_t seq = sequenceMajor ? 3 : 2;
  int64_t t = qs[qs.size() - seq], tk = ks[ks.size() - seq], e = qs.back();
  int64_t heads = t > 0 && e > 0 ? q.getNumElements() / (t * e) : 0;
  int64_t perHead = causal ? t * (t + 1) / 2 : t * tk;
  return saturatingMul(heads, perHead);
}
int64_t whale::attentionFlops(RankedTensorType query, RankedTensorType key,
                              bool causal, bool sequenceMajor) {
  return saturatingMul(attentionPairs(query, key, causal, sequenceMajor),
                       4 * query.getShape().back() + 5);
}
int64_t whale::attentionGradFlops(RankedTensorType query, RankedTensorType key,
                                  bool causal, bool sequenceMajor) {
  return saturatingMul(attentionPairs(query, key, causal, sequenceMajor),
                       10 * query.getShape().back() + 8);
}

int64_t AttentionOp::getFlops() {
  return attentionFlops(getQuery().getType(), getKey().getType(), getCausal(),
                        getSequenceMajor());
}
// Only the output: the scores are never held.
int64_t AttentionOp::getOutputMemory() { return tensorBytes(getType()); }
int64_t CrossEntropyOp::getFlops() { return 5 * elementsOf(getLogits()); }

// Only the gathered rows and the ids are read, not the whole table.
int64_t EmbeddingOp::getBytesRead() {
  return tensorBytes(getType()) + tensorBytes(getIds().getType());
}

int64_t ReduceSumOp::getFlops() { return elementsOf(getInput()); }
int64_t ReduceMeanOp::getFlops() { return elementsOf(getInput()) + 1; }
int64_t ReduceMaxOp::getFlops() { return elementsOf(getInput()); }

// A reshape is a view of its input: no traffic, no memory of its own.
int64_t ReshapeOp::getBytesRead() { return 0; }
int64_t ReshapeOp::getBytesWritten() { return 0; }
int64_t ReshapeOp::getOutputMemory() { return 0; }

// Only the kept range is read.
int64_t SliceOp::getBytesRead() { return tensorBytes(getType()); }

//===----------------------------------------------------------------------===//
// Backward ops: the same conventions (docs/cost-model.md).
//===----------------------------------------------------------------------===//

// As the forward product: 2 x (elements of dout) x K.
int64_t MatmulGradOp::getFlops() {
  return productFlops(getLhs().getType(), getDout().getType(),
                      getTransposeLhs());
}
// A local derivative and a multiply per element, then the sum down to the
// operand's shape.
int64_t BinaryGradOp::getFlops() {
  return 2 * elementsOf(getDout()) + elementsOf(getResult());
}
int64_t UnaryGradOp::getFlops() {
  int64_t perElement = getKind() == UnaryKind::gelu ? 12 : 2;
  return perElement * elementsOf(getResult());
}
int64_t FormulaGradOp::getFlops() {
  ScalarFormulaOpInterface::Concept *formula = getFormula();
  const int64_t perElement =
      formula ? formula->getGradientFlopsPerElement() : 0;
  return perElement * elementsOf(getResult());
}
int64_t SoftmaxGradOp::getFlops() { return 4 * elementsOf(getResult()); }
int64_t CausalMaskGradOp::getFlops() { return elementsOf(getResult()); }
// The moments again (3), then the three gradients (9), and the residual's
// sum where it has one.
int64_t LayerNormGradOp::getFlops() {
  return (getResidual() ? 13 : 12) * elementsOf(getX());
}
// rstd again (2), the weighted gradient and its dot with xhat (4), dx (3),
// the weight's gradient (2).
int64_t RmsNormGradOp::getFlops() { return 11 * elementsOf(getX()); }
int64_t AttentionGradOp::getFlops() {
  return attentionGradFlops(getQuery().getType(), getKey().getType(),
                            getCausal(), getSequenceMajor());
}
int64_t EmbeddingGradOp::getFlops() { return elementsOf(getDout()); }
// The log-sum-exp again (5), then softmax minus one-hot times dloss (2).
int64_t CrossEntropyGradOp::getFlops() { return 7 * elementsOf(getLogits()); }
int64_t ReduceGradOp::getFlops() { return elementsOf(getX()); }
int64_t SliceGradOp::getFlops() { return 0; }

//===----------------------------------------------------------------------===//
// The optimizer step: in place, so it holds no new memory; its state (a
// velocity, two moments) is read and written beside the parameter.
//===----------------------------------------------------------------------===//

// v = momentum v + g + wd p (3 per element with momentum, 1 without), then
// p -= lr v (2).
int64_t SgdUpdateOp::getFlops() {
  int64_t perElement = getMomentum().convertToDouble() > 0 ? 5 : 3;
  return perElement * elementsOf(getParam());
}
int64_t SgdUpdateOp::getBytesRead() {
  int64_t tensors = getMomentum().convertToDouble() > 0 ? 3 : 2;
  return tensors * tensorBytes(getParam().getType());
}
int64_t SgdUpdateOp::getBytesWritten() {
  int64_t tensors = getMomentum().convertToDouble() > 0 ? 2 : 1;
  return tensors * tensorBytes(getParam().getType());
}
int64_t SgdUpdateOp::getOutputMemory() { return 0; }

// Both moments (3 + 4), their bias corrections (2), a square root, a
// division and the decay and step (5): 16 per element.
int64_t AdamUpdateOp::getFlops() { return 16 * elementsOf(getParam()); }
// The parameter, its gradient and both moments in; all but the gradient
// out.
int64_t AdamUpdateOp::getBytesRead() {
  return 4 * tensorBytes(getParam().getType());
}
int64_t AdamUpdateOp::getBytesWritten() {
  return 3 * tensorBytes(getParam().getType());
}
int64_t AdamUpdateOp::getOutputMemory() { return 0; }

// Squares summed (2 per element), then every gradient scaled (1).
int64_t ClipGradNormOp::getFlops() {
  int64_t elements = 0;
  for (Value g : getGrads())
    elements += elementsOf(g);
  return 3 * elements;
}
int64_t ClipGradNormOp::getBytesWritten() { return operandBytes(*this); }
int64_t ClipGradNormOp::getOutputMemory() { return 0; }
