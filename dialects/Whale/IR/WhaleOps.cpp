//===- WhaleOps.cpp - verifiers of the whale ops --------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"

#include "dialects/Whale/IR/VerifyUtils.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"
#include "support/ConvMath.h"
#include "support/Limits.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace whale;

namespace whale::verify {

RankedTensorType tensorOf(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Maps a possibly negative axis into [0, rank); fails when out of range.
FailureOr<int64_t> normalizeAxis(Operation *op, int64_t axis, int64_t rank) {
  const int64_t a = resolveAxis(axis, rank);
  if (a < 0 || a >= rank)
    return op->emitOpError()
           << "axis " << axis << " is out of range for rank " << rank;
  return a;
}

LogicalResult expectShape(Operation *op, ArrayRef<int64_t> expected,
                          RankedTensorType actual, StringRef what) {
  if (actual.getShape() == expected)
    return success();
  InFlightDiagnostic d = op->emitOpError() << what << " should have shape [";
  llvm::interleaveComma(expected, d);
  d << "] but has " << actual;
  return d;
}

LogicalResult expectSameElementType(Operation *op, Type a, Type b,
                                    StringRef what) {
  Type ea = getElementTypeOrSelf(a), eb = getElementTypeOrSelf(b);
  if (ea == eb)
    return success();
  return op->emitOpError() << what << " element types differ: " << ea << " vs "
                           << eb;
}

LogicalResult expectMatmulResultElement(Operation *op, Type operand,
                                        Type result, StringRef what) {
  Type eo = getElementTypeOrSelf(operand), er = getElementTypeOrSelf(result);
  if (eo == er || (eo.isBF16() && er.isF32()))
    return success();
  return op->emitOpError() << what << " element type " << er
                           << " must be the operands' (" << eo << ")"
                           << (eo.isBF16() ? " or f32" : "");
}

} // namespace whale::verify

using namespace whale::verify;

//===----------------------------------------------------------------------===//
// Enum keywords in custom assembly: `replicate`, `normal`
//===----------------------------------------------------------------------===//

template <typename AttrT, typename EnumT>
static ParseResult
parseEnumKeyword(OpAsmParser &parser, AttrT &attr,
                 std::optional<EnumT> (*symbolize)(StringRef), StringRef what) {
  SMLoc loc = parser.getCurrentLocation();
  StringRef keyword;
  if (parser.parseKeyword(&keyword))
    return failure();
  std::optional<EnumT> value = symbolize(keyword);
  if (!value)
    return parser.emitError(loc)
           << "unknown " << what << " '" << keyword << "'";
  attr = AttrT::get(parser.getContext(), *value);
  return success();
}

static ParseResult parseStrategyKeyword(OpAsmParser &parser,
                                        StrategyAttr &attr) {
  return parseEnumKeyword<StrategyAttr, Strategy>(
      parser, attr, symbolizeStrategy, "strategy");
}
static void printStrategyKeyword(OpAsmPrinter &printer, Operation *,
                                 StrategyAttr attr) {
  printer << stringifyStrategy(attr.getValue());
}
static ParseResult parseInitKeyword(OpAsmParser &parser, InitKindAttr &attr) {
  return parseEnumKeyword<InitKindAttr, InitKind>(
      parser, attr, symbolizeInitKind, "initializer");
}
static void printInitKeyword(OpAsmPrinter &printer, Operation *,
                             InitKindAttr attr) {
  printer << stringifyInitKind(attr.getValue());
}

static ParseResult parseUnaryKeyword(OpAsmParser &parser, UnaryKindAttr &attr) {
  return parseEnumKeyword<UnaryKindAttr, UnaryKind>(
      parser, attr, symbolizeUnaryKind, "function");
}
static void printUnaryKeyword(OpAsmPrinter &printer, Operation *,
                              UnaryKindAttr attr) {
  printer << stringifyUnaryKind(attr.getValue());
}
static ParseResult parseBinaryKeyword(OpAsmParser &parser,
                                      BinaryKindAttr &attr) {
  return parseEnumKeyword<BinaryKindAttr, BinaryKind>(
      parser, attr, symbolizeBinaryKind, "operator");
}
static void printBinaryKeyword(OpAsmPrinter &printer, Operation *,
                               BinaryKindAttr attr) {
  printer << stringifyBinaryKind(attr.getValue());
}
static ParseResult parseReduceKeyword(OpAsmParser &parser,
                                      ReduceKindAttr &attr) {
  return parseEnumKeyword<ReduceKindAttr, ReduceKind>(
      parser, attr, symbolizeReduceKind, "reduction");
}
static void printReduceKeyword(OpAsmPrinter &printer, Operation *,
                               ReduceKindAttr attr) {
  printer << stringifyReduceKind(attr.getValue());
}

//===----------------------------------------------------------------------===//
// attention_grad's gradient types: `-> f32` where they are not the query's
//===----------------------------------------------------------------------===//

static ParseResult parseGradientElement(OpAsmParser &parser, Type &dout,
                                        Type &dkey, Type query, Type key) {
  // query and key were parsed as ranked tensors (their constraint's type).
  Type element = getElementTypeOrSelf(query);
  if (succeeded(parser.parseOptionalArrow())) {
    SMLoc at = parser.getCurrentLocation();
    if (parser.parseType(element))
      return failure();
    if (!isa<FloatType>(element))
      return parser.emitError(at) << "expected the gradients' float element "
                                     "type after '->', got "
                                  << element;
  }
  dout = cast<RankedTensorType>(query).clone(element);
  dkey = cast<RankedTensorType>(key).clone(element);
  return success();
}

static void printGradientElement(OpAsmPrinter &printer, Operation *, Type dout,
                                 Type, Type query, Type) {
  Type element = getElementTypeOrSelf(dout);
  if (element != getElementTypeOrSelf(query))
    printer << " -> " << element;
}

// cross_entropy_grad's: its gradient the logits' shape, `-> f32` where
// its element is not the logits'.
static ParseResult parseLogitsGradient(OpAsmParser &parser, Type &result,
                                       Type logits) {
  Type unused;
  return parseGradientElement(parser, result, unused, logits, logits);
}

static void printLogitsGradient(OpAsmPrinter &printer, Operation *op,
                                Type result, Type logits) {
  printGradientElement(printer, op, result, result, logits, logits);
}

//===----------------------------------------------------------------------===//
// TaskGraphOp / YieldOp
//===----------------------------------------------------------------------===//

LogicalResult TaskGraphOp::verify() {
  if (Operation *outer = (*this)->getParentOfType<TaskGraphOp>()) {
    InFlightDiagnostic d = emitOpError("is nested in another TaskGraph; "
                                       "TaskGraphs do not nest");
    d.attachNote(outer->getLoc()) << "enclosing TaskGraph";
    return d;
  }
  // As many devices as a cluster may have: a count past it was taken as
  // the size of per-device tables (an out-of-memory abort).
  if (std::optional<uint64_t> n = getDevices();
      n && *n > uint64_t(kMaxClusterDevices))
    return emitOpError("asks for ")
           << *n << " devices; a cluster has at most " << kMaxClusterDevices;
  Block &body = getBody().front();
  if (body.empty() || !isa<YieldOp>(body.back()))
    return emitOpError("body must end with whale.yield");
  if (body.getNumArguments() != 0)
    return emitOpError("body takes no block arguments");
  return success();
}

LogicalResult YieldOp::verify() {
  auto parent = cast<TaskGraphOp>((*this)->getParentOp());
  if (getValues().getTypes() != parent.getResultTypes())
    return emitOpError() << "yields " << getValues().size()
                         << " values whose types do not match the "
                         << parent.getNumResults()
                         << " results of the TaskGraph";
  return success();
}

//===----------------------------------------------------------------------===//
// ParamOp
//===----------------------------------------------------------------------===//

LogicalResult ParamOp::verify() {
  if (getName().empty())
    return emitOpError("needs a non-empty name");
  size_t expected = 0;
  switch (getInit()) {
  case InitKind::zeros:
  case InitKind::ones:
    expected = 0;
    break;
  case InitKind::xavier:
    expected = 1;
    break;
  case InitKind::normal:
  case InitKind::uniform:
    expected = 2;
    break;
  }
  if (std::optional<ArrayRef<int64_t>> shard = getShard()) {
    const size_t size = getShardWeights() ? 3 : 2;
    if (shard->size() != size || (*shard)[0] < 0 ||
        (*shard)[0] >= getType().getRank() || (*shard)[1] < 2)
      return emitOpError(size == 3 ? "shard must be [axis, shards, extent] "
                                     "(the whole's) beside shard_weights"
                                   : "shard must be [axis, shards]")
             << " with an axis of the result and shards >= 2";
    if (failed(verifyShardWeights(
            *this, getShardWeights(), (*shard)[1], (*shard)[0],
            getType().getDimSize((*shard)[0]),
            size == 3 ? (*shard)[2]
                      : getType().getDimSize((*shard)[0]) * (*shard)[1])))
      return failure();
  } else if (getShardWeights()) {
    return emitOpError("has shard_weights but no shard");
  }
  if (getOwner()) {
    if (!getGroup())
      return emitOpError("has an owner but no group to own it in");
    if (*getOwner() < 0)
      return emitOpError("owner must be a position in its group, not ")
             << *getOwner();
    if (*getGroup() == "stages")
      return emitOpError("is owned among the replicas or the shard peers "
                         "that sum its gradient, not the stages");
    if (failed(verifyGroupAndShards(*this, getGroup(), getShards())))
      return failure();
  } else if (getGroup() || getShards()) {
    return emitOpError("takes a group and shards only with an owner");
  }
  if (getInitArgs().size() != expected)
    return emitOpError() << "initializer '" << stringifyInitKind(getInit())
                         << "' takes " << expected << " numbers, got "
                         << getInitArgs().size();
  if (getInit() == InitKind::normal && getInitArgs()[1] < 0)
    return emitOpError("normal initializer needs a non-negative std");
  if (getInit() == InitKind::uniform && getInitArgs()[0] > getInitArgs()[1])
    return emitOpError("uniform initializer needs low <= high");
  if (!getType().hasStaticShape())
    return emitOpError("parameter shape must be static");
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
whale::matmulResultShape(Operation *op, RankedTensorType lhs,
                         RankedTensorType rhs, bool transLhs, bool transRhs) {
  if (lhs.getRank() < 2 || rhs.getRank() < 2)
    return op->emitOpError("operands need rank >= 2, got ")
           << lhs.getRank() << " and " << rhs.getRank();
  if (failed(expectSameElementType(op, lhs, rhs, "operand")))
    return failure();
  ArrayRef<int64_t> ls = lhs.getShape(), rs = rhs.getShape();
  int64_t m = transLhs ? ls[ls.size() - 1] : ls[ls.size() - 2];
  int64_t kl = transLhs ? ls[ls.size() - 2] : ls[ls.size() - 1];
  int64_t kr = transRhs ? rs[rs.size() - 1] : rs[rs.size() - 2];
  int64_t n = transRhs ? rs[rs.size() - 2] : rs[rs.size() - 1];
  if (kl != kr)
    return op->emitOpError()
           << "contracting dimensions differ: " << kl << " vs " << kr;
  ArrayRef<int64_t> lb = ls.drop_back(2), rb = rs.drop_back(2);
  if (!rb.empty() && lb != rb)
    return op->emitOpError("batch dimensions of the operands differ");
  SmallVector<int64_t> shape(lb.begin(), lb.end());
  shape.push_back(m);
  shape.push_back(n);
  return shape;
}

//===----------------------------------------------------------------------===//
// Conv2dOp, Pool2dOp
//===----------------------------------------------------------------------===//

/// Whether `values` has two entries, each at least `least`.
static bool pairAtLeast(ArrayRef<int64_t> values, int64_t least) {
  return values.size() == 2 && values[0] >= least && values[1] >= least;
}

FailureOr<SmallVector<int64_t>>
whale::conv2dResultShape(Operation *op, RankedTensorType input,
                         RankedTensorType weight, ArrayRef<int64_t> stride,
                         ArrayRef<int64_t> padding, ArrayRef<int64_t> dilation,
                         int64_t groups) {
  if (input.getRank() != 4 || weight.getRank() != 4)
    return op->emitOpError("input [N, C, H, W] and weight [O, C / groups, KH, "
                           "KW] must be 4-D, got ")
           << input << " and " << weight;
  if (!pairAtLeast(stride, 1) || !pairAtLeast(padding, 0) ||
      !pairAtLeast(dilation, 1) || groups < 1)
    return op->emitOpError("stride and dilation are two values >= 1, padding "
                           "two >= 0, groups >= 1");
  ArrayRef<int64_t> x = input.getShape(), w = weight.getShape();
  if (x[1] % groups != 0 || w[0] % groups != 0 || w[1] != x[1] / groups)
    return op->emitOpError() << "weight " << weight << " does not fit "
                             << x[1] << " input channels in " << groups
                             << " groups";
  whale::rt::Window2d win{w[2],       w[3],       stride[0],   stride[1],
                          padding[0], padding[1], dilation[0], dilation[1]};
  if (!win.withinLimits())
    return op->emitOpError("kernel, stride, padding and dilation are each at "
                           "most 2^30");
  SmallVector<int64_t> shape = {x[0], w[0], win.outH(x[2]), win.outW(x[3])};
  if (shape[2] < 1 || shape[3] < 1)
    return op->emitOpError() << "the kernel " << w[2] << "x" << w[3]
                             << " does not fit the padded input " << x[2]
                             << "x" << x[3];
  return shape;
}

FailureOr<SmallVector<int64_t>>
whale::pool2dResultShape(Operation *op, RankedTensorType input, StringRef kind,
                         ArrayRef<int64_t> kernel, ArrayRef<int64_t> stride,
                         ArrayRef<int64_t> padding) {
  if (kind != "max" && kind != "avg")
    return op->emitOpError() << "kind is \"max\" or \"avg\", got \"" << kind
                             << "\"";
  if (input.getRank() < 2)
    return op->emitOpError("input needs rank >= 2");
  if (!pairAtLeast(kernel, 1) || !pairAtLeast(stride, 1) ||
      !pairAtLeast(padding, 0) || 2 * padding[0] > kernel[0] ||
      2 * padding[1] > kernel[1])
    return op->emitOpError("kernel and stride are two values >= 1, padding "
                           "two from 0 to half the kernel");
  whale::rt::Window2d win{kernel[0], kernel[1],  stride[0], stride[1],
                          padding[0], padding[1], 1,         1};
  if (!win.withinLimits())
    return op->emitOpError("kernel, stride and padding are each at most 2^30");
  SmallVector<int64_t> shape(input.getShape());
  int64_t r = input.getRank();
  shape[r - 2] = win.outH(shape[r - 2]);
  shape[r - 1] = win.outW(shape[r - 1]);
  if (shape[r - 2] < 1 || shape[r - 1] < 1)
    return op->emitOpError() << "the window does not fit " << input;
  return shape;
}

FailureOr<SmallVector<int64_t>>
whale::topkResultShape(Operation *op, RankedTensorType input, int64_t k) {
  if (input.getRank() < 1)
    return op->emitOpError("input needs rank >= 1");
  int64_t n = input.getShape().back();
  if (k < 1 || k > n)
    return op->emitOpError() << "k = " << k << " must be from 1 to " << n;
  SmallVector<int64_t> shape(input.getShape());
  shape.back() = k;
  return shape;
}

LogicalResult TopKOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      topkResultShape(*this, getInput().getType(), getK());
  if (failed(shape))
    return failure();
  Type element = getType().getElementType();
  if (getIndices() ? !element.isInteger(32)
                   : element != getInput().getType().getElementType())
    return emitOpError() << (getIndices() ? "indices are i32"
                                          : "values have the input's type")
                         << ", got " << element;
  return expectShape(*this, *shape, getType(), "result");
}

LogicalResult whale::verifyMoeRouting(Operation *op, RankedTensorType tokens,
                                     RankedTensorType experts, Value gates,
                                     RankedTensorType slotted,
                                     int64_t numExperts, int64_t capacity) {
  if (tokens.getRank() != 3 || experts.getRank() != 3)
    return op->emitOpError()
           << "tokens must be [G, S, D] and experts [G, S, k], got "
           << tokens << " and " << experts;
  ArrayRef<int64_t> t = tokens.getShape(), e = experts.getShape();
  if (t[0] != e[0] || t[1] != e[1])
    return op->emitOpError() << "experts " << experts
                             << " do not route the tokens " << tokens;
  if (numExperts < 1 || capacity < 1)
    return op->emitOpError() << "needs at least one expert and one slot, got "
                             << numExperts << " experts of capacity "
                             << capacity;
  if (e[2] < 1 || e[2] > numExperts)
    return op->emitOpError() << "each token chooses from 1 to " << numExperts
                             << " experts, got " << e[2];
  if (gates && failed(expectShape(op, e, tensorOf(gates), "gates")))
    return failure();
  if (gates && failed(expectSameElementType(
                   op, tensorOf(gates).getElementType(),
                   tokens.getElementType(), "gates")))
    return failure();
  if (failed(expectSameElementType(op, slotted.getElementType(),
                                   tokens.getElementType(), "slots")))
    return failure();
  return expectShape(op, {numExperts, saturatingMul(t[0], capacity), t[2]},
                     slotted, "slots");
}

int64_t whale::moeCapacity(RankedTensorType slotted, int64_t groups) {
  if (slotted.getRank() != 3 || groups < 1 || slotted.getShape()[1] < groups ||
      slotted.getShape()[1] % groups != 0)
    return 0;
  return slotted.getShape()[1] / groups;
}

LogicalResult MoeDispatchOp::verify() {
  return verifyMoeRouting(*this, getTokens().getType(), getExperts().getType(),
                          getGates(), getType(), getNumExperts(),
                          getCapacity());
}

LogicalResult whale::verifyMoeSlots(Operation *op, RankedTensorType tokens,
                                   RankedTensorType experts, Value gates,
                                   RankedTensorType slotted) {
  if (slotted.getRank() != 3)
    return op->emitOpError() << "slots must be [E, G * C, D], got "
                             << slotted;
  int64_t groups = experts.getRank() == 3 ? experts.getShape()[0] : 1;
  int64_t capacity = moeCapacity(slotted, groups);
  if (capacity == 0)
    return op->emitOpError() << "slots " << slotted << " are not " << groups
                             << " groups' equal shares";
  return verifyMoeRouting(op, tokens, experts, gates, slotted,
                          slotted.getShape()[0], capacity);
}

LogicalResult MoeCombineOp::verify() {
  return verifyMoeSlots(*this, getType(), getExperts().getType(), getGates(),
                        getSlotted().getType());
}

LogicalResult DropoutOp::verify() {
  double rate = getRate().convertToDouble();
  if (!(rate >= 0 && rate < 1))
    return emitOpError() << "rate must be in [0, 1), got " << rate;
  if (getInput().getType().getRank() < 1)
    return emitOpError("needs the batch's rows in dimension 0");
  if (static_cast<int64_t>(getRowOffset()) < 0)
    return emitOpError("row_offset must be >= 0");
  return success();
}

LogicalResult BatchNormOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (in.getRank() < 2)
    return emitOpError() << "needs [N, C, ...] (rank >= 2), got " << in;
  if (failed(expectShape(*this, {in.getShape()[1]}, tensorOf(getGamma()),
                         "gamma")) ||
      failed(expectSameElementType(*this, in, getGamma().getType(),
                                   "input and gamma")))
    return failure();
  double momentum = getMomentum().convertToDouble();
  if (!(momentum >= 0 && momentum <= 1))
    return emitOpError() << "momentum must be in [0, 1], got " << momentum;
  if (!(getEps().convertToDouble() > 0))
    return emitOpError("eps must be positive");
  if (static_cast<int64_t>(getRowCopies()) < 1)
    return emitOpError("row_copies must be >= 1");
  // The running statistics are updated in place: they must be state.
  for (auto [what, v] : {std::pair<StringRef, Value>{"running_mean",
                                                     getRunningMean()},
                         {"running_var", getRunningVar()}})
    if (auto p = v.getDefiningOp<ParamOp>(); p && !p.getFrozen())
      return emitOpError() << what << " must be a frozen parameter (state no "
                              "gradient trains), not '"
                           << p.getName() << "'";
  return success();
}

