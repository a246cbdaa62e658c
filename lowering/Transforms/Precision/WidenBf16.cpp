//===- WidenBf16.cpp - -whale-widen-bf16 ----------------------------------===//
//
// The runtime takes bf16 only where it has a kernel for it
// (lowering/Transforms/Precision/Bf16Kernels.h). Until an op has one, it
// computes in fp32 between casts: its bf16 operands widened, its results
// rounded back to bf16 (an op whose kernel takes some of its tensors in bf16,
// attention's gradient, has only the others widened or rounded). That is what a
// native bf16 kernel does (fp32 inside, rounded at the store), so the numbers
// hold from the first day, and the conversions that run are in the IR the
// simulator prices.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"
#include "lowering/Transforms/Precision/Bf16Kernels.h"

#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALEWIDENBF16
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

/// Whether every reader of `v` widens it to fp32 (and there is one).
bool onlyWidened(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUsers(), [](Operation *user) {
    auto c = dyn_cast<CastOp>(user);
    return c && elementOf(c.getType()).isF32();
  });
}

/// Whether every reader of `v` (an fp32 value widened from bf16) would
/// take it inside a fused kernel, so the widening runs in registers as
/// the kernel loads the bf16 value.
bool readersFuse(Value v) {
  return !v.use_empty() && llvm::all_of(v.getUses(), [&](OpOperand &use) {
    Operation *user = use.getOwner();
    if (user->getBlock() != v.getParentBlock())
      return false;
    return FusedOp::isFusible(user) || FusedOp::isFusibleReduction(user) ||
           (FusedOp::isFusibleRowOp(user) && use.getOperandNumber() == 0);
  });
}

/// Whether `v` (bf16, every reader a widening cast) stays bf16 in memory
/// when fusion follows: every widened copy is read in fused kernels.
bool widenedInKernels(Value v) {
  return llvm::all_of(v.getUsers(), [](Operation *user) {
    return readersFuse(user->getResult(0));
  });
}

/// A reshape of bf16 whose every reader widens it reshapes the widened
/// value instead, so the folds below see through it (a head split between
/// a projection and an fp32 attention). Later reshapes first, so a chain
/// moves whole.
void widenBeforeReshapes(Operation *root, Type f32) {
  SmallVector<ReshapeOp> reshapes;
  root->walk([&](ReshapeOp r) {
    if (isBf16Tensor(r.getType()))
      reshapes.push_back(r);
  });
  for (ReshapeOp r : llvm::reverse(reshapes)) {
    if (!onlyWidened(r.getResult()))
      continue;
    OpBuilder b(r);
    Value input = r.getOperand();
    r->setOperand(0, CastOp::create(b, r.getLoc(),
                                    withElement(input.getType(), f32), input));
    r.getResult().setType(withElement(r.getType(), f32));
    for (Operation *user : llvm::make_early_inc_range(r->getUsers())) {
      user->getResult(0).replaceAllUsesWith(r.getResult());
      user->erase();
    }
  }
}

/// A bf16 matmul whose result every reader widens stores it in fp32 itself,
/// one rounding fewer: a weight's gradient then reaches its fp32 master
/// unrounded (logits no longer: the loss reads them as stored,
/// readStoredLogits). With `fusedCasts`, a
/// forward product whose every widened copy is read in elementwise
/// kernels stays bf16 (they widen it as they load it). Gradient GEMMs
/// store fp32 still: a plan that splits their inner dimension (a
/// row-parallel shard) sums it in another order, and a rounding of that
/// sum to bf16 may fall either way; through gradients that cancel (a
/// bias's), a plan would stray from one device by more than half a bf16
/// step (AmpEquivalenceTest's hybrid classifier: 2.6e-3 of scale).
void storeWidenedMatmulsInFp32(Operation *root, Type f32, bool fusedCasts) {
  SmallVector<Operation *> matmuls;
  root->walk([&](Operation *op) {
    if (isBf16Matmul(op) && isBf16Tensor(op->getResult(0).getType()))
      matmuls.push_back(op);
  });
  for (Operation *op : matmuls) {
    Value r = op->getResult(0);
    if (!onlyWidened(r) ||
        (fusedCasts && widenedInKernels(r) && !isa<MatmulGradOp>(op)))
      continue;
    r.setType(withElement(r.getType(), f32));
    for (Operation *user : llvm::make_early_inc_range(r.getUsers())) {
      user->getResult(0).replaceAllUsesWith(r);
      user->erase();
    }
  }
}

