//===- WhaleShardOps.cpp - verifiers, gradients and costs of shard ops ----===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace whale;

RankedTensorType ParamOp::getFullType() {
  RankedTensorType t = getType();
  std::optional<ArrayRef<int64_t>> shard = getShard();
  if (!shard)
    return t;
  SmallVector<int64_t> shape(t.getShape());
  if (shard->size() == 3)
    shape[(*shard)[0]] = (*shard)[2];
  else
    shape[(*shard)[0]] *= (*shard)[1];
  return RankedTensorType::get(shape, t.getElementType());
}

LogicalResult whale::verifyShardWeights(Operation *op,
                                        std::optional<ArrayRef<int64_t>> w,
                                        int64_t shards, int64_t axis,
                                        int64_t part, int64_t whole) {
  if (!w) {
    int64_t expected = 0;
    if (llvm::MulOverflow(part, shards, expected))
      return op->emitOpError("the part's ")
             << part << " times " << shards << " overflows";
    if (expected == whole)
      return success();
    return op->emitOpError("the whole must be the part with axis ")
           << axis << " times " << shards << ": expected " << expected
           << " in dimension " << axis << ", got " << whole;
  }
  if (static_cast<int64_t>(w->size()) != shards ||
      llvm::any_of(*w, [](int64_t x) { return x < 1; }))
    return op->emitOpError("weights must be ")
           << shards << " positive numbers, one per shard";
  // Bounded sums and 128-bit products: no weights overflow.
  int64_t units = 0;
  bool tooMany = false;
  for (int64_t x : *w) {
    tooMany = tooMany || x > whole - units;
    units = tooMany ? units : units + x;
  }
  if (!tooMany && units > 0 && whole % units == 0 &&
      llvm::any_of(*w, [&](int64_t x) {
        return static_cast<__int128>(part) * units ==
               static_cast<__int128>(whole) * x;
      }))
    return success();
  if (tooMany || units == 0)
    return op->emitOpError("weights add up to more than the whole's ")
           << whole << ": a part must be a whole number of units";
  return op->emitOpError("a part of ")
         << part << " is none of the weighted parts of " << whole
         << " (it is cut in " << units << " units, each part a whole number "
         << "of them)";
}

namespace {

/// `part` is one of the `shards` parts of `whole` along `axis`.
LogicalResult verifyParts(Operation *op, Type part, Type whole, int64_t axis,
                          int64_t shards,
                          std::optional<ArrayRef<int64_t>> weights) {
  auto p = cast<RankedTensorType>(part), w = cast<RankedTensorType>(whole);
  if (p.getElementType() != w.getElementType() || p.getRank() != w.getRank())
    return op->emitOpError("part and whole must have the same element type "
                           "and rank");
  if (axis < 0 || axis >= p.getRank())
    return op->emitOpError("axis ")
           << axis << " is not an axis of a rank " << p.getRank() << " tensor";
  for (int64_t d = 0; d < p.getRank(); ++d) {
    if (d == axis)
      continue;
    if (w.getDimSize(d) != p.getDimSize(d))
      return op->emitOpError("the whole must be the part but along axis ")
             << axis << ": expected " << p.getDimSize(d) << " in dimension "
             << d << ", got " << w.getDimSize(d);
  }
  return verifyShardWeights(op, weights, shards, axis, p.getDimSize(axis),
                            w.getDimSize(axis));
}

int64_t bytesOf(Value v) { return tensorBytes(v.getType()); }

} // namespace

LogicalResult AllGatherOp::verify() {
  return verifyParts(*this, getValue().getType(), getType(), getAxis(),
                     getShards(), getWeights());
}

