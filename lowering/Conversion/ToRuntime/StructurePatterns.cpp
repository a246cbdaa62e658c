//===- StructurePatterns.cpp - Functions, TaskGraphs, parameters, regions -===//
//
// A model function becomes `i32 @name(ptr %ctx, ptr %inputs, ptr %result)`:
// its inputs are loaded from the array, its results stored to it, and the
// exit block returns the first failed status (0 when every call ran).
// TaskGraphs run in place: on one device their strategy does not matter.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"
#include "lowering/Conversion/ToRuntime/RuntimePatterns.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace whale;

namespace {

struct ModelFunctionPattern : OpConversionPattern<func::FuncOp> {
  ModelFunctionPattern(RuntimeLowering &lowering)
      : OpConversionPattern(lowering.converter, lowering.context),
        lowering(lowering) {}

  LogicalResult
  matchAndRewrite(func::FuncOp fn, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = fn.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(getContext());
    Type i32 = rewriter.getI32Type(), i64 = rewriter.getI64Type();
    auto type = LLVM::LLVMFunctionType::get(i32, {ptr, ptr, ptr});
    auto lowered = LLVM::LLVMFuncOp::create(rewriter, loc, fn.getName(), type);
    Block *entry = rewriter.createBlock(&lowered.getBody(), {}, {ptr, ptr, ptr},
                                        {loc, loc, loc});
    Value one = LLVM::ConstantOp::create(rewriter, loc, i64,
                                         rewriter.getI64IntegerAttr(1));
    Value slot = LLVM::AllocaOp::create(rewriter, loc, ptr, ptr, one);
    SmallVector<Value> inputs;
    for (BlockArgument arg : fn.getArguments()) {
      Value at = LLVM::GEPOp::create(
          rewriter, loc, ptr, ptr, entry->getArgument(1),
          ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(arg.getArgNumber())});
      inputs.push_back(LLVM::LoadOp::create(rewriter, loc, ptr, at));
    }
    Block *exit = rewriter.createBlock(&lowered.getBody(),
                                       lowered.getBody().end(), {i32}, {loc});
    LLVM::ReturnOp::create(rewriter, loc, exit->getArgument(0));
    lowering.frames[lowered] = {entry->getArgument(0), entry->getArgument(2),
                                slot, exit};
    rewriter.inlineBlockBefore(&fn.getBody().front(), entry, entry->end(),
                               inputs);
    rewriter.eraseOp(fn);
    return success();
  }

  RuntimeLowering &lowering;
};

/// The results' handles to `%result[0..n)`, then the exit with status 0.
struct ModelReturnPattern : OpConversionPattern<func::ReturnOp> {
  ModelReturnPattern(const RuntimeLowering &lowering)
      : OpConversionPattern(lowering.converter, lowering.context),
        lowering(lowering) {}

  LogicalResult
  matchAndRewrite(func::ReturnOp ret, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    const RuntimeLowering::Frame &frame = lowering.frameOf(ret);
    Location loc = ret.getLoc();
    Type ptr = LLVM::LLVMPointerType::get(getContext());
    for (auto [i, handle] : llvm::enumerate(adaptor.getOperands())) {
      Value at =
          LLVM::GEPOp::create(rewriter, loc, ptr, ptr, frame.results,
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      LLVM::StoreOp::create(rewriter, loc, handle, at);
    }
    Value ok = LLVM::ConstantOp::create(rewriter, loc, rewriter.getI32Type(),
                                        rewriter.getI32IntegerAttr(0));
    rewriter.replaceOpWithNewOp<LLVM::BrOp>(ret, ValueRange{ok}, frame.exit);
    return success();
  }

  const RuntimeLowering &lowering;
};

/// A TaskGraph's ops run where it stands; its results are what it yields.
struct TaskGraphPattern : OpConversionPattern<TaskGraphOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(TaskGraphOp graph, OpAdaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Block &body = graph.getBody().front();
    auto yield = cast<YieldOp>(body.getTerminator());
    SmallVector<Value> values(yield.getValues());
    rewriter.inlineBlockBefore(&body, graph);
    rewriter.eraseOp(yield);
    rewriter.replaceOp(graph, values);
    return success();
  }
};

/// The parameter itself, made (initialized) on its first step.
void makeParam(ParamOp p, Value name, Value init, RuntimeCalls &rt) {
  RankedTensorType t = p.getType();
  ArrayRef<double> args = p.getInitArgs();
  if (std::optional<ArrayRef<int64_t>> shard = p.getShard())
    rt.call(WHALE_RT_FN(param_shard),
            {rt.ctx, name, init, rt.f64Array(args), rt.i32(args.size()),
             rt.i32(t.getRank()), rt.i64Array(p.getFullType().getShape()),
             rt.i32((*shard)[0]), rt.i32((*shard)[1]),
             rt.weights(p.getShardWeights()), rt.slotOut()});
  else
    rt.call(WHALE_RT_FN(param),
            {rt.ctx, name, init, rt.f64Array(args), rt.i32(args.size()),
             rt.i32(t.getRank()), rt.i64Array(t.getShape()), rt.slotOut()});
}

Handles lowerParam(ParamOp p, ValueRange, RuntimeCalls &rt) {
  Value name = rt.string(p.getName());
  Value init = rt.i32(static_cast<int32_t>(p.getInit()));
  // Sharded over a group (ZeRO stage 3): made on its owner alone; the
  // others get a handle without values, which only a gather reads.
  rt.onOwner(
      p, [&] { makeParam(p, name, init, rt); },
      [&] {
        rt.call(WHALE_RT_FN(param_elsewhere), {rt.ctx, name, rt.slotOut()});
      });
  return {rt.slotHandle()};
}

/// A fused region calls its generated kernel through the runtime, which
/// splits its rows over threads (or runs its element program on a GPU).
Handles lowerFused(FusedOp fused, ValueRange in, RuntimeCalls &rt) {
  Handles outs = rt.tensorsFor(fused);
  const FusedCode &code = rt.plan.kernelOf(fused);
  MLIRContext *ctx = fused.getContext();
  Type ptr = LLVM::LLVMPointerType::get(ctx), i64 = IntegerType::get(ctx, 64);
  LLVM::LLVMFuncOp kernel =
      rt.declare(code.name, LLVM::LLVMVoidType::get(ctx), {ptr, i64, i64});
  Value fn = LLVM::AddressOfOp::create(rt.rewriter, rt.loc, kernel);
  // Its name in traces and errors: the ops it runs.
  std::string label = "fused:";
  for (Operation &inner : fused.getBody().front().without_terminator())
    label += " " + inner.getName().stripDialect().str();
  rt.call(WHALE_RT_FN(fused),
          {rt.ctx, rt.string(label), fn, rt.i64Array(code.program),
           rt.i64(static_cast<int64_t>(code.program.size())),
           rt.i32(fused.getNumOperands()), rt.handleArray(in),
           rt.i32(outs.size()), rt.handleArray(outs), rt.i64(code.launch.rows),
           rt.i64(code.launch.rowElements)});
  return outs;
}

} // namespace

void whale::populateStructureRuntimePatterns(RewritePatternSet &patterns,
                                             RuntimeLowering &lowering) {
  patterns.add<ModelFunctionPattern>(lowering);
  patterns.add<ModelReturnPattern>(lowering);
  patterns.add<TaskGraphPattern>(lowering.converter, lowering.context);
  addRuntimePattern<ParamOp>(patterns, lowering, lowerParam);
  addRuntimePattern<FusedOp>(patterns, lowering, lowerFused);
}