/// A value rounded to bf16 only to be widened again by every reader is
/// never stored in bf16: the readers take the fp32 value itself. Between
/// two widened ops that is what a fused kernel does; it rounds less, and
/// runs no conversions. (Kept, such trips would store more in bf16, but
/// each rounding of a value that two plans compute an ulp apart may fall
/// either way; in gradients that then cancel, a plan strays from one
/// device by more than half a bf16 step: AmpEquivalenceTest.)
void dropRoundTrips(Operation *root) {
  SmallVector<CastOp> narrowing;
  root->walk([&](CastOp c) {
    if (isBf16Tensor(c.getType()) && !isBf16Tensor(c.getOperand().getType()))
      narrowing.push_back(c);
  });
  for (CastOp c : narrowing) {
    Value r = c.getResult();
    auto widening = [&](Operation *user) {
      auto w = dyn_cast<CastOp>(user);
      return w && w.getType() == c.getOperand().getType();
    };
    if (!llvm::all_of(r.getUsers(), widening))
      continue;
    for (Operation *user : llvm::make_early_inc_range(r.getUsers())) {
      user->getResult(0).replaceAllUsesWith(c.getOperand());
      user->erase();
    }
    c.erase();
  }
}

/// Cross entropy (and its gradient) reads bf16 logits as they are stored,
/// computing in fp32, as autocast's loss does: amp's storage widened them
/// for the fp32 loss, which kept an fp32 copy of the largest activation of
/// a language model (8 x 1024 x 50304 logits: 1.6 GB) alive from the
/// forward into the backward. The loss and the gradients stay fp32.
void readStoredLogits(Operation *root) {
  root->walk([](Operation *op) {
    if (!isa<CrossEntropyOp, CrossEntropyGradOp>(op))
      return;
    auto widening = op->getOperand(0).getDefiningOp<CastOp>();
    if (!widening || !isBf16Tensor(widening.getInput().getType()))
      return;
    op->setOperand(0, widening.getInput());
    if (widening->use_empty())
      widening->erase();
  });
}

struct WidenBf16 : public whale::impl::WhaleWidenBf16Base<WidenBf16> {
  using WhaleWidenBf16Base::WhaleWidenBf16Base;

  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Type f32 = Float32Type::get(ctx), bf16 = BFloat16Type::get(ctx);
    // A bf16 value widened once per block, before its first reader there.
    DenseMap<std::pair<Value, Block *>, Value> widened;
    auto wide = [&](Value v, Operation *reader) {
      auto key = std::make_pair(v, reader->getBlock());
      if (Value done = widened.lookup(key))
        return done;
      OpBuilder b(reader);
      Value c =
          CastOp::create(b, reader->getLoc(), withElement(v.getType(), f32), v);
      widened[key] = c;
      return c;
    };
    readStoredLogits(getOperation());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (runsOnBf16(op))
        return;
      if (llvm::any_of(op->getOperandTypes(), isBf16Tensor) ||
          llvm::any_of(op->getResultTypes(), isBf16Tensor))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      // What the runtime takes as it is stored is decided before any of
      // the op's types change (attention_grad's depends on its query's).
      SmallVector<bool> widenOperand, roundResult;
      for (OpOperand &use : op->getOpOperands())
        widenOperand.push_back(isBf16Tensor(use.get().getType()) &&
                               !takesBf16Operand(op, use.getOperandNumber()));
      for (OpResult r : op->getResults())
        roundResult.push_back(isBf16Tensor(r.getType()) &&
                              !storesBf16Result(op, r.getResultNumber()));
      for (OpOperand &use : op->getOpOperands())
        if (widenOperand[use.getOperandNumber()])
          use.set(wide(use.get(), op));
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      for (OpResult r : op->getResults()) {
        if (!roundResult[r.getResultNumber()])
          continue;
        r.setType(withElement(r.getType(), f32));
        auto rounded =
            CastOp::create(b, op->getLoc(), withElement(r.getType(), bf16), r);
        r.replaceAllUsesExcept(rounded, rounded);
      }
    }
    widenBeforeReshapes(getOperation(), f32);
    storeWidenedMatmulsInFp32(getOperation(), f32, fusedCasts);
    dropRoundTrips(getOperation());
  }
};

} // namespace
