//===- WhaleFusionOps.cpp - verifier and cost of fused regions ------------===//

#include "dialects/Whale/IR/VerifyUtils.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/IRMapping.h"
#include "support/Limits.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace whale;

namespace {

bool isF32Tensor(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type && type.getElementType().isF32();
}

/// A region computes in f32; amp's storage keeps some of its inputs and
/// results in bf16, converted by the casts inside it.
bool isStorageTensor(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  return type &&
         (type.getElementType().isF32() || type.getElementType().isBF16());
}

/// `t`'s shape with f32 elements: what a value of that shape iterates
/// over, whichever of f32 or bf16 it is stored in.
Type asF32(Type t) {
  auto type = cast<RankedTensorType>(t);
  return RankedTensorType::get(type.getShape(),
                               Float32Type::get(t.getContext()));
}

/// Whether an op's scalar formula reads its operand `i` (the gradient of a
/// sum reads neither addend, only the output's gradient).
bool readsOperand(Operation *op, unsigned i) {
  auto g = dyn_cast<BinaryGradOp>(op);
  if (!g || i == 2)
    return true;
  switch (g.getKind()) {
  case BinaryKind::add:
  case BinaryKind::sub:
    return false;
  case BinaryKind::mul: // d(lhs) = g * rhs, d(rhs) = g * lhs
    return i != g.getOperand();
  case BinaryKind::div: // d(lhs) = g / rhs, d(rhs) = -g * lhs / rhs^2
    return g.getOperand() == 1 || i == 1;
  }
  return true;
}

} // namespace

