//===- GenerationFunctions.cpp - a model's logits, whole or a step --------===//
//
// Each value of the logits function either varies with the position (it
// has a time axis: where the tokens' T went) and the text (a batch axis:
// where their B went), or does not (parameters and what is computed from
// them alone). The step clones each op with both axes one row long, which
// every op below allows because it treats each position of each text
// alone; an op that would read across positions or texts is refused.
//
//===----------------------------------------------------------------------===//

#include "lib/compile/GenerationFunctions.h"

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/raw_ostream.h"

namespace whale {

namespace {

constexpr int64_t kNone = -1; ///< a value the same at every position

/// Where an op is, for a refusal.
std::string where(mlir::Operation *op) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "'" << op->getName() << "' at " << op->getLoc();
  return s;
}

/// The two axes a step cuts to one row: where the tokens' T went (the
/// position) and where their B went (the text: a step reads one).
enum AxisKind { kTime = 0, kBatch = 1 };

struct Axes {
  int64_t of[2] = {kNone, kNone};
  bool any() const { return of[kTime] != kNone || of[kBatch] != kNone; }
};

class DecodeBuilder {
public:
  DecodeBuilder(mlir::func::FuncOp logits, DecodeFunction &out)
      : logits(logits), out(out), b(logits.getContext()) {}

  std::string build();

private:
  /// `v`'s type with its time and batch axes one row long.
  static mlir::RankedTensorType stepType(mlir::Value v, Axes a) {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    llvm::SmallVector<int64_t> shape(t.getShape());
    for (int64_t axis : a.of)
      if (axis != kNone)
        shape[axis] = 1;
    return mlir::RankedTensorType::get(shape, t.getElementType());
  }
  Axes axesOf(mlir::Value v) const {
    auto it = axes.find(v);
    return it == axes.end() ? Axes() : it->second;
  }
  /// Where `axis` of operand `i` of `op` lands in its one result, or
  /// nothing where the op reads across that axis.
  std::optional<int64_t> through(mlir::Operation *op, unsigned i,
                                 int64_t axis) const;
  /// The clone of `op` on the step's values, its results' axes `at`.
  void cloneWithAxes(mlir::Operation *op, llvm::ArrayRef<Axes> at);
  std::string positionWise(mlir::Operation *op);
  std::string attention(AttentionOp op);
  std::string rope(RopeOp op);

  mlir::func::FuncOp logits;
  DecodeFunction &out;
  mlir::OpBuilder b;
  mlir::func::FuncOp step;
  mlir::IRMapping map;
  llvm::DenseMap<mlir::Value, Axes> axes; ///< the logits fn's values
  mlir::Value position;
  llvm::SmallVector<mlir::Value> newCaches;
};

int64_t rankOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType()).getRank();
}

bool isElementwise(mlir::Operation *op) {
  return mlir::isa<AddOp, SubOp, MulOp, DivOp, CastOp,
                   ScalarFormulaOpInterface>(op) ||
         op->hasTrait<mlir::OpTrait::SameOperandsAndResultType>();
}

// The time axis survives a reshape where the dimensions before it keep
// their product and it keeps its extent: [B, T, D] -> [B, T, H, E] and
// back; so does the batch's.
std::optional<int64_t> reshaped(ReshapeOp op, int64_t axis) {
  llvm::ArrayRef<int64_t> in = op.getInput().getType().getShape(),
                          res = op.getType().getShape();
  int64_t before = 1;
  for (int64_t d = 0; d < axis; ++d)
    before *= in[d];
  int64_t prefix = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(res.size()); ++d) {
    if (prefix == before && res[d] == in[axis])
      return d;
    prefix *= res[d];
  }
  return std::nullopt;
}