LogicalResult OneHotOp::verify() {
  if (getClasses() < 1)
    return emitOpError() << "needs at least one class, got " << getClasses();
  SmallVector<int64_t> shape(getIds().getType().getShape());
  shape.push_back(getClasses());
  return expectShape(*this, shape, getType(), "result");
}

LogicalResult Conv2dOp::verify() {
  FailureOr<SmallVector<int64_t>> shape = conv2dResultShape(
      *this, getInput().getType(), getWeight().getType(), getStride(),
      getPadding(), getDilation(), getGroups());
  if (failed(shape))
    return failure();
  return expectShape(*this, *shape, getType(), "result");
}

LogicalResult Pool2dOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      pool2dResultShape(*this, getInput().getType(), getKind(), getKernel(),
                        getStride(), getPadding());
  if (failed(shape))
    return failure();
  return expectShape(*this, *shape, getType(), "result");
}

LogicalResult MatmulOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      matmulResultShape(*this, getLhs().getType(), getRhs().getType(),
                        getTransposeLhs(), getTransposeRhs());
  if (failed(shape))
    return failure();
  if (failed(expectSameElementType(*this, getLhs().getType(),
                                   getRhs().getType(), "operand")) ||
      failed(expectMatmulResultElement(*this, getLhs().getType(), getType())))
    return failure();
  return expectShape(*this, *shape, getType(), "result");
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

