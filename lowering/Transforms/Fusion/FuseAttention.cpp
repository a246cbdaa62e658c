//===- FuseAttention.cpp - -whale-fuse-attention --------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Verifier.h"

namespace whale {
#define GEN_PASS_DEF_WHALEFUSEATTENTION
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// The op defining `v` when it is an `Op` read by nothing else.
template <class Op> Op onlyUse(Value v) {
  auto op = v.getDefiningOp<Op>();
  return op && v.hasOneUse() ? op : Op();
}

/// The number a rank-0 constant holds.
std::optional<double> scalarConstant(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c || cast<RankedTensorType>(c.getType()).getRank() != 0)
    return std::nullopt;
  return c.getValue().convertToDouble();
}

/// Fuses the chain that ends in `out = matmul(p, v)`; false when it is not
/// one. The chain's ops go; the constants stay for their other readers.
bool fuse(MatmulOp out) {
  if (out.getTransposeLhs() || out.getTransposeRhs())
    return false;
  SoftmaxOp softmax = onlyUse<SoftmaxOp>(out.getLhs());
  if (!softmax)
    return false;
  const int64_t rank = softmax.getType().getRank();
  if (resolveAxis(softmax.getAxis(), rank) != rank - 1)
    return false;
  SmallVector<Operation *> chain = {softmax};
  Value logits = softmax.getInput();
  bool causal = false;
  if (auto mask = onlyUse<CausalMaskOp>(logits)) {
    causal = true;
    chain.push_back(mask);
    logits = mask->getOperand(0);
  }
  double scale = 1.0;
  if (auto mul = onlyUse<MulOp>(logits)) {
    for (int side = 0; side < 2; ++side)
      if (std::optional<double> c = scalarConstant(mul->getOperand(side))) {
        scale = *c;
        logits = mul->getOperand(1 - side);
        chain.push_back(mul);
        break;
      }
  } else if (auto div = onlyUse<DivOp>(logits)) {
    if (std::optional<double> c = scalarConstant(div->getOperand(1));
        c && *c != 0) {
      scale = 1.0 / *c;
      logits = div->getOperand(0);
      chain.push_back(div);
    }
  }
  MatmulOp scores = onlyUse<MatmulOp>(logits);
  if (!scores || scores.getTransposeLhs() || !scores.getTransposeRhs())
    return false;
  Value q = scores.getLhs(), k = scores.getRhs(), v = out.getRhs();
  auto qt = cast<RankedTensorType>(q.getType());
  if (qt.getRank() != rank || k.getType() != v.getType() ||
      out.getType() != qt || !qt.getElementType().isF32())
    return false;
  chain.push_back(scores);
  OpBuilder b(out);
  auto fused = AttentionOp::create(b, out.getLoc(), qt, q, k, v,
                                   b.getF64FloatAttr(scale),
                                   causal ? b.getUnitAttr() : UnitAttr());
  if (failed(mlir::verify(fused))) {
    fused->erase();
    return false;
  }
  out.getResult().replaceAllUsesWith(fused.getResult());
  out->erase();
  for (Operation *op : chain)
    op->erase();
  return true;
}

/// Whether `t` swaps T and H of [..., T, H, E] (the permute that splits a
/// linear layer's output into heads, and its own inverse) and nothing else.
bool swapsSequenceAndHeads(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPermutation();
  const int64_t rank = static_cast<int64_t>(perm.size());
  if (rank < 3)
    return false;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t want = i == rank - 3   ? rank - 2
                         : i == rank - 2 ? rank - 3
                                         : i;
    if (perm[i] != want)
      return false;
  }
  return true;
}

/// Folds the heads' permutes into `a`: when q, k and v are each a swap of
/// T and H read only by `a`, and `a`'s output is read only by the swap
/// back, the attention reads the unpermuted [..., T, H, E] operands and
/// writes the merged layout itself (sequence_major). GPT's split_heads and
/// merge_heads are such permutes: four transposes a layer forward and four
/// backward, which the runtime then never runs. False when `a` is not so.
bool foldHeadPermutes(AttentionOp a) {
  if (a.getSequenceMajor() || !a.getResult().hasOneUse())
    return false;
  auto merge = dyn_cast<TransposeOp>(*a.getResult().getUsers().begin());
  if (!merge || !swapsSequenceAndHeads(merge))
    return false;
  SmallVector<TransposeOp, 3> splits;
  for (Value operand : {a.getQuery(), a.getKey(), a.getValue()}) {
    TransposeOp t = onlyUse<TransposeOp>(operand);
    if (!t || !swapsSequenceAndHeads(t))
      return false;
    splits.push_back(t);
  }
  OpBuilder b(a);
  auto folded =
      AttentionOp::create(b, a.getLoc(), merge.getType(), splits[0].getInput(),
                          splits[1].getInput(), splits[2].getInput(),
                          a.getScaleAttr(), a.getCausalAttr(), b.getUnitAttr());
  if (failed(mlir::verify(folded))) {
    folded->erase();
    return false;
  }
  merge.getResult().replaceAllUsesWith(folded.getResult());
  merge->erase();
  a->erase();
  for (TransposeOp t : splits)
    t->erase();
  return true;
}

struct FuseAttentionPass
    : public whale::impl::WhaleFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> candidates;
    getOperation().walk([&](MatmulOp m) { candidates.push_back(m); });
    for (MatmulOp m : candidates)
      fuse(m);
    SmallVector<AttentionOp> fused;
    getOperation().walk([&](AttentionOp a) { fused.push_back(a); });
    for (AttentionOp a : fused)
      foldHeadPermutes(a);
    // Scale constants nobody reads any more.
    SmallVector<ConstantOp> dead;
    getOperation().walk([&](ConstantOp c) {
      if (c->use_empty())
        dead.push_back(c);
    });
    for (ConstantOp c : dead)
      c->erase();
  }
};

} // namespace