LogicalResult AllToAllOp::verify() {
  auto in = cast<RankedTensorType>(getValue().getType());
  RankedTensorType out = cast<RankedTensorType>(getType());
  const int64_t rank = in.getRank(), a = getConcatAxis(), b = getSplitAxis();
  if (out.getRank() != rank || a == b || a < 0 || b < 0 || a >= rank ||
      b >= rank)
    return emitOpError() << "moves a part between two distinct axes of one "
                            "rank, got split "
                         << b << " and concat " << a << " of " << in << " -> "
                         << out;
  for (int64_t d = 0; d < rank; ++d)
    if (d != a && d != b && in.getDimSize(d) != out.getDimSize(d))
      return emitOpError() << "keeps every axis but " << a << " and " << b
                           << ": " << in << " -> " << out;
  if (in.getElementType() != out.getElementType())
    return emitOpError("keeps the element type");
  // The input is this rank's part of the output along a, the output its
  // part of the input along b.
  if (failed(verifyShardWeights(*this, getWeights(), getShards(), a,
                                in.getDimSize(a), out.getDimSize(a))) ||
      failed(verifyShardWeights(*this, getWeights(), getShards(), b,
                                out.getDimSize(b), in.getDimSize(b))))
    return failure();
  return success();
}

LogicalResult ShardSliceOp::verify() {
  if (std::optional<int64_t> parts = getParts()) {
    auto in = cast<RankedTensorType>(getValue().getType());
    auto out = cast<RankedTensorType>(getType());
    const int64_t a = getAxis();
    if (getWeights())
      return emitOpError("takes parts held by several ranks in equal parts "
                         "only, not with weights");
    const int64_t p = static_cast<int64_t>(*parts),
                  shards = static_cast<int64_t>(getShards());
    if (p >= shards || shards % p != 0)
      return emitOpError() << "parts " << p << " must be fewer than the shards "
                           << shards << " and divide them";
    if (a < 0 || a >= in.getRank() || in.getDimSize(a) % *parts != 0)
      return emitOpError() << "axis " << a << " of " << in
                           << " must divide into " << *parts << " parts";
    SmallVector<int64_t> shape(in.getShape());
    shape[a] /= *parts;
    if (out.getShape() != ArrayRef<int64_t>(shape) ||
        out.getElementType() != in.getElementType())
      return emitOpError() << "gives one of " << *parts << " parts of " << in
                           << " along axis " << a << ", not " << out;
    return success();
  }
  return verifyParts(*this, getType(), getValue().getType(), getAxis(),
                     getShards(), getWeights());
}

LogicalResult ShardedCrossEntropyOp::verify() {
  auto logits = cast<RankedTensorType>(getLogits().getType());
  auto labels = cast<RankedTensorType>(getLabels().getType());
  if (logits.getRank() != labels.getRank() + 1 ||
      logits.getShape().drop_back() != labels.getShape() ||
      getType().getShape() != labels.getShape())
    return emitOpError("takes logits [..., C / shards] and labels [...], and "
                       "gives a loss shaped like the labels");
  return success();
}

// Gradients keep the convention of WhaleShardOps.td: whole values have whole
// gradients on every rank, parts have their part's.
SmallVector<Value> AllGatherOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> g) {
  if (!g[0] || !isa<FloatType>(getType().getElementType()))
    return {Value()};
  return {ShardSliceOp::create(b, getLoc(), getValue().getType(), g[0],
                               getAxis(), getShards(), getWeightsAttr(),
                               IntegerAttr())};
}

SmallVector<Value> AllToAllOp::buildGradients(OpBuilder &b,
                                              ArrayRef<Value> g) {
  if (!g[0] || !isa<FloatType>(getType().getElementType()))
    return {Value()};
  return {AllToAllOp::create(b, getLoc(), getValue().getType(), g[0],
                             getConcatAxis(), getSplitAxis(), getShards(),
                             getWeightsAttr())};
}

