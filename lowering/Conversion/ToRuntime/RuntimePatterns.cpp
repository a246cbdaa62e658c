//===- RuntimePatterns.cpp - what every op's lowering does around it ---===//

#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

#include "dialects/Whale/IR/WhaleOps.h"

using namespace mlir;
using namespace whale;

RuntimeTypeConverter::RuntimeTypeConverter() {
  addConversion([](Type t) { return t; });
  addConversion([](RankedTensorType t) -> Type {
    return LLVM::LLVMPointerType::get(t.getContext());
  });
  addConversion([](PendingType t) -> Type {
    return IntegerType::get(t.getContext(), 64);
  });
}

const RuntimeLowering::Frame &RuntimeLowering::frameOf(Operation *op) const {
  auto fn = op->getParentOfType<LLVM::LLVMFuncOp>();
  auto at = frames.find(fn);
  assert(at != frames.end() && "the model function is converted first");
  return at->second;
}

LogicalResult
whale::lowerWithPlan(Operation *op, ValueRange operands,
                     ConversionPatternRewriter &rewriter,
                     const RuntimeLowering &lowering,
                     llvm::function_ref<Handles(RuntimeCalls &)> emit) {
  const RuntimeLowering::Frame &frame = lowering.frameOf(op);
  const LoweringPlan &plan = lowering.plan;
  RuntimeCalls rt(rewriter, op->getLoc(), lowering.symbols, plan, frame.ctx,
                  frame.slot);
  if (std::optional<int64_t> site = plan.siteOf(op))
    rt.callVoid(WHALE_RT_FN(set_site), {rt.ctx, rt.i64(*site)});
  Handles results = emit(rt);
  if (lowering.symbols.abiMismatch)
    return failure();
  assert(results.size() == op->getNumResults() && "a handle for each result");
  const Releases &releases = plan.releasesOf(op);
  for (unsigned i : releases.results)
    rt.callVoid(WHALE_RT_FN(tensor_release), {rt.ctx, results[i]});
  for (unsigned i : releases.operands)
    rt.callVoid(WHALE_RT_FN(tensor_release), {rt.ctx, operands[i]});
  if (results.empty())
    rewriter.eraseOp(op);
  else
    rewriter.replaceOp(op, results);
  return success();
}