std::optional<int64_t> DecodeBuilder::through(mlir::Operation *op, unsigned i,
                                              int64_t axis) const {
  const int64_t rank = rankOf(op->getOperand(i));
  if (mlir::isa<EmbeddingOp>(op))
    return i == 1 ? std::optional<int64_t>(axis) : std::nullopt;
  if (auto m = mlir::dyn_cast<MatmulOp>(op)) {
    if (i != 0 || m.getTransposeLhs() || axis == rank - 1)
      return std::nullopt;
    return axis + m.getType().getRank() - rank;
  }
  if (mlir::isa<RmsNormOp, LayerNormOp>(op))
    return i == 0 && axis != rank - 1 ? std::optional<int64_t>(axis)
                                      : std::nullopt;
  if (auto t = mlir::dyn_cast<TransposeOp>(op)) {
    llvm::ArrayRef<int64_t> perm = t.getPermutation();
    return static_cast<int64_t>(llvm::find(perm, axis) - perm.begin());
  }
  if (auto r = mlir::dyn_cast<ReshapeOp>(op))
    return reshaped(r, axis);
  if (isElementwise(op))
    return axis + rankOf(op->getResult(0)) - rank;
  return std::nullopt;
}

void DecodeBuilder::cloneWithAxes(mlir::Operation *op,
                                  llvm::ArrayRef<Axes> at) {
  mlir::Operation *clone = b.clone(*op, map);
  for (auto [r, a] : llvm::zip(op->getResults(), at)) {
    axes[r] = a;
    if (a.any())
      clone->getResult(r.getResultNumber()).setType(stepType(r, a));
  }
}

// An op of one result that treats each position (and each text) alone:
// each axis lands where `through` says, the same from every operand that
// has it. An elementwise operand without it must not vary along it, but
// for a learned position table, whose row at the position it reads.
std::string DecodeBuilder::positionWise(mlir::Operation *op) {
  if (op->getNumResults() != 1 ||
      !(isElementwise(op) ||
        mlir::isa<EmbeddingOp, MatmulOp, RmsNormOp, LayerNormOp, TransposeOp,
                  ReshapeOp>(op)))
    return where(op) + " is not known to treat each position alone";
  static const char *const kWhat[] = {"positions", "the batch's texts"};
  Axes res;
  llvm::SmallVector<bool> tableRows(op->getNumOperands(), false);
  for (int kind : {kTime, kBatch}) {
    int64_t &at = res.of[kind];
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      const int64_t axis = axesOf(v).of[kind];
      if (axis == kNone)
        continue;
      std::optional<int64_t> lands = through(op, i, axis);
      if (!lands)
        return where(op) + " reads across " + kWhat[kind];
      if (at != kNone && at != *lands)
        return where(op) + " combines " + kWhat[kind] + " along two axes";
      at = *lands;
    }
    if (at == kNone || !isElementwise(op))
      continue;
    const int64_t rank = rankOf(op->getResult(0));
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
      const int64_t d = at - (rank - t.getRank());
      if (axesOf(v).of[kind] != kNone || d < 0 || t.getShape()[d] == 1)
        continue;
      // A learned position table [T, D] (what only parameters make): the
      // step reads its row at the position, looked up as an embedding's.
      if (kind == kTime && d == 0 && t.getRank() == 2 && !axesOf(v).any()) {
        tableRows[i] = true;
        continue;
      }
      return where(op) + (kind == kTime
                              ? " reads a value that differs by position but "
                                "comes from no token"
                              : " reads a value that differs by text but comes "
                                "from no token");
    }
  }
  // (An operand that must be the same at every position, a weight, a
  // table, has no axis `through` lets pass.)
  llvm::SmallVector<mlir::Value> rows;
  for (auto [i, row] : llvm::enumerate(tableRows)) {
    if (!row) {
      rows.push_back(nullptr);
      continue;
    }
    mlir::Value table = map.lookup(op->getOperand(i));
    auto t = mlir::cast<mlir::RankedTensorType>(table.getType());
    mlir::Value ids = ReshapeOp::create(
        b, op->getLoc(), mlir::RankedTensorType::get({1}, b.getI32Type()),
        position);
    rows.push_back(EmbeddingOp::create(
        b, op->getLoc(),
        mlir::RankedTensorType::get({1, t.getShape()[1]}, t.getElementType()),
        table, ids));
  }
  cloneWithAxes(op, {res});
  mlir::Operation *clone = map.lookup(op->getResult(0)).getDefiningOp();
  for (auto [i, row] : llvm::enumerate(rows))
    if (row)
      clone->setOperand(i, row);
  return "";
}