FailureOr<SmallVector<int64_t>>
whale::verify::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  size_t rank = std::max(a.size(), b.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1)
      return failure();
    out[rank - 1 - i] = x == 1 ? y : x;
  }
  return out;
}

static LogicalResult verifyBinary(Operation *op) {
  auto lhs = cast<RankedTensorType>(op->getOperand(0).getType());
  auto rhs = cast<RankedTensorType>(op->getOperand(1).getType());
  auto res = cast<RankedTensorType>(op->getResult(0).getType());
  if (failed(expectSameElementType(op, lhs, rhs, "operand")) ||
      failed(expectSameElementType(op, lhs, res, "operand and result")))
    return failure();
  FailureOr<SmallVector<int64_t>> shape =
      broadcastShapes(lhs.getShape(), rhs.getShape());
  if (failed(shape))
    return op->emitOpError()
           << "operand shapes do not broadcast: " << lhs << " and " << rhs;
  return expectShape(op, *shape, res, "result");
}

LogicalResult AddOp::verify() { return verifyBinary(*this); }
LogicalResult SubOp::verify() { return verifyBinary(*this); }
LogicalResult MulOp::verify() { return verifyBinary(*this); }
LogicalResult DivOp::verify() { return verifyBinary(*this); }

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getType();
  if (in.getShape() != out.getShape())
    return emitOpError("converts elements, so the shapes must be equal; got ")
           << in << " to " << out;
  Type from = in.getElementType(), to = out.getElementType();
  if (!((from.isF32() && to.isBF16()) || (from.isBF16() && to.isF32())))
    return emitOpError("converts between f32 and bf16; got ")
           << from << " to " << to;
  return success();
}

