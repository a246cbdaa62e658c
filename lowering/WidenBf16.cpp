//===- WidenBf16.cpp - -whale-widen-bf16 ----------------------------------===//
//
// The runtime takes bf16 only through whale.cast (and ops that move or fill
// elements whatever they are). Until an op has a bf16 kernel, it computes
// in fp32 between casts: its bf16 operands widened, its results rounded
// back to bf16. That is what a native bf16 kernel does (fp32 inside,
// rounded at the store), so the numbers hold from the first day, and the
// conversions that run are in the IR the simulator prices.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"

#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALEWIDENBF16
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

bool isBf16Tensor(Type t) {
  Type e = elementOf(t);
  return e && e.isBF16();
}

/// Ops the runtime runs on bf16 storage as it is.
bool takesBf16(Operation *op) {
  return isa<CastOp, ReshapeOp, ConstantOp, TaskGraphOp, YieldOp>(op) ||
         !op->getDialect() || !isa<WhaleDialect>(op->getDialect());
}

struct WidenBf16 : public whale::impl::WhaleWidenBf16Base<WidenBf16> {
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
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (takesBf16(op))
        return;
      if (llvm::any_of(op->getOperandTypes(), isBf16Tensor) ||
          llvm::any_of(op->getResultTypes(), isBf16Tensor))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      for (OpOperand &use : op->getOpOperands())
        if (isBf16Tensor(use.get().getType()))
          use.set(wide(use.get(), op));
      OpBuilder b(op->getContext());
      b.setInsertionPointAfter(op);
      for (OpResult r : op->getResults()) {
        if (!isBf16Tensor(r.getType()))
          continue;
        r.setType(withElement(r.getType(), f32));
        auto rounded =
            CastOp::create(b, op->getLoc(), withElement(r.getType(), bf16), r);
        r.replaceAllUsesExcept(rounded, rounded);
      }
    }
  }
};

} // namespace