FusedOp FusedOp::createAround(OpBuilder &b, Location loc,
                              ArrayRef<Operation *> ops, ValueRange inputs,
                              ValueRange results) {
  auto fused = FusedOp::create(b, loc, results.getTypes(), inputs);
  Block *body = new Block();
  fused.getBody().push_back(body);
  IRMapping map;
  for (Value v : inputs)
    map.map(v, body->addArgument(v.getType(), v.getLoc()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> yielded;
  for (Value r : results)
    yielded.push_back(map.lookup(r));
  FusedYieldOp::create(b, loc, yielded);
  return fused;
}

bool FusedOp::isFusible(Operation *op) {
  // A conversion between f32 and bf16 (amp's storage): the kernel loads
  // and stores bf16, and rounds in registers where a value is rounded
  // inside the region.
  if (auto c = dyn_cast<CastOp>(op))
    return isStorageTensor(c.getInput().getType()) &&
           isStorageTensor(c.getType());
  // The kernels compute in f32, the type training runs in.
  if (op->getNumResults() != 1 || !isF32Tensor(op->getResult(0).getType()))
    return false;
  if (auto g = dyn_cast<BinaryGradOp>(op))
    // Only where nothing is summed: the gradient has dout's shape.
    return g.getType() == g.getDout().getType();
  return isa<AddOp, SubOp, MulOp, DivOp, NegOp, ReluOp, GeluOp, TanhOp, ExpOp,
             LogOp, SqrtOp, UnaryGradOp, FormulaGradOp,
             ScalarFormulaOpInterface>(op);
}

bool FusedOp::isFusibleReduction(Operation *op) {
  if (op->getNumResults() != 1 || !isF32Tensor(op->getResult(0).getType()))
    return false;
  if (auto g = dyn_cast<BinaryGradOp>(op))
    return g.getType() != g.getDout().getType() &&
           isF32Tensor(g.getDout().getType()) &&
           isF32Tensor(g.getLhs().getType()) &&
           isF32Tensor(g.getRhs().getType());
  return isa<ReduceSumOp, ReduceMeanOp>(op) &&
         isF32Tensor(op->getOperand(0).getType());
}

bool FusedOp::isFusibleRowOp(Operation *op) {
  if (auto ln = dyn_cast<LayerNormOp>(op)) {
    auto x = dyn_cast<RankedTensorType>(ln.getInput().getType());
    auto shape = [](Value v) {
      return cast<RankedTensorType>(v.getType()).getShape();
    };
    return isF32Tensor(x) && x.getRank() >= 1 &&
           isF32Tensor(ln.getGamma().getType()) &&
           isF32Tensor(ln.getBeta().getType()) &&
           shape(ln.getGamma()) == x.getShape().take_back() &&
           shape(ln.getBeta()) == x.getShape().take_back();
  }
  if (auto rms = dyn_cast<RmsNormOp>(op)) {
    auto x = dyn_cast<RankedTensorType>(rms.getInput().getType());
    return isF32Tensor(x) && x.getRank() >= 1 &&
           isF32Tensor(rms.getWeight().getType()) &&
           cast<RankedTensorType>(rms.getWeight().getType()).getShape() ==
               x.getShape().take_back();
  }
  if (auto sm = dyn_cast<SoftmaxOp>(op)) {
    auto x = dyn_cast<RankedTensorType>(sm.getInput().getType());
    return isF32Tensor(x) && x.getRank() >= 1 &&
           resolveAxis(sm.getAxis(), x.getRank()) == x.getRank() - 1;
  }
  return false;
}

int64_t FusedOp::getRowPeriod(Type type, ArrayRef<int64_t> iteration) {
  ArrayRef<int64_t> in = cast<RankedTensorType>(type).getShape();
  int64_t n = 1;
  for (int64_t d : in)
    n *= d;
  if (n == 1)
    return 0;
  if (iteration.empty() || in.empty() || in.size() > iteration.size() ||
      in.back() != iteration.back())
    return -1;
  // Leading dimensions: 1 (or absent) up to some point, the iteration's
  // own from there on, so that its rows repeat in the iteration's order.
  const size_t lead = iteration.size() - in.size();
  int64_t period = 1;
  bool full = false;
  for (size_t d = 0; d + 1 < iteration.size(); ++d) {
    int64_t extent = d < lead ? 1 : in[d - lead];
    if (full || (extent != 1 && extent == iteration[d])) {
      if (extent != iteration[d])
        return -1;
      full = true;
      period *= extent;
    } else if (extent != 1) {
      return -1;
    }
  }
  return period;
}

Operation *FusedOp::getRowOp() {
  for (Operation &op : getBody().front().without_terminator())
    if (isFusibleRowOp(&op))
      return &op;
  return nullptr;
}

Operation *FusedOp::getRowRounding(Operation *rowOp) {
  if (!rowOp->hasOneUse())
    return nullptr;
  auto c = dyn_cast<CastOp>(*rowOp->getUsers().begin());
  return c && c.getType().getElementType().isBF16() ? c.getOperation()
                                                    : nullptr;
}

Value FusedOp::reducedValue(Operation *reduction) {
  if (auto g = dyn_cast<BinaryGradOp>(reduction))
    return g.getDout();
  return reduction->getOperand(0);
}

SmallVector<bool> FusedOp::keptDimensions(Operation *reduction,
                                          ArrayRef<int64_t> iteration) {
  const size_t rank = iteration.size();
  SmallVector<bool> kept(rank, true);
  if (auto g = dyn_cast<BinaryGradOp>(reduction)) {
    // The operand's dimensions align with the last ones (NumPy); it was
    // broadcast along those it lacks or has as 1.
    ArrayRef<int64_t> operand = g.getType().getShape();
    size_t lead = rank - std::min(rank, operand.size());
    for (size_t d = 0; d < rank; ++d)
      kept[d] = d >= lead && operand[d - lead] == iteration[d];
    return kept;
  }
  ArrayRef<int64_t> axes =
      isa<ReduceSumOp>(reduction) ? cast<ReduceSumOp>(reduction).getAxes()
                                  : cast<ReduceMeanOp>(reduction).getAxes();
  for (int64_t a : axes)
    if (a >= 0 && static_cast<size_t>(a) < rank)
      kept[a] = false;
  return kept;
}

namespace {

/// The shape `inputs` broadcast to, NumPy's way; where one does not
/// broadcast with those before it, its index in `conflict`.
SmallVector<int64_t> broadcastShape(TypeRange inputs,
                                    std::optional<size_t> *conflict) {
  SmallVector<int64_t> shape;
  for (auto [i, t] : llvm::enumerate(inputs)) {
    ArrayRef<int64_t> in = cast<RankedTensorType>(t).getShape();
    if (in.size() > shape.size())
      shape.insert(shape.begin(), in.size() - shape.size(), 1);
    size_t lead = shape.size() - in.size();
    for (size_t d = 0; d < in.size(); ++d) {
      int64_t &out = shape[lead + d];
      if (out == 1) {
        out = in[d];
      } else if (in[d] != 1 && in[d] != out) {
        if (conflict)
          *conflict = i;
        return {};
      }
    }
  }
  return shape;
}

} // namespace

SmallVector<int64_t> FusedOp::getIterationShape() {
  return broadcastShape(getInputs().getTypes(), nullptr);
}

LogicalResult FusedOp::verify() {
  if (getNumResults() == 0)
    return emitOpError("has no results");
  if (getNumOperands() == 0)
    return emitOpError("has no inputs");
  // The kernels compute in f32; operands may be stored in bf16.
  for (Type t : llvm::concat<Type>(getInputs().getTypes(), getResultTypes()))
    if (!isStorageTensor(t))
      return emitOpError("takes and makes f32 or bf16 tensors, not ") << t;
  std::optional<size_t> conflict;
  broadcastShape(getInputs().getTypes(), &conflict);
  if (conflict)
    return emitOpError("input ")
           << *conflict << " of type " << getInputs()[*conflict].getType()
           << " does not broadcast with the inputs before it";
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
  Type iteration = RankedTensorType::get(getIterationShape(),
                                         Float32Type::get(getContext()));
  auto yield = cast<FusedYieldOp>(body.getTerminator());
  // A region runs row by row where it ends in an op of each row: one such
  // op, no sums (they would split other dimensions), inputs a kernel of
  // rows reads (all of the iteration shape, a row, an element).
  Operation *rowOp = getRowOp();
  for (Operation &op : body.without_terminator()) {
    if (rowOp && &op != rowOp &&
        (isFusibleRowOp(&op) || isFusibleReduction(&op)))
      return op.emitOpError("cannot end a fused region that ends in ")
             << rowOp->getName();
    if (isFusibleRowOp(&op)) {
      if (op.getOperand(0).getType() != iteration)
        return op.emitOpError("normalizes ")
               << op.getOperand(0).getType()
               << " in a fused region that iterates over " << iteration;
      // Its rows are stored as they are, or rounded to bf16 as they are
      // stored (the rounding's f32 row kept apart, so not too wide).
      Operation *rounding = getRowRounding(&op);
      if (rounding) {
        if (llvm::any_of(rounding->getUsers(),
                         [&](Operation *u) { return u != yield; }))
          return rounding->emitOpError(
              "rounds the rows of a fused region's row op: only the "
              "region's yield may read it");
        const int64_t width =
            cast<RankedTensorType>(iteration).getShape().back();
        if (width > kMaxRoundedRowWidth)
          return rounding->emitOpError("rounds rows of ")
                 << width << " elements, more than the " << kMaxRoundedRowWidth
                 << " a fused region keeps apart";
      } else if (llvm::any_of(op.getUsers(),
                              [&](Operation *u) { return u != yield; })) {
        return op.emitOpError("ends a fused region's chain: only the "
                              "region's yield, or its rounding to bf16, may "
                              "read its rows");
      }
      if (auto ln = dyn_cast<LayerNormOp>(op);
          ln && !(isa<BlockArgument>(ln.getGamma()) &&
                  isa<BlockArgument>(ln.getBeta())))
        return op.emitOpError("takes its scale and shift from the region's "
                              "inputs");
      if (auto rms = dyn_cast<RmsNormOp>(op);
          rms && !isa<BlockArgument>(rms.getWeight()))
        return op.emitOpError("takes its weight from the region's inputs");
      continue;
    }
    if (isFusibleReduction(&op)) {
      if (reducedValue(&op).getType() != iteration)
        return op.emitOpError("sums ")
               << reducedValue(&op).getType()
               << " in a fused region that iterates over " << iteration;
      if (llvm::any_of(op.getUsers(),
                       [&](Operation *u) { return u != yield; }))
        return op.emitOpError("ends a fused region's chain: only the "
                              "region's yield may read its sums");
      continue;
    }
    if (!isFusible(&op))
      return op.emitOpError("cannot be part of a fused region");
    // The widening of an input converts it as it is read, at its shape.
    auto c = dyn_cast<CastOp>(op);
    if (c && isa<BlockArgument>(c.getInput()) &&
        c.getInput().getType().getShape() == c.getType().getShape())
      continue;
    if (asF32(op.getResult(0).getType()) != iteration)
      return op.emitOpError("makes ")
             << op.getResult(0).getType()
             << " in a fused region that iterates over " << iteration;
  }
  if (rowOp)
    for (auto [i, t] : llvm::enumerate(getInputs().getTypes()))
      if (!isRowCompatible(t, cast<RankedTensorType>(iteration).getShape()))
        return emitOpError("input ")
               << i << " of type " << t
               << " is neither the iteration shape, rows that repeat along "
                  "it, nor one element, as a region of rows needs";
  if (yield.getNumOperands() != getNumResults())
    return emitOpError("body yields ")
           << yield.getNumOperands() << " values for " << getNumResults()
           << " results";
  for (auto [i, v, t] :
       llvm::enumerate(yield.getValues(), getResultTypes())) {
    if (v.getType() != t)
      return emitOpError("result ") << i << " has type " << t
                                    << " but the body yields " << v.getType();
    // Only a sum's result may be smaller than the iteration shape.
    Operation *def = v.getDefiningOp();
    if (asF32(t) != iteration && !(def && isFusibleReduction(def)))
      return emitOpError("result ")
             << i << " of type " << t << " is neither the iteration shape "
             << iteration << " nor a sum ending the chain";
  }
  return success();
}

int64_t FusedOp::getFlops() {
  int64_t flops = 0;
  for (Operation &op : getBody().front().without_terminator())
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops = saturatingAdd(flops, cost.getFlops());
  return flops;
}

int64_t FusedOp::getBytesRead() {
  // An input only some gradient formula names but none computes with (a
  // sum's addends, beside its output's gradient) is never loaded.
  int64_t bytes = 0;
  Block &body = getBody().front();
  for (BlockArgument a : body.getArguments())
    if (llvm::any_of(a.getUses(), [](OpOperand &use) {
          return readsOperand(use.getOwner(), use.getOperandNumber());
        }))
      bytes = saturatingAdd(bytes, tensorBytes(a.getType()));
  return bytes;
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
    if (auto ln = dyn_cast<LayerNormOp>(op))
      os << ".eps" << ln.getEps().convertToDouble();
    if (auto rms = dyn_cast<RmsNormOp>(op))
      os << ".eps" << rms.getEps().convertToDouble();
    // Which way a cast converts: the region's inputs' types say it for
    // casts of inputs, not for casts of values made inside.
    if (auto c = dyn_cast<CastOp>(op))
      os << "." << c.getType().getElementType();
    // A sum's axes pick its kernel where the types alone would not.
    if (isa<ReduceSumOp, ReduceMeanOp>(op)) {
      os << ".";
      llvm::interleave(
          op.getAttrOfType<DenseI64ArrayAttr>("axes").asArrayRef(), os, "_");
      if (op.hasAttr("keepdim"))
        os << "k";
    }
    os << "(";
    numbers(op.getOperands());
    os << ") ";
    number[op.getResult(0)] = static_cast<int64_t>(number.size());
  }
  os << "| ";
  numbers(body.getTerminator()->getOperands());
  return s;
}

//===----------------------------------------------------------------------===//
// Linear layers with their epilogues
//===----------------------------------------------------------------------===//

/// amp's storage in an epilogue op: `operands` all f32 or all bf16 (a GEMM
/// takes both its operands in one precision).
static LogicalResult expectOnePrecision(Operation *op,
                                        ArrayRef<RankedTensorType> operands) {
  const bool bf16 = operands.front().getElementType().isBF16();
  for (RankedTensorType t : operands) {
    Type e = t.getElementType();
    if (!(bf16 ? e.isBF16() : e.isF32()))
      return op->emitOpError()
             << "takes its product's operands all f32 or all bf16 (amp's "
                "storage), got "
             << t;
  }
  return success();
}

/// A tensor the op keeps in fp32 whatever its operands (a bias, a
/// parameter's gradient).
static LogicalResult expectF32(Operation *op, RankedTensorType t,
                               StringRef what) {
  if (!t.getElementType().isF32())
    return op->emitOpError() << what << " must be f32, got " << t;
  return success();
}

/// A result stored as f32, or as bf16 where the product's operands are
/// bf16 (rounded once, at the store).
static LogicalResult expectStoredAs(Operation *op, RankedTensorType t,
                                    bool bf16Operands, StringRef what) {
  Type e = t.getElementType();
  if (e.isF32() || (bf16Operands && e.isBF16()))
    return success();
  return op->emitOpError() << what << " must be f32"
                           << (bf16Operands ? " or bf16" : "") << ", got " << t;
}

/// `t`'s shape with f32 elements.
static RankedTensorType withF32(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape(), Float32Type::get(t.getContext()));
}