LogicalResult CausalMaskOp::verify() {
  if (getType().getRank() < 2)
    return emitOpError("needs rank >= 2 (query and key positions)");
  return success();
}

//===----------------------------------------------------------------------===//
// Normalization and losses
//===----------------------------------------------------------------------===//

LogicalResult whale::verifyAttentionOperands(Operation *op, RankedTensorType q,
                                             RankedTensorType k, bool causal,
                                             bool seqMajor) {
  const int64_t minRank = seqMajor ? 3 : 2;
  if (q.getRank() < minRank || q.getRank() != k.getRank())
    return op->emitOpError() << "query " << q << " and key " << k << " must be "
                             << (seqMajor ? "[..., T, H, E]" : "[..., T, E]")
                             << " of one rank >= " << minRank;
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape();
  const int64_t seq = q.getRank() - minRank;
  // Keys and values may serve groups of query heads (grouped-query
  // attention): their heads' axis (H, or the one before T) divides q's.
  const int64_t heads = seqMajor ? q.getRank() - 2 : q.getRank() - 3;
  for (int64_t d = 0; d + 1 < q.getRank(); ++d) {
    if (d == seq || qs[d] == ks[d])
      continue;
    if (d == heads && ks[d] > 0 && qs[d] % ks[d] == 0)
      continue;
    if (d == heads)
      return op->emitOpError() << "key heads (" << ks[d]
                               << ") must divide query heads (" << qs[d] << ")";
    return op->emitOpError() << "query " << q << " and key " << k
                             << " differ in a dimension other than T, E "
                                "and the heads";
  }
  if (qs.back() != ks.back())
    return op->emitOpError() << "query and key widths differ: " << qs.back()
                             << " and " << ks.back();
  if (causal && qs[seq] != ks[seq])
    return op->emitOpError() << "a causal attention needs as many keys ("
                             << ks[seq] << ") as queries (" << qs[seq] << ")";
  // amp's storage runs attention on bf16 operands, all three or none.
  return expectSameElementType(op, q, k, "query and key");
}

