//===- GenerationFunctions.cpp - a model's logits, whole or a step --------===//
//
// Each value of the logits function either varies with the position (it
// has a time axis: where the tokens' T went) or does not (parameters and
// what is computed from them alone). The step clones each op with that axis
// one row long, which every op below allows because it treats each
// position alone; an op that would read across positions is refused.
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

class DecodeBuilder {
public:
  DecodeBuilder(mlir::func::FuncOp logits, DecodeFunction &out)
      : logits(logits), out(out), b(logits.getContext()) {}

  std::string build();

private:
  /// `v`'s type with its time axis `rows` long.
  mlir::RankedTensorType stepType(mlir::Value v, int64_t axis) const {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    llvm::SmallVector<int64_t> shape(t.getShape());
    shape[axis] = kRows;
    return mlir::RankedTensorType::get(shape, t.getElementType());
  }
  int64_t axisOf(mlir::Value v) const {
    auto it = axes.find(v);
    return it == axes.end() ? kNone : it->second;
  }
  /// The clone of `op` on the step's values, its results' time axes `at`.
  std::string cloneWithAxes(mlir::Operation *op, llvm::ArrayRef<int64_t> at);
  std::string elementwise(mlir::Operation *op);
  std::string reshape(ReshapeOp op);
  std::string attention(AttentionOp op);

  static constexpr int64_t kRows = 1; ///< positions a step computes
  mlir::func::FuncOp logits;
  DecodeFunction &out;
  mlir::OpBuilder b;
  mlir::func::FuncOp step;
  mlir::IRMapping map;
  llvm::DenseMap<mlir::Value, int64_t> axes; ///< the logits fn's values
  mlir::Value position;
  llvm::SmallVector<mlir::Value> newCaches;
};

std::string DecodeBuilder::cloneWithAxes(mlir::Operation *op,
                                         llvm::ArrayRef<int64_t> at) {
  mlir::Operation *clone = b.clone(*op, map);
  for (auto [r, axis] : llvm::zip(op->getResults(), at)) {
    axes[r] = axis;
    if (axis != kNone)
      clone->getResult(r.getResultNumber()).setType(stepType(r, axis));
  }
  return "";
}

// Shapes broadcast from the last dimension: an operand's time axis is the
// result's at the same distance from the end. An operand without one must
// not vary along the result's (a learned position table would).
std::string DecodeBuilder::elementwise(mlir::Operation *op) {
  const int64_t rank =
      mlir::cast<mlir::RankedTensorType>(op->getResult(0).getType()).getRank();
  int64_t at = kNone;
  for (mlir::Value v : op->getOperands()) {
    const int64_t axis = axisOf(v);
    if (axis == kNone)
      continue;
    const int64_t mine =
        axis + rank - mlir::cast<mlir::RankedTensorType>(v.getType()).getRank();
    if (at != kNone && at != mine)
      return where(op) + " combines positions along two axes";
    at = mine;
  }
  for (mlir::Value v : op->getOperands()) {
    auto t = mlir::cast<mlir::RankedTensorType>(v.getType());
    const int64_t d = at - (rank - t.getRank());
    if (axisOf(v) == kNone && d >= 0 && t.getShape()[d] != 1)
      return where(op) + " reads a value that differs by position but "
                         "comes from no token (a learned position table?)";
  }
  return cloneWithAxes(op, {at});
}

// The time axis survives a reshape where the dimensions before it keep
// their product and it keeps its extent: [B, T, D] -> [B, T, H, E] and back.
std::string DecodeBuilder::reshape(ReshapeOp op) {
  const int64_t axis = axisOf(op.getInput());
  llvm::ArrayRef<int64_t> in = op.getInput().getType().getShape(),
                          res = op.getType().getShape();
  int64_t before = 1;
  for (int64_t d = 0; d < axis; ++d)
    before *= in[d];
  int64_t prefix = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(res.size()); ++d) {
    if (prefix == before && res[d] == in[axis])
      return cloneWithAxes(op, {d});
    prefix *= res[d];
  }
  return where(op) + " folds the positions into another dimension";
}