/// `t`'s shape with bf16 elements.
static RankedTensorType withBf16(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape(), BFloat16Type::get(t.getContext()));
}

LogicalResult LinearOp::verify() {
  RankedTensorType x = getInput().getType(), w = getWeight().getType(),
                   b = getBias().getType();
  if (w.getRank() != 2)
    return emitOpError() << "weight " << w << " must be a matrix";
  if (failed(expectOnePrecision(*this, {x, w})) ||
      failed(expectF32(*this, b, "bias")))
    return failure();
  const bool bf16 = x.getElementType().isBF16();
  FailureOr<SmallVector<int64_t>> shape = matmulResultShape(
      *this, x, w, /*transposeLhs=*/false, getTransposeWeight());
  if (failed(shape))
    return failure();
  if (b.getRank() != 1 || b.getDimSize(0) != shape->back())
    return emitOpError() << "bias " << b << " must be [" << shape->back()
                         << "], one value a column";
  if (failed(verify::expectShape(*this, *shape, getResult().getType(),
                                 "result")) ||
      failed(expectStoredAs(*this, getResult().getType(), bf16, "result")))
    return failure();
  if (Value pre = getPreactivation()) {
    if (!getGelu())
      return emitOpError("has a preactivation only with gelu");
    // Kept in fp32 for the GELU's gradient, or stored like the result.
    if (pre.getType() != getResult().getType() &&
        pre.getType() != withF32(getResult().getType()))
      return emitOpError() << "preactivation " << pre.getType()
                           << " must be the result's type, or its shape "
                              "in f32";
  }
  return success();
}