LogicalResult AttentionOp::verify() {
  return verifyAttentionOperands(*this, getQuery().getType(),
                                 getKey().getType(), getCausal(),
                                 getSequenceMajor());
}

LogicalResult KvAttentionOp::verify() {
  RankedTensorType q = getQuery().getType(), k = getKey().getType(),
                   cache = getKeyCache().getType();
  if (q.getRank() != 4 || k.getRank() != 4 || cache.getRank() != 4)
    return emitOpError() << "query " << q << ", key " << k << " and cache "
                         << cache << " must be [B, H, N, E] of rank 4";
  ArrayRef<int64_t> qs = q.getShape(), ks = k.getShape(), cs = cache.getShape();
  if (qs[0] != ks[0] || qs[2] != ks[2] || qs[3] != ks[3])
    return emitOpError() << "query " << q << " and key " << k
                         << " differ in B, N or E";
  if (ks[1] <= 0 || qs[1] % ks[1] != 0)
    return emitOpError() << "key heads (" << ks[1]
                         << ") must divide query heads (" << qs[1] << ")";
  if (cs[0] != ks[0] || cs[1] != ks[1] || cs[3] != ks[3])
    return emitOpError() << "the cache " << cache
                         << " must hold the key's B, heads and E, as " << k;
  if (ks[2] > cs[2])
    return emitOpError() << "the cache holds " << cs[2]
                         << " positions, fewer than the " << ks[2]
                         << " new rows";
  if (failed(expectSameElementType(*this, q, k, "query and key")) ||
      failed(expectSameElementType(*this, k, cache, "key and cache")))
    return failure();
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return normalizeAxis(*this, getAxis(), getType().getRank());
}

