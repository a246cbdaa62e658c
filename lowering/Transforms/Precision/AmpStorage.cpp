//===- AmpStorage.cpp - -whale-amp-storage --------------------------------===//
//
// Mixed precision as storage: a model's activations become bf16, while
// parameters stay fp32 masters read through one bf16 copy each. Runs before
// autodiff, so the gradient of every cast is the cast back and parameters'
// gradients arrive in fp32 (docs/gpu.md, "bf16 storage").
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/ElementTypes.h"
#include "lowering/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace whale {
#define GEN_PASS_DEF_WHALEAMPSTORAGE
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

bool isFloatTensor(Type t) {
  Type e = elementOf(t);
  return e && (e.isF32() || e.isBF16());
}

/// Ops that compute and return fp32 under amp, as autocast keeps them:
/// the loss, softmax, sums over many elements, batch statistics and the
/// experts' routing scores.
bool keepsFp32(Operation *op) {
  return isa<CrossEntropyOp, SoftmaxOp, ReduceSumOp, ReduceMeanOp, ReduceMaxOp,
             BatchNormOp, TopKOp>(op);
}

/// Ops left as they are: parameters (the fp32 masters), conversions, the
/// structure, and constants (their readers convert them).
bool leftAlone(Operation *op) {
  return isa<ParamOp, CastOp, TaskGraphOp, YieldOp, ConstantOp>(op) ||
         !op->getDialect() || !isa<WhaleDialect>(op->getDialect());
}

struct Converter {
  Type f32, bf16;
  /// A value's conversion for readers in one block: made before its first
  /// reader there, so every later reader in the block sees it.
  DenseMap<std::tuple<Value, Block *, Type>, Value> casts;

  explicit Converter(MLIRContext *c)
      : f32(Float32Type::get(c)), bf16(BFloat16Type::get(c)) {}

  Value as(Value v, Type element, Operation *reader) {
    if (elementOf(v.getType()) == element)
      return v;
    auto key = std::make_tuple(v, reader->getBlock(), element);
    if (Value done = casts.lookup(key))
      return done;
    OpBuilder b(reader);
    Value c = CastOp::create(b, reader->getLoc(),
                             withElement(v.getType(), element), v);
    casts[key] = c;
    return c;
  }

  void convert(Operation *op) {
    if (leftAlone(op))
      return;
    Type want = keepsFp32(op) ? f32 : bf16;
    for (OpOperand &use : op->getOpOperands())
      if (isFloatTensor(use.get().getType()))
        use.set(as(use.get(), want, op));
    for (OpResult r : op->getResults())
      if (isFloatTensor(r.getType()))
        r.setType(withElement(r.getType(), want));
  }

  /// A yield or return hands its parent the types the parent declares.
  void restoreDeclared(Operation *terminator, TypeRange declared) {
    for (auto [use, type] : llvm::zip(terminator->getOpOperands(), declared))
      if (isFloatTensor(use.get().getType()) && use.get().getType() != type)
        use.set(as(use.get(), elementOf(type), terminator));
  }
};

struct AmpStorage : public whale::impl::WhaleAmpStorageBase<AmpStorage> {
  void runOnOperation() override {
    Converter c(&getContext());
    getOperation().walk([&](func::FuncOp f) {
      if (!f->hasAttr("whale.model"))
        return;
      // In program order: each op sees its operands' new types.
      f.walk<WalkOrder::PreOrder>([&](Operation *op) { c.convert(op); });
      f.walk([&](YieldOp y) {
        if (auto tg = dyn_cast<TaskGraphOp>(y->getParentOp()))
          c.restoreDeclared(y, tg->getResultTypes());
      });
      f.walk([&](func::ReturnOp r) {
        c.restoreDeclared(r, f.getFunctionType().getResults());
      });
    });
  }
};

} // namespace
