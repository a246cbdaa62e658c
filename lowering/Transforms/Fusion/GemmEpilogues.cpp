//===- GemmEpilogues.cpp - -whale-gemm-epilogues --------------------------===//
//
// A linear layer's matmul, its bias and its GELU as one whale.linear, which
// a GPU runs as one cuBLASLt GEMM with a bias (and GELU) epilogue: the
// product is never written out and read back by an element kernel. In the
// backward, a weight's gradient takes the bias gradient that reads the same
// output gradient (whale.linear_weight_grad), and an input's gradient takes
// the gradient of the GELU that made the input (whale.gelu_matmul_grad).
// A layernorm's or RMSNorm's input gradient takes the residual gradient it
// is added to (`plus`: NormResiduals.h), so the sum is not a pass of its own.
//
// Under amp's storage (after -whale-widen-bf16) the same layers read bf16
// operands: a product stored in bf16 and widened for its bias add, a GELU
// rounded for the next product, a gradient rounded for its GEMMs. The
// epilogue ops take them as they are, and compute what the ops they
// replace computed, so that a plan where a fusion does not apply (a bias
// gradient a split plan sums before the weight's) trains as one where it
// does: the preactivation stays fp32, the output is rounded once where
// every reader rounded it, and a bias gradient joins the weight's GEMM
// only where it sums the bf16 values that GEMM reads (not the fp32 ones
// they were rounded from). One change: the product is not rounded before
// its bias, as a row-parallel shard's product is not.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"
#include "lowering/TopLevelOps.h"
#include "lowering/Transforms/Fusion/IdentityGradients.h"
#include "lowering/Transforms/Fusion/NormResiduals.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

namespace whale {
#define GEN_PASS_DEF_WHALEGEMMEPILOGUES
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

bool isF32(Value v) {
  return cast<RankedTensorType>(v.getType()).getElementType().isF32();
}

bool isBf16(Value v) { return isBf16Tensor(v.getType()); }

/// Whether a GEMM's two operands are stored in one precision, f32 or bf16.
bool onePrecision(Value a, Value b) {
  return (isF32(a) && isF32(b)) || (isBf16(a) && isBf16(b));
}

/// Whether every reader of `v` (one at least) rounds it to bf16.
bool onlyRounded(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    auto c = dyn_cast<CastOp>(user);
    return c && isBf16(c.getResult());
  });
}

/// The ops a fusion has erased, so that the lists the pass's one walk
/// collected skip them, and the casts it may have left unread. An erased
/// op is unhooked from its operands at once but freed only at the end, so
/// no new op takes its memory while the lists may still name it.
struct Erased {
  llvm::DenseSet<Operation *> ops;
  SmallVector<Operation *> casts;
  bool contains(Operation *op) const { return ops.contains(op); }
  ~Erased() {
    for (Operation *op : ops)
      op->erase();
  }
};

void eraseOp(Operation *op, Erased &erased) {
  assert(op->use_empty() && "a fusion erases only what it replaced");
  for (Value v : op->getOperands())
    if (auto c = v.getDefiningOp<CastOp>())
      erased.casts.push_back(c);
  erased.ops.insert(op);
  op->dropAllReferences();
}

/// Gives `fused` (bf16) to the readers of `old`, which all round it
/// (onlyRounded): each rounding is `fused` as it is.
void replaceRounded(Value old, Value fused, Erased &erased) {
  for (Operation *user : llvm::make_early_inc_range(old.getUsers())) {
    user->getResult(0).replaceAllUsesWith(fused);
    eraseOp(user, erased);
  }
}

/// Whether `user` reads `add`'s operands only for their shapes: the gradient of
/// a sum reads its operands' shapes, never their values, so it can read its
/// own dout in the product's place.
bool readsOnlyTheShape(Operation *user, AddOp add) {
  auto g = dyn_cast<BinaryGradOp>(user);
  return g && g.getKind() == BinaryKind::add && g.getLhs() == add.getLhs() &&
         g.getRhs() == add.getRhs();
}