LogicalResult RopeOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (in.getRank() < 2 || in.getShape().back() % 2 != 0)
    return emitOpError() << "needs [..., T, E] with E even, got " << in;
  if (!(getTheta().convertToDouble() > 1))
    return emitOpError("theta must be greater than 1");
  if (std::optional<ArrayRef<double>> s = getScaling()) {
    if (s->size() != 4)
      return emitOpError("scaling is [factor, low_freq_factor, "
                         "high_freq_factor, original_max_position_embeddings]");
    const double factor = (*s)[0], low = (*s)[1], high = (*s)[2],
                 original = (*s)[3];
    if (!(factor >= 1) || !(low > 0) || !(high > low) || !(original >= 1))
      return emitOpError("scaling needs factor >= 1, 0 < low_freq_factor < "
                         "high_freq_factor and original positions >= 1");
  }
  return success();
}

LogicalResult RmsNormOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (in.getRank() < 1)
    return emitOpError("input needs rank >= 1");
  if (failed(expectShape(*this, {in.getShape().back()}, tensorOf(getWeight()),
                         "weight")) ||
      failed(expectSameElementType(*this, in, getWeight().getType(),
                                   "input and weight")))
    return failure();
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult LayerNormOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (in.getRank() < 1)
    return emitOpError("input needs rank >= 1");
  int64_t d = in.getShape().back();
  if (failed(expectShape(*this, {d}, tensorOf(getGamma()), "gamma")) ||
      failed(expectShape(*this, {d}, tensorOf(getBeta()), "beta")))
    return failure();
  if (failed(expectSameElementType(*this, in, getGamma().getType(),
                                   "input and gamma")) ||
      failed(expectSameElementType(*this, in, getBeta().getType(),
                                   "input and beta")))
    return failure();
  if (getType() != in)
    return emitOpError() << "result type " << getType()
                         << " differs from input type " << in;
  if (getEps().convertToDouble() <= 0)
    return emitOpError("eps must be positive");
  return success();
}