LogicalResult LinearWeightGradOp::verify() {
  RankedTensorType x = getInput().getType(), dy = getDout().getType();
  if (failed(expectOnePrecision(*this, {x, dy})) ||
      failed(expectF32(*this, getDweight().getType(), "dweight")) ||
      failed(expectF32(*this, getDbias().getType(), "dbias")))
    return failure();
  if (x.getRank() < 2 || dy.getRank() != x.getRank() ||
      x.getShape().drop_back() != dy.getShape().drop_back())
    return emitOpError() << "input " << x << " and dout " << dy
                         << " must share every dimension but the last";
  const int64_t k = x.getShape().back(), n = dy.getShape().back();
  SmallVector<int64_t> weight = {k, n};
  if (getTransposeWeight())
    std::swap(weight[0], weight[1]);
  if (failed(verify::expectShape(*this, weight, getDweight().getType(),
                                 "dweight")))
    return failure();
  return verify::expectShape(*this, {n}, getDbias().getType(), "dbias");
}

LogicalResult GeluMatmulGradOp::verify() {
  RankedTensorType pre = getPreactivation().getType(),
                   w = getWeight().getType(), dy = getDout().getType();
  if (failed(expectOnePrecision(*this, {w, dy})) ||
      failed(expectStoredAs(*this, pre, w.getElementType().isBF16(),
                            "preactivation")))
    return failure();
  if (w.getRank() != 2)
    return emitOpError() << "weight " << w << " must be a matrix";
  // The preactivation may be stored in another precision than the product's
  // operands: only the shapes need to fit.
  FailureOr<SmallVector<int64_t>> shape =
      matmulResultShape(*this, withF32(pre), withF32(w), /*transposeLhs=*/false,
                        getTransposeWeight());
  if (failed(shape) || failed(verify::expectShape(*this, *shape, dy, "dout")))
    return failure();
  if (getResult().getType() != pre)
    return emitOpError() << "result " << getResult().getType()
                         << " must be the preactivation's type " << pre;
  return success();
}

