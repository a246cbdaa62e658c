//===- GemmEpilogues.cpp - -whale-gemm-epilogues --------------------------===//
//
// A linear layer's matmul, its bias and its GELU as one whale.linear, which
// a GPU runs as one cuBLASLt GEMM with a bias (and GELU) epilogue: the
// product is never written out and read back by an element kernel.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"

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
bool fuse(MatmulOp m) {
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
    gelu->erase();
    if (pre)
      sum.replaceAllUsesWith(pre);
  } else {
    sum.replaceAllUsesWith(linear.getResult());
  }
  add->erase();
  m->erase();
  return true;
}

struct GemmEpilogues
    : public whale::impl::WhaleGemmEpiloguesBase<GemmEpilogues> {
  void runOnOperation() override {
    SmallVector<MatmulOp> products;
    getOperation()->walk([&](MatmulOp m) { products.push_back(m); });
    for (MatmulOp m : products)
      fuse(m);
  }
};

} // namespace