// q, k and v [B, H, T, E] rotated already: the caches [B, Hk, W, E] become
// arguments (and results) of the step.
std::string DecodeBuilder::attention(AttentionOp op) {
  if (!op.getCausal() || op.getSequenceMajor())
    return where(op) + " is not a causal attention over [B, H, T, E]";
  for (mlir::Value v : {op.getQuery(), op.getKey(), op.getValue()})
    if (mlir::cast<mlir::RankedTensorType>(v.getType()).getRank() != 4 ||
        axisOf(v) != 2)
      return where(op) + " attends over operands not [B, H, T, E]";
  auto key = op.getKey().getType();
  mlir::Block &entry = step.getBody().front();
  mlir::Value keys = entry.addArgument(key, op.getLoc());
  mlir::Value values = entry.addArgument(key, op.getLoc());
  out.caches.push_back(std::vector<int64_t>(key.getShape()));
  out.caches.push_back(std::vector<int64_t>(key.getShape()));
  auto kv = KvAttentionOp::create(
      b, op.getLoc(), stepType(op.getQuery(), 2), keys.getType(),
      keys.getType(), map.lookup(op.getQuery()), map.lookup(op.getKey()),
      map.lookup(op.getValue()), keys, values, position, op.getScaleAttr());
  map.map(op.getResult(), kv.getResult());
  axes[op.getResult()] = 2;
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
  map.map(tokens, entry->addArgument(stepType(tokens, 1), logits.getLoc()));
  axes[tokens] = 1;
  position = entry->addArgument(i32, logits.getLoc());
  for (mlir::BlockArgument a : logits.getArguments().drop_front())
    axes[a] = kNone; // the targets: read by nothing that is kept
  b.setInsertionPointToStart(entry);

  auto refuse = [&](std::string why) {
    step.erase();
    return why;
  };
  for (mlir::Operation &o : body.without_terminator()) {
    mlir::Operation *op = &o;
    const bool varies = llvm::any_of(
        op->getOperands(), [&](mlir::Value v) { return axisOf(v) != kNone; });
    std::string why;
    if (!varies) {
      // Parameters and what only they make: as they are.
      why = cloneWithAxes(
          op, llvm::SmallVector<int64_t>(op->getNumResults(), kNone));
    } else if (auto e = mlir::dyn_cast<EmbeddingOp>(op)) {
      why = axisOf(e.getTable()) != kNone
                ? where(op) + " looks up in a table that differs by position"
                : cloneWithAxes(op, {axisOf(e.getIds())});
    } else if (auto m = mlir::dyn_cast<MatmulOp>(op)) {
      const int64_t axis = axisOf(m.getLhs());
      const int64_t lhsRank = m.getLhs().getType().getRank();
      if (axisOf(m.getRhs()) != kNone || m.getTransposeLhs() ||
          axis == lhsRank - 1)
        why = where(op) + " multiplies across positions";
      else
        why = cloneWithAxes(op, {axis + m.getType().getRank() - lhsRank});
    } else if (mlir::isa<RmsNormOp, LayerNormOp>(op)) {
      const int64_t axis = axisOf(op->getOperand(0));
      const bool whole =
          llvm::all_of(op->getOperands().drop_front(),
                       [&](mlir::Value v) { return axisOf(v) == kNone; });
      why = !whole || axis == mlir::cast<mlir::RankedTensorType>(
                                  op->getOperand(0).getType())
                                      .getRank() -
                                  1
                ? where(op) + " normalizes across positions"
                : cloneWithAxes(op, {axis});
    } else if (auto r = mlir::dyn_cast<RopeOp>(op)) {
      const int64_t axis = axisOf(r.getInput());
      if (r.getPosition() || axis != r.getType().getRank() - 2) {
        why = where(op) + " turns rows that are not positions";
      } else {
        auto turned = RopeOp::create(b, r.getLoc(), map.lookup(r.getInput()),
                                     position, r.getThetaAttr(),
                                     r.getScalingAttr(), r.getInverseAttr());
        turned.getResult().setType(stepType(r.getResult(), axis));
        map.map(r.getResult(), turned.getResult());
        axes[r.getResult()] = axis;
      }
    } else if (auto t = mlir::dyn_cast<TransposeOp>(op)) {
      const int64_t axis = axisOf(t.getInput());
      llvm::ArrayRef<int64_t> perm = t.getPermutation();
      why = cloneWithAxes(
          op, {static_cast<int64_t>(llvm::find(perm, axis) - perm.begin())});
    } else if (auto r = mlir::dyn_cast<ReshapeOp>(op)) {
      why = reshape(r);
    } else if (auto a = mlir::dyn_cast<AttentionOp>(op)) {
      why = attention(a);
    } else if (mlir::isa<AddOp, SubOp, MulOp, DivOp, CastOp,
                         ScalarFormulaOpInterface>(op) ||
               op->hasTrait<mlir::OpTrait::SameOperandsAndResultType>()) {
      why = elementwise(op);
    } else {
      why = where(op) + " is not known to treat each position alone";
    }
    if (!why.empty())
      return refuse(why);
  }

  auto ret = mlir::cast<mlir::func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() != 1 || axisOf(ret.getOperand(0)) != 1)
    return refuse("the model's logits are not [B, T, V]");
  llvm::SmallVector<mlir::Value> results{map.lookup(ret.getOperand(0))};
  results.append(newCaches);
  mlir::func::ReturnOp::create(b, ret.getLoc(), results);
  step.setFunctionType(b.getFunctionType(entry->getArgumentTypes(),
                                         mlir::ValueRange(results).getTypes()));
  if (mlir::failed(mlir::verify(step)))
    return refuse("the decoding step of '" + logits.getName().str() +
                  "' does not verify");
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