std::string DecodeBuilder::rope(RopeOp r) {
  Axes a = axesOf(r.getInput());
  if (r.getPosition() || a.of[kTime] != r.getType().getRank() - 2 ||
      a.of[kBatch] == r.getType().getRank() - 1)
    return where(r) + " turns rows that are not positions";
  auto turned =
      RopeOp::create(b, r.getLoc(), map.lookup(r.getInput()), position,
                     r.getThetaAttr(), r.getScalingAttr(), r.getInverseAttr());
  turned.getResult().setType(stepType(r.getResult(), a));
  map.map(r.getResult(), turned.getResult());
  axes[r.getResult()] = a;
  return "";
}

// q, k and v [B, H, T, E] rotated already (or [B, T, H, E], sequence-major:
// with one row, the same bytes as [B, H, 1, E], so a reshape each way): the
// caches [1, Hk, W, E] become arguments (and results) of the step.
std::string DecodeBuilder::attention(AttentionOp op) {
  const bool seqMajor = op.getSequenceMajor();
  const int64_t time = seqMajor ? 1 : 2;
  if (!op.getCausal())
    return where(op) + " is not a causal attention";
  for (mlir::Value v : {op.getQuery(), op.getKey(), op.getValue()})
    if (rankOf(v) != 4 || axesOf(v).of[kTime] != time ||
        axesOf(v).of[kBatch] != 0)
      return where(op) + " attends over operands not [B, H, T, E] or "
                         "[B, T, H, E]";
  // [1, H, 1, E] of a step's operand [1, 1, H, E] or [1, H, 1, E].
  auto headMajor = [&](mlir::Value v) -> mlir::Value {
    mlir::Value stepped = map.lookup(v);
    if (!seqMajor)
      return stepped;
    auto t = mlir::cast<mlir::RankedTensorType>(stepped.getType());
    auto to = mlir::RankedTensorType::get(
        {1, t.getShape()[2], 1, t.getShape()[3]}, t.getElementType());
    return ReshapeOp::create(b, op.getLoc(), to, stepped).getResult();
  };
  auto key = op.getKey().getType();
  auto cache =
      mlir::RankedTensorType::get({1, key.getShape()[seqMajor ? 2 : 1],
                                   key.getShape()[time], key.getShape()[3]},
                                  key.getElementType());
  mlir::Block &entry = step.getBody().front();
  mlir::Value keys = entry.addArgument(cache, op.getLoc());
  mlir::Value values = entry.addArgument(cache, op.getLoc());
  out.caches.push_back(std::vector<int64_t>(cache.getShape()));
  out.caches.push_back(std::vector<int64_t>(cache.getShape()));
  mlir::Value q = headMajor(op.getQuery());
  auto kv = KvAttentionOp::create(
      b, op.getLoc(), q.getType(), cache, cache, q, headMajor(op.getKey()),
      headMajor(op.getValue()), keys, values, position, op.getScaleAttr());
  mlir::Value result = kv.getResult();
  if (seqMajor)
    result = ReshapeOp::create(b, op.getLoc(),
                               stepType(op.getResult(), axesOf(op.getQuery())),
                               result)
                 .getResult();
  map.map(op.getResult(), result);
  axes[op.getResult()] = axesOf(op.getQuery());
  newCaches.push_back(kv.getNewKeyCache());
  newCaches.push_back(kv.getNewValueCache());
  return "";
}

