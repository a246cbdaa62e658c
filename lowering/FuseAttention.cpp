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
  if (softmax.getAxis() != -1 && softmax.getAxis() != rank - 1)
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

struct FuseAttentionPass
    : public whale::impl::WhaleFuseAttentionBase<FuseAttentionPass> {
  void runOnOperation() override {
    SmallVector<MatmulOp> candidates;
    getOperation().walk([&](MatmulOp m) { candidates.push_back(m); });
    for (MatmulOp m : candidates)
      fuse(m);
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