LogicalResult EmbeddingOp::verify() {
  RankedTensorType table = tensorOf(getTable()), ids = tensorOf(getIds());
  if (table.getRank() != 2)
    return emitOpError() << "table needs rank 2 [vocab, dim], got " << table;
  SmallVector<int64_t> expected(ids.getShape());
  expected.push_back(table.getShape()[1]);
  if (failed(
          expectSameElementType(*this, table, getType(), "table and result")))
    return failure();
  return expectShape(*this, expected, getType(), "result");
}

LogicalResult CrossEntropyOp::verify() {
  RankedTensorType logits = tensorOf(getLogits()),
                   labels = tensorOf(getLabels());
  if (logits.getRank() < 1)
    return emitOpError("logits need rank >= 1 (the class dimension last)");
  ArrayRef<int64_t> batch = logits.getShape().drop_back();
  if (labels.getShape() != batch)
    return emitOpError() << "labels " << labels
                         << " should match the logits without their class "
                            "dimension";
  // Under amp's storage the logits may be bf16, the loss then f32.
  if (failed(expectMatmulResultElement(*this, logits, getType())))
    return failure();
  return expectShape(*this, batch, getType(), "result");
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

static LogicalResult verifyReduce(Operation *op, ArrayRef<int64_t> axes,
                                  bool keepdim) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  auto res = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t prev = -1;
  for (int64_t a : axes) {
    if (a < 0 || a >= in.getRank())
      return op->emitOpError()
             << "axis " << a << " is out of range for rank " << in.getRank();
    if (a <= prev)
      return op->emitOpError("axes must be sorted and distinct");
    prev = a;
  }
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < in.getRank(); ++i) {
    if (!llvm::is_contained(axes, i))
      expected.push_back(in.getShape()[i]);
    else if (keepdim)
      expected.push_back(1);
  }
  if (failed(expectSameElementType(op, in, res, "input and result")))
    return failure();
  return expectShape(op, expected, res, "result");
}