SmallVector<Value> ShardSliceOp::buildGradients(OpBuilder &b,
                                                ArrayRef<Value> g) {
  if (!g[0] || !isa<FloatType>(getType().getElementType()))
    return {Value()};
  std::optional<int64_t> parts = getParts();
  if (!parts)
    return {AllGatherOp::create(b, getLoc(), getValue().getType(), g[0],
                                getAxis(), getShards(), getWeightsAttr())};
  // Each of the `copies` holders of a part has a term of its gradient:
  // gathered in group order ([.., shards x part, ..]: part p's holders
  // together), then each part's terms added, the same bits on every rank.
  auto part = cast<RankedTensorType>(getType());
  auto whole = cast<RankedTensorType>(getValue().getType());
  const int64_t a = getAxis(), shards = getShards(), copies = shards / *parts,
                len = part.getDimSize(a);
  SmallVector<int64_t> gathered(part.getShape());
  gathered[a] = shards * len;
  Value all = AllGatherOp::create(
      b, getLoc(), RankedTensorType::get(gathered, part.getElementType()), g[0],
      a, shards, DenseI64ArrayAttr());
  SmallVector<int64_t> terms(part.getShape().take_front(a));
  terms.append({*parts, copies, len});
  terms.append(part.getShape().begin() + a + 1, part.getShape().end());
  Value byCopy = ReshapeOp::create(
      b, getLoc(), RankedTensorType::get(terms, part.getElementType()), all);
  SmallVector<int64_t> summed(terms);
  summed.erase(summed.begin() + a + 1);
  Value sum = ReduceSumOp::create(
      b, getLoc(), RankedTensorType::get(summed, part.getElementType()), byCopy,
      b.getDenseI64ArrayAttr({a + 1}), UnitAttr());
  return {ReshapeOp::create(b, getLoc(), whole, sum)};
}

SmallVector<Value> ShardSumOp::buildGradients(OpBuilder &, ArrayRef<Value> g) {
  return {g[0]};
}

SmallVector<Value> FanoutOp::buildGradients(OpBuilder &b, ArrayRef<Value> g) {
  if (!g[0])
    return {Value()};
  return {ShardSumOp::create(b, getLoc(), g[0], getShards())};
}

SmallVector<Value> ShardedCrossEntropyOp::buildGradients(OpBuilder &b,
                                                         ArrayRef<Value> g) {
  if (!g[0])
    return {Value(), Value()};
  return {ShardedCrossEntropyGradOp::create(b, getLoc(), getLogits(),
                                            getLabels(), g[0], getShards(),
                                            getWeightsAttr()),
          Value()};
}

// What each rank hands to the group's collective, as the runtime counts it.
int64_t AllGatherOp::getCommBytes() { return bytesOf(getValue()); }
int64_t ShardSliceOp::getCommBytes() { return 0; }
// All chunks but the rank's own leave it, each in a slot the size of the
// largest (the largest parts along both axes, as the runtime pads them).
int64_t AllToAllOp::getCommBytes() {
  auto in = cast<RankedTensorType>(getValue().getType());
  const int64_t c = getShards();
  if (!getWeights())
    return bytesOf(getValue()) / c * (c - 1);
  ArrayRef<int64_t> w = *getWeights();
  int64_t units = 0, most = 0, own = 0;
  for (int64_t x : w) {
    units += x;
    most = std::max(most, x);
  }
  const int64_t a = getConcatAxis(), b = getSplitAxis();
  const int64_t wholeA = cast<RankedTensorType>(getType()).getDimSize(a);
  own = in.getDimSize(a); // this rank's part along a
  if (units <= 0 || own <= 0 || wholeA % units != 0 ||
      in.getDimSize(b) % units != 0)
    return 0;
  const int64_t slot = bytesOf(getValue()) / own / in.getDimSize(b) *
                       (wholeA / units * most) *
                       (in.getDimSize(b) / units * most);
  return slot * (c - 1);
}
int64_t ShardSumOp::getCommBytes() { return bytesOf(getValue()); }
int64_t FanoutOp::getCommBytes() { return 0; }
// Per sample: a maximum (gathered), a sum and the label's logit (summed).
int64_t ShardedCrossEntropyOp::getCommBytes() {
  return 3 * bytesOf(getResult());
}
int64_t ShardedCrossEntropyGradOp::getCommBytes() {
  return 2 * bytesOf(getDloss());
}