std::string DecodeBuilder::build() {
  mlir::Block &body = logits.getBody().front();
  if (logits.getNumArguments() < 1)
    return "the model has no tokens input";
  mlir::Value tokens = logits.getArgument(0);
  auto tokensType = mlir::cast<mlir::RankedTensorType>(tokens.getType());
  if (tokensType.getRank() != 2)
    return "the model's tokens are not [B, T]";
  out.window = tokensType.getShape()[1];

  b.setInsertionPointAfter(logits);
  auto i32 = mlir::RankedTensorType::get({}, b.getI32Type());
  step = mlir::func::FuncOp::create(b, logits.getLoc(),
                                    (logits.getName() + "_decode").str(),
                                    b.getFunctionType({}, {}));
  step->setAttr("whale.model", b.getUnitAttr());
  mlir::Block *entry = step.addEntryBlock();
  const Axes tokenAxes{{1, 0}};
  map.map(tokens,
          entry->addArgument(stepType(tokens, tokenAxes), logits.getLoc()));
  axes[tokens] = tokenAxes;
  position = entry->addArgument(i32, logits.getLoc());
  b.setInsertionPointToStart(entry);

  for (mlir::Operation &o : body.without_terminator()) {
    mlir::Operation *op = &o;
    std::string why;
    if (llvm::none_of(op->getOperands(),
                      [&](mlir::Value v) { return axesOf(v).any(); })) {
      // Parameters and what only they make: as they are.
      cloneWithAxes(op, llvm::SmallVector<Axes>(op->getNumResults()));
    } else if (auto r = mlir::dyn_cast<RopeOp>(op)) {
      why = rope(r);
    } else if (auto a = mlir::dyn_cast<AttentionOp>(op)) {
      why = attention(a);
    } else {
      why = positionWise(op);
    }
    if (!why.empty()) {
      step.erase();
      return why;
    }
  }

  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 || axesOf(ret.getOperand(0)).of[kTime] != 1 ||
      axesOf(ret.getOperand(0)).of[kBatch] != 0) {
    step.erase();
    return "the model's logits are not [B, T, V]";
  }
  llvm::SmallVector<mlir::Value> results{map.lookup(ret.getOperand(0))};
  results.append(newCaches);
  mlir::func::ReturnOp::create(b, ret.getLoc(), results);
  step.setFunctionType(b.getFunctionType(entry->getArgumentTypes(),
                                         mlir::ValueRange(results).getTypes()));
  if (mlir::failed(mlir::verify(step))) {
    step.erase();
    return "the decoding step of '" + logits.getName().str() +
           "' does not verify";
  }
  out.fn = step;
  return "";
}

} // namespace

mlir::func::FuncOp addLogitsFunction(mlir::func::FuncOp model,
                                     std::string &error) {
  mlir::OpBuilder b(model.getContext());
  b.setInsertionPointAfter(model);
  auto fn = mlir::cast<mlir::func::FuncOp>(b.clone(*model));
  fn.setName((model.getName() + "_logits").str());
  fn->removeAttr("whale.train");
  inlineTaskGraphs(fn);
  CrossEntropyOp ce;
  fn.walk([&](CrossEntropyOp op) {
    if (fn.getNumArguments() == 2 && op.getLabels() == fn.getArgument(1))
      ce = op;
  });
  if (!ce) {
    error = "sampling needs a model whose loss is a cross entropy of its "
            "second input (the targets)";
    fn.erase();
    return nullptr;
  }
  mlir::Block &entry = fn.getBody().front();
  auto ret = mlir::cast<mlir::func::ReturnOp>(entry.getTerminator());
  ret->setOperands(ce.getLogits());
  fn.setFunctionType(
      b.getFunctionType(fn.getArgumentTypes(), {ce.getLogits().getType()}));
  llvm::SmallVector<mlir::Operation *> ops;
  for (mlir::Operation &op : entry.without_terminator())
    ops.push_back(&op);
  for (mlir::Operation *op : llvm::reverse(ops))
    if (!mlir::isa<ParamOp>(op) && mlir::isOpTriviallyDead(op))
      op->erase();
  return fn;
}

std::string addDecodeFunction(mlir::func::FuncOp logits, DecodeFunction &out) {
  out = DecodeFunction();
  return DecodeBuilder(logits, out).build();
}

} // namespace whale
