//===- GemmEpilogues.cpp - -whale-gemm-epilogues --------------------------===//
//
// A linear layer's matmul, its bias and its GELU as one whale.linear, which
// a GPU runs as one cuBLASLt GEMM with a bias (and GELU) epilogue: the
// product is never written out and read back by an element kernel. In the
// backward, a weight's gradient takes the bias gradient that reads the same
// output gradient (whale.linear_weight_grad), and an input's gradient takes
// the gradient of the GELU that made the input (whale.gelu_matmul_grad).
// A layernorm's input gradient takes the residual gradient it is added to
// (whale.layernorm_grad's `plus`), so the sum is not a pass of its own.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/IdentityGradients.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/Threading.h"
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

/// The ops a fusion has erased, so that the lists the pass's one walk
/// collected skip them (their memory may hold a new op by then).
using Erased = llvm::DenseSet<Operation *>;

void eraseOp(Operation *op, Erased &erased) {
  erased.insert(op);
  op->erase();
}

/// Whether `user` reads `add`'s operands only for their shapes: the gradient of
/// a sum reads its operands' shapes, never their values, so it can read the
/// fused op's result in the product's place.
bool readsOnlyTheShape(Operation *user, AddOp add) {
  auto g = dyn_cast<BinaryGradOp>(user);
  return g && g.getKind() == BinaryKind::add && g.getLhs() == add.getLhs() &&
         g.getRhs() == add.getRhs();
}

/// Fuses `m` with the bias add that is its only value reader, and the GELU
/// that is the sum's, where they are; false where the chain is not one.
bool fuse(MatmulOp m, Erased &erased) {
  Value x = m.getLhs(), w = m.getRhs(), z = m.getResult();
  if (m.getTransposeLhs() ||
      cast<RankedTensorType>(w.getType()).getRank() != 2 || !isF32(x) ||
      !isF32(w) || !isF32(z))
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

  OpBuilder b(add);
  SmallVector<Type> types = {z.getType()};
  if (keepSum)
    types.push_back(z.getType());
  auto linear = LinearOp::create(b, add.getLoc(), types, x, w, bias,
                                 m.getTransposeRhs(), gelu != nullptr);
  Value pre = keepSum ? linear.getPreactivation() : Value();
  for (Operation *user : llvm::make_early_inc_range(z.getUsers()))
    if (user != add)
      user->setOperand(zSide, linear.getResult());
  if (gelu) {
    gelu.getResult().replaceAllUsesWith(linear.getResult());
    eraseOp(gelu, erased);
    if (pre)
      sum.replaceAllUsesWith(pre);
  } else {
    sum.replaceAllUsesWith(linear.getResult());
  }
  eraseOp(add, erased);
  eraseOp(m, erased);
  return true;
}

bool isMatrix(Value v) {
  return cast<RankedTensorType>(v.getType()).getRank() == 2;
}

/// Whether every reader of `values` stands after `place` (both in one
/// block; a reader nested in a region counts where its ancestor stands).
bool readAfter(ValueRange values, Operation *place) {
  Block *block = place->getBlock();
  for (Value v : values)
    for (Operation *user : v.getUsers()) {
      Operation *at = block->findAncestorOpInBlock(*user);
      if (!at || !place->isBeforeInBlock(at))
        return false;
    }
  return true;
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

/// Fuses a weight's gradient with a bias gradient of the same output
/// gradient; false where there is none.
bool fuseWeightGrad(MatmulGradOp g, Erased &erased) {
  Value x = g.getLhs(), w = g.getRhs(), dy = g.getDout();
  if (g.getOperand() != 1 || g.getTransposeLhs() || !isMatrix(w) || !isF32(x) ||
      !isF32(w) || !isF32(dy) || !isF32(g.getResult()))
    return false;
  BinaryGradOp bias;
  for (Operation *user : dy.getUsers())
    if (auto b = dyn_cast<BinaryGradOp>(user);
        b && b->getBlock() == g->getBlock() && sumsRowsOf(b, dy)) {
      bias = b;
      break;
    }
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
/// input's gradient does not read it).
bool fuseGeluGrad(UnaryGradOp u, Erased &erased) {
  auto g = u.getDy().getDefiningOp<MatmulGradOp>();
  if (u.getKind() != UnaryKind::gelu || !g || g.getOperand() != 0 ||
      g.getTransposeLhs() || !g->hasOneUse() ||
      g->getBlock() != u->getBlock() || !isMatrix(g.getRhs()) ||
      !isF32(g.getRhs()) || !isF32(g.getDout()) || !isF32(u.getX()) ||
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

/// Whether `v` is available at `at`: a block argument of its block, or
/// made before it there.
bool availableAt(Value v, Operation *at) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == at->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == at->getBlock() && def->isBeforeInBlock(at);
}

/// `add r, dx` where dx is a layernorm's input gradient read by the sum
/// alone: one layernorm_grad with `plus r`. It stands where the sum stood
/// where dgamma and dbeta are read only after that, else where the
/// layernorm's gradient stood where r is made before it.
bool fuseResidual(AddOp add, Value dx, Value residual, Erased &erased) {
  auto ln = dx.getDefiningOp<LayerNormGradOp>();
  if (!ln || ln.getDx() != dx || ln.getResidual() || !dx.hasOneUse() ||
      !isF32(add.getResult()) || residual.getType() != dx.getType() ||
      add.getResult().getType() != dx.getType() ||
      ln->getBlock() != add->getBlock())
    return false;
  Operation *at = nullptr;
  if (readAfter({ln.getDgamma(), ln.getDbeta()}, add))
    at = add;
  else if (availableAt(residual, ln))
    at = ln;
  if (!at)
    return false;
  OpBuilder b(at);
  auto fused = LayerNormGradOp::create(b, ln.getLoc(), ln.getX(), ln.getGamma(),
                                       ln.getDy(), residual, ln.getEpsAttr());
  add.getResult().replaceAllUsesWith(fused.getDx());
  ln.getDgamma().replaceAllUsesWith(fused.getDgamma());
  ln.getDbeta().replaceAllUsesWith(fused.getDbeta());
  eraseOp(add, erased);
  eraseOp(ln, erased);
  return true;
}

/// Either operand of the sum as the layernorm's gradient.
bool fuseResidual(AddOp add, Erased &erased) {
  return fuseResidual(add, add.getRhs(), add.getLhs(), erased) ||
         fuseResidual(add, add.getLhs(), add.getRhs(), erased);
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
  for (AddOp a : sums)
    if (live(a))
      fuseResidual(a, erased);
}

struct GemmEpilogues
    : public whale::impl::WhaleGemmEpiloguesBase<GemmEpilogues> {
  void runOnOperation() override {
    // Every fusion stays within its function, and functions are isolated
    // from each other: they fuse side by side on the context's threads.
    SmallVector<Operation *> isolated;
    for (Operation &op : getOperation().getBody()->getOperations())
      if (op.hasTrait<OpTrait::IsIsolatedFromAbove>())
        isolated.push_back(&op);
      else
        fuseWithin(&op);
    parallelForEach(&getContext(), isolated, fuseWithin);
  }
};

} // namespace