/// Fuses `m` with the bias add that is its only value reader, and the GELU
/// that is the sum's, where they are; false where the chain is not one.
/// On bf16 operands the product may be stored in bf16 and widened for the
/// sum alone: the fused op keeps it in fp32 instead.
bool fuse(MatmulOp m, Erased &erased) {
  Value x = m.getLhs(), w = m.getRhs(), z = m.getResult();
  if (m.getTransposeLhs() ||
      cast<RankedTensorType>(w.getType()).getRank() != 2 || !onePrecision(x, w))
    return false;
  const bool bf16 = isBf16(x);
  CastOp widen;
  if (bf16 && isBf16(z)) {
    if (!z.hasOneUse())
      return false;
    widen = dyn_cast<CastOp>(*z.getUsers().begin());
    if (!widen)
      return false;
    z = widen.getResult();
  }
  if (!isF32(z))
    return false;
  const int64_t n = cast<RankedTensorType>(z.getType()).getShape().back();
  AddOp add;
  unsigned zSide = 0;
  for (Operation *user : z.getUsers()) {
    auto a = dyn_cast<AddOp>(user);
    if (!a || add == a)
      continue;
    if (add)
      return false; // two sums: which is the layer's?
    add = a;
  }
  if (!add || add.getLhs() == add.getRhs() || add.getType() != z.getType())
    return false;
  zSide = add.getLhs() == z ? 0 : 1;
  Value bias = add->getOperand(1 - zSide);
  auto bt = cast<RankedTensorType>(bias.getType());
  if (bt.getRank() != 1 || bt.getDimSize(0) != n || !isF32(bias) ||
      add->getBlock() != m->getBlock())
    return false;
  for (Operation *user : z.getUsers())
    if (user != add && !readsOnlyTheShape(user, add))
      return false;

  Value sum = add.getResult();
  GeluOp gelu;
  for (Operation *user : sum.getUsers())
    if (auto g = dyn_cast<GeluOp>(user)) {
      if (gelu)
        return false; // two GELUs of one sum: left to the element kernels
      gelu = g;
    }
  const bool keepSum = gelu && !llvm::hasSingleElement(sum.getUses());
  // The layer's output is stored rounded where every reader rounds it
  // (the GELU before the next product); the preactivation stays fp32, as
  // the GELU's gradient read it.
  Value output = gelu ? gelu.getResult() : sum;
  const bool rounded = bf16 && onlyRounded(output);

  OpBuilder b(add);
  Type stored =
      rounded ? withElement(z.getType(), b.getBF16Type()) : z.getType();
  SmallVector<Type> types = {stored};
  if (keepSum)
    types.push_back(z.getType());
  auto linear = LinearOp::create(b, add.getLoc(), types, x, w, bias,
                                 m.getTransposeRhs(), gelu != nullptr);
  Value pre = keepSum ? linear.getPreactivation() : Value();
  if (rounded)
    replaceRounded(output, linear.getResult(), erased);
  else
    output.replaceAllUsesWith(linear.getResult());
  if (pre)
    sum.replaceAllUsesWith(pre);
  // The sum's gradients read the product for its shape: any value of its
  // type will do, and their own dout (the sum's gradient, of the sum's
  // shape and, as the verifier holds, the product's type) is one that
  // keeps no forward value alive into the backward (a bf16 output would
  // need an fp32 copy kept for them).
  for (Operation *user : llvm::make_early_inc_range(z.getUsers()))
    if (user != add)
      user->setOperand(zSide, cast<BinaryGradOp>(user).getDout());
  if (gelu)
    eraseOp(gelu, erased);
  eraseOp(add, erased);
  if (widen)
    eraseOp(widen, erased);
  eraseOp(m, erased);
  return true;
}

bool isMatrix(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank() == 2;
}

/// A sum's gradient for a bias [N] added to every row of `dy` [..., M, N]:
/// the sum of dy over its rows, whatever the sum was (the gradient reads
/// only dy, and the operands' shapes).
bool sumsRowsOf(BinaryGradOp b, Value dy) {
  if (b.getKind() != BinaryKind::add || b.getOperand() != 1 ||
      b.getDout() != dy || b.getLhs().getType() != dy.getType() ||
      !isF32(b.getResult()))
    return false;
  auto bt = cast<RankedTensorType>(b.getType());
  return bt.getRank() == 1 &&
         bt.getDimSize(0) ==
             cast<RankedTensorType>(dy.getType()).getShape().back();
}

/// The bias gradient in `g`'s block that sums the rows of `dy`, or of its
/// widening (amp's storage: the bf16 values the weight's GEMM reads, which
/// cuBLASLt's BGRAD epilogue sums).
BinaryGradOp biasGradientOf(MatmulGradOp g, Value dy) {
  SmallVector<Value, 4> sums = {dy};
  for (Operation *user : dy.getUsers())
    if (auto c = dyn_cast<CastOp>(user); c && isF32(c.getResult()))
      sums.push_back(c.getResult());
  for (Value d : sums)
    for (Operation *user : d.getUsers())
      if (auto b = dyn_cast<BinaryGradOp>(user);
          b && b->getBlock() == g->getBlock() && sumsRowsOf(b, d))
        return b;
  return {};
}

