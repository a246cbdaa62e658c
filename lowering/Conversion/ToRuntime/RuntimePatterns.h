//===- RuntimePatterns.h - conversion patterns to the runtime --*- C++ -*-===//
//
// Each whale op reaches the runtime through a conversion pattern of its
// own: a function that emits the op's calls and hands back its results'
// tensor handles (RuntimePattern). What every op's lowering does around
// that (the trace site before, the releases the plan decided after, the
// replacement) is written once, in lowerWithPlan. Tensors convert to the
// runtime's handles (!llvm.ptr), a started all-reduce's request to i64.
//
// The patterns are grouped by what the ops do, one populate function per
// file; the pass reports any op no pattern converts.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEPATTERNS_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEPATTERNS_H

#include "lowering/Conversion/ToRuntime/LoweringPlan.h"
#include "lowering/Conversion/ToRuntime/RuntimeCalls.h"

#include "mlir/Transforms/DialectConversion.h"

namespace whale {

/// Handles (!llvm.ptr) for tensors, i64 for a started all-reduce's request.
class RuntimeTypeConverter : public mlir::TypeConverter {
public:
  RuntimeTypeConverter();
};

/// What every pattern shares: the module's symbols, the plan, and each
/// lowered function's arguments, handle slot and exit block.
struct RuntimeLowering {
  struct Frame {
    mlir::Value ctx, results, slot;
    mlir::Block *exit = nullptr;
  };
  RuntimeLowering(mlir::MLIRContext *context, RuntimeSymbols &symbols,
                  const LoweringPlan &plan)
      : context(context), symbols(symbols), plan(plan) {}

  /// The frame of the lowered function `op` sits in.
  const Frame &frameOf(mlir::Operation *op) const;

  mlir::MLIRContext *context;
  RuntimeTypeConverter converter;
  RuntimeSymbols &symbols;
  const LoweringPlan &plan;
  llvm::DenseMap<mlir::Operation *, Frame> frames; ///< by llvm.func
};

/// Emits `op`'s calls through `emit` with the plan's site before them and
/// its releases after, and replaces `op` with the handles `emit` returns.
mlir::LogicalResult
lowerWithPlan(mlir::Operation *op, mlir::ValueRange operands,
              mlir::ConversionPatternRewriter &rewriter,
              const RuntimeLowering &lowering,
              llvm::function_ref<Handles(RuntimeCalls &)> emit);

/// One op's lowering: emits its calls given its operands' handles and
/// returns its results' handles.
template <class OpTy>
using EmitFn = Handles (*)(OpTy op, mlir::ValueRange in, RuntimeCalls &rt);

template <class OpTy>
class RuntimePattern final : public mlir::OpConversionPattern<OpTy> {
public:
  RuntimePattern(const RuntimeLowering &lowering, EmitFn<OpTy> emit)
      : mlir::OpConversionPattern<OpTy>(lowering.converter, lowering.context),
        lowering(lowering), emit(emit) {}

  mlir::LogicalResult
  matchAndRewrite(OpTy op, typename OpTy::Adaptor adaptor,
                  mlir::ConversionPatternRewriter &rewriter) const override {
    mlir::ValueRange in = adaptor.getOperands();
    return lowerWithPlan(op, in, rewriter, lowering,
                         [&](RuntimeCalls &rt) { return emit(op, in, rt); });
  }

private:
  const RuntimeLowering &lowering;
  EmitFn<OpTy> emit;
};

/// Adds `emit` as the conversion pattern of OpTy.
template <class OpTy>
void addRuntimePattern(mlir::RewritePatternSet &patterns,
                       const RuntimeLowering &lowering, EmitFn<OpTy> emit) {
  patterns.add<RuntimePattern<OpTy>>(lowering, emit);
}

/// Model functions, their returns, TaskGraphs, parameters, fused regions.
void populateStructureRuntimePatterns(mlir::RewritePatternSet &patterns,
                                      RuntimeLowering &lowering);
/// The forward computation: one kernel call each.
void populateComputeRuntimePatterns(mlir::RewritePatternSet &patterns,
                                    const RuntimeLowering &lowering);
/// Gradients autodiff made.
void populateGradientRuntimePatterns(mlir::RewritePatternSet &patterns,
                                     const RuntimeLowering &lowering);
/// Optimizer updates and gradient clipping, which write in place.
void populateOptimizerRuntimePatterns(mlir::RewritePatternSet &patterns,
                                      const RuntimeLowering &lowering);
/// Collectives and point-to-point transfers.
void populateCommunicationRuntimePatterns(mlir::RewritePatternSet &patterns,
                                          const RuntimeLowering &lowering);

/// Turns the straight-line calls of lowered function `fn` into blocks:
/// after every call marked kStatusCallAttr a branch to the exit block on
/// a failed status, and every owner's scf.if into a block of its own.
void materializeStatusChecks(mlir::LLVM::LLVMFuncOp fn, mlir::Block *exit);

} // namespace whale

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_RUNTIMEPATTERNS_H
