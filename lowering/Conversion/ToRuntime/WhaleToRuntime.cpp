//===- WhaleToRuntime.cpp - -whale-to-runtime -----------------------------===//
//
// Each model function becomes an llvm.func that calls the runtime's C ABI
// op by op, through each op's conversion pattern (RuntimePatterns.h). What
// needs the whole function is planned first (LoweringPlan); the statuses
// are checked once every op is converted (materializeStatusChecks). The
// conversion reports any op that no pattern converts.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/LoweringPlan.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"
#include "lowering/Passes.h"
#include "lowering/Transforms/Fusion/FormulaRegions.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

namespace whale {
#define GEN_PASS_DEF_WHALETORUNTIME
#include "lowering/Passes.h.inc"
} // namespace whale

using namespace mlir;
using namespace whale;

namespace {

struct WhaleToRuntimePass
    : public whale::impl::WhaleToRuntimeBase<WhaleToRuntimePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(inlineStepCalls(module)) || failed(wrapFormulaOps(module)))
      return signalPassFailure();
    SmallVector<Operation *> models;
    module.walk([&](func::FuncOp fn) {
      if (fn->hasAttr("whale.model") || fn->hasAttr("whale.rank"))
        models.push_back(fn);
    });
    // The runtime writes a collective's sums into its operands' tensors:
    // each gets operands nothing else reads (after the steps are inlined,
    // where every reader is in sight).
    for (Operation *fn : models)
      copyWrittenOperands(cast<func::FuncOp>(fn));
    LoweringPlan plan(module, sites);
    for (Operation *fn : models)
      if (failed(plan.add(cast<func::FuncOp>(fn))))
        return signalPassFailure();

    MLIRContext *context = &getContext();
    RuntimeSymbols symbols(module);
    RuntimeLowering lowering(context, symbols, plan);
    RewritePatternSet patterns(context);
    populateStructureRuntimePatterns(patterns, lowering);
    populateComputeRuntimePatterns(patterns, lowering);
    populateGradientRuntimePatterns(patterns, lowering);
    populateOptimizerRuntimePatterns(patterns, lowering);
    populateCommunicationRuntimePatterns(patterns, lowering);
    ConversionTarget target(*context);
    target.addLegalDialect<LLVM::LLVMDialect>();
    // An owner's update, made blocks by materializeStatusChecks.
    target.addLegalOp<scf::IfOp, scf::YieldOp>();
    // Anything else in a model is an op the runtime cannot run: the
    // conversion names it ("failed to legalize operation").
    target.markUnknownOpDynamicallyLegal([](Operation *) { return false; });
    ConversionConfig config;
    // Lowering is not the place to simplify: the plan was made on the ops
    // as they are.
    config.foldingMode = DialectConversionFoldingMode::Never;
    if (failed(applyPartialConversion(models, target, std::move(patterns),
                                      config)))
      return signalPassFailure();
    for (auto &[fn, frame] : lowering.frames)
      materializeStatusChecks(cast<LLVM::LLVMFuncOp>(fn), frame.exit);
    // The config and train blocks are for the driver; the lowered module
    // carries code only.
    module->removeAttr("whale.config");
  }
};

} // namespace

void whale::loadRuntimeLoweringDialects(MLIRContext &context) {
  context.getOrLoadDialect<LLVM::LLVMDialect>();
  context.getOrLoadDialect<scf::SCFDialect>();
}

void whale::insertRuntimeLoweringDialects(DialectRegistry &registry) {
  registry.insert<LLVM::LLVMDialect, scf::SCFDialect>();
}