/// A rounding of `x`'s shape to bf16 and an f32 sum over its leading
/// dimensions (round_and_sum's results, and those of the gradients fused
/// with it).
static LogicalResult expectRoundedAndSummed(Operation *op, RankedTensorType x,
                                            RankedTensorType r,
                                            RankedTensorType s, StringRef what,
                                            StringRef whose) {
  if (failed(expectF32(op, s, "sum")))
    return failure();
  if (r != withBf16(x))
    return op->emitOpError() << "rounded " << r << " must be the " << whose
                             << " shape in bf16, " << withBf16(x);
  // A sum over leading dimensions: the trailing ones are the sum's.
  if (s.getRank() < 1 || s.getRank() >= x.getRank() ||
      x.getShape().take_back(s.getRank()) != s.getShape())
    return op->emitOpError()
           << "sum " << s << " must be the " << whose << " last "
           << "dimensions (the " << what << " " << x
           << " summed over one leading dimension at least)";
  return success();
}

LogicalResult RoundAndSumOp::verify() {
  RankedTensorType x = getInput().getType();
  if (failed(expectF32(*this, x, "input")))
    return failure();
  return expectRoundedAndSummed(*this, x, getRounded().getType(),
                                getSum().getType(), "input", "input's");
}

LogicalResult RoundedCrossEntropyGradOp::verify() {
  RankedTensorType logits = getLogits().getType(), dloss = getDloss().getType();
  if (failed(expectStoredAs(*this, logits, /*bf16Operands=*/true, "logits")) ||
      failed(expectF32(*this, dloss, "dloss")))
    return failure();
  if (logits.getRank() < 2)
    return emitOpError() << "logits " << logits
                         << " need a row dimension and the class dimension";
  ArrayRef<int64_t> batch = logits.getShape().drop_back();
  if (getLabels().getType().getShape() != batch || dloss.getShape() != batch)
    return emitOpError() << "labels " << getLabels().getType() << " and dloss "
                         << dloss
                         << " must be the logits without their class "
                            "dimension";
  return expectRoundedAndSummed(*this, logits, getRounded().getType(),
                                getSum().getType(), "logits", "logits'");
}