/// Fuses a weight's gradient with a bias gradient of the same output
/// gradient; false where there is none.
bool fuseWeightGrad(MatmulGradOp g, Erased &erased) {
  Value x = g.getLhs(), w = g.getRhs(), dy = g.getDout();
  if (g.getOperand() != 1 || g.getTransposeLhs() || !isMatrix(w) ||
      !onePrecision(x, dy) || !isF32(g.getResult()))
    return false;
  BinaryGradOp bias = biasGradientOf(g, dy);
  if (!bias)
    return false;
  // The fused op stands where the later of the two stood: x is made before
  // the weight's gradient and dy before both, but a plan's schedule may put
  // the bias gradient before x is made (or received). So the earlier one's
  // readers must all come after the later one.
  Operation *first = g->isBeforeInBlock(bias) ? g.getOperation() : bias;
  Operation *last =
      first == g.getOperation() ? bias.getOperation() : g.getOperation();
  if (!readAfter(first->getResults(), last))
    return false;
  OpBuilder builder(last);
  auto fused = LinearWeightGradOp::create(
      builder, g.getLoc(), TypeRange{g.getType(), bias.getType()}, x, dy,
      g.getTransposeRhs());
  g.getResult().replaceAllUsesWith(fused.getDweight());
  bias.getResult().replaceAllUsesWith(fused.getDbias());
  eraseOp(g, erased);
  eraseOp(bias, erased);
  return true;
}

/// Fuses an input's gradient with the GELU gradient that is its only
/// reader: gelu'(pre) (dout w^T), whatever the product's input was (the
/// input's gradient does not read it). On bf16 operands the gradient stays
/// fp32, as the product's was.
bool fuseGeluGrad(UnaryGradOp u, Erased &erased) {
  auto g = u.getDy().getDefiningOp<MatmulGradOp>();
  if (u.getKind() != UnaryKind::gelu || !g || g.getOperand() != 0 ||
      g.getTransposeLhs() || !g->hasOneUse() ||
      g->getBlock() != u->getBlock() || !isMatrix(g.getRhs()) ||
      !onePrecision(g.getRhs(), g.getDout()) || !isF32(u.getX()) ||
      u.getX().getType() != g.getType())
    return false;
  OpBuilder builder(u);
  auto fused =
      GeluMatmulGradOp::create(builder, u.getLoc(), u.getType(), u.getX(),
                               g.getRhs(), g.getDout(), g.getTransposeRhs());
  u.getResult().replaceAllUsesWith(fused.getResult());
  eraseOp(u, erased);
  eraseOp(g, erased);
  return true;
}

/// Every fusion within `root`. One walk collects the candidates: a large
/// pipeline's rank programs unroll hundreds of thousands of calls, and on
/// Megatron-LM's 1T plan each walk over them took about 70 ms. No fusion
/// makes an op of the kinds listed, so the lists are those separate walks
/// would find, less what a fusion before has erased.
void fuseWithin(Operation *root) {
  SmallVector<MatmulOp> products;
  SmallVector<UnaryGradOp> gelus;
  SmallVector<MatmulGradOp> weights;
  SmallVector<AddOp> sums;
  SmallVector<BinaryGradOp> copies;
  root->walk([&](Operation *op) {
    if (auto m = dyn_cast<MatmulOp>(op))
      products.push_back(m);
    else if (auto u = dyn_cast<UnaryGradOp>(op))
      gelus.push_back(u);
    else if (auto g = dyn_cast<MatmulGradOp>(op))
      weights.push_back(g);
    else if (auto a = dyn_cast<AddOp>(op))
      sums.push_back(a);
    else if (auto c = dyn_cast<BinaryGradOp>(op))
      copies.push_back(c);
  });
  Erased erased;
  auto live = [&](Operation *op) { return !erased.contains(op); };
  for (MatmulOp m : products)
    if (live(m))
      fuse(m, erased);
  // The gradients below match the output gradient they read, not a
  // sum's copy of it.
  for (BinaryGradOp c : copies)
    forwardIdentityGradient(c);
  for (UnaryGradOp u : gelus)
    if (live(u))
      fuseGeluGrad(u, erased);
  for (MatmulGradOp g : weights)
    if (live(g))
      fuseWeightGrad(g, erased);
  // (Erased at once: nothing above reads the sums or the norms' gradients.)
  for (AddOp a : sums)
    if (live(a))
      fuseNormResidual(a);
  // Under amp's storage a fusion may leave a widening or rounding unread
  // (one made for readers that fused away, or one whose reader a fused op
  // replaced); erasing one may leave the cast it reads unread in turn.
  for (size_t i = 0; i < erased.casts.size(); ++i)
    if (Operation *c = erased.casts[i]; live(c) && c->use_empty())
      eraseOp(c, erased);
}

struct GemmEpilogues
    : public whale::impl::WhaleGemmEpiloguesBase<GemmEpilogues> {
  void runOnOperation() override {
    forEachTopLevelOp(getOperation(), fuseWithin);
  }
};

} // namespace