LogicalResult ReduceSumOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdim());
}
LogicalResult ReduceMeanOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdim());
}
LogicalResult ReduceMaxOp::verify() {
  return verifyReduce(*this, getAxes(), getKeepdim());
}

//===----------------------------------------------------------------------===//
// Shape
//===----------------------------------------------------------------------===//

LogicalResult ReshapeOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  if (failed(expectSameElementType(*this, in, getType(), "input and result")))
    return failure();
  if (in.getNumElements() != getType().getNumElements())
    return emitOpError() << "cannot reshape " << in.getNumElements()
                         << " elements into " << getType();
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  ArrayRef<int64_t> perm = getPermutation();
  if (static_cast<int64_t>(perm.size()) != in.getRank())
    return emitOpError() << "permutation has " << perm.size()
                         << " entries for rank " << in.getRank();
  SmallVector<bool> seen(perm.size(), false);
  SmallVector<int64_t> expected;
  for (int64_t p : perm) {
    if (p < 0 || p >= in.getRank() || seen[p])
      return emitOpError("permutation must hold each dimension once");
    seen[p] = true;
    expected.push_back(in.getShape()[p]);
  }
  if (failed(expectSameElementType(*this, in, getType(), "input and result")))
    return failure();
  return expectShape(*this, expected, getType(), "result");
}

LogicalResult SliceOp::verify() {
  RankedTensorType in = tensorOf(getInput());
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), in.getRank());
  if (failed(axis))
    return failure();
  int64_t extent = in.getShape()[*axis];
  // I64Attr reads back unsigned; a negative bound is meant as written.
  const int64_t start = getStart(), end = getEnd();
  if (start < 0 || start >= end || end > extent)
    return emitOpError() << "range [" << start << ", " << end
                         << ") is empty or outside [0, " << extent << ")";
  SmallVector<int64_t> expected(in.getShape());
  expected[*axis] = end - start;
  if (failed(expectSameElementType(*this, in, getType(), "input and result")))
    return failure();
  return expectShape(*this, expected, getType(), "result");
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  RankedTensorType first = tensorOf(getInputs().front());
  FailureOr<int64_t> axis = normalizeAxis(*this, getAxis(), first.getRank());
  if (failed(axis))
    return failure();
  SmallVector<int64_t> expected(first.getShape());
  expected[*axis] = 0;
  for (Value v : getInputs()) {
    RankedTensorType t = tensorOf(v);
    if (failed(expectSameElementType(*this, first, t, "input")))
      return failure();
    if (t.getRank() != first.getRank())
      return emitOpError("inputs differ in rank");
    for (int64_t i = 0; i < t.getRank(); ++i)
      if (i != *axis && t.getShape()[i] != first.getShape()[i])
        return emitOpError() << "inputs differ in dimension " << i
                             << " which is not the concat axis";
    expected[*axis] += t.getShape()[*axis];
  }
  if (failed(
          expectSameElementType(*this, first, getType(), "input and result")))
    return failure();
  return expectShape(*this, expected, getType(), "result");
}

#define GET_OP_CLASSES
#include "dialects/Whale/IR/WhaleOps.cpp.inc"
