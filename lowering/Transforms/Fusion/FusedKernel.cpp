//===- FusedKernel.cpp - whale.fused regions as generated kernels ---------===//

#include "lowering/Transforms/Fusion/FusedKernel.h"
#include "lowering/Transforms/Fusion/FusedScalars.h"
#include "lowering/Transforms/Fusion/FusedSpace.h"

// Each conversion's own header, not mlir/Conversion/Passes.h: that one
// declares every conversion MLIR has and doubles this file's compile time.
#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace whale {

using kernel::Scalars;

Block *beginKernelBody(OpBuilder &b, ModuleOp kernels, StringRef name,
                       SmallVector<Type> operands, Location loc) {
  operands.push_back(b.getIndexType());
  operands.push_back(b.getIndexType());
  b.setInsertionPointToEnd(kernels.getBody());
  auto fn = func::FuncOp::create(b, loc, (name + ".body").str(),
                                 b.getFunctionType(operands, {}));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  return entry;
}

FusedLaunch buildFusedKernel(FusedOp op, ModuleOp kernels, StringRef name) {
  if (op.getRowOp())
    return buildFusedRowKernel(op, kernels, name);
  MLIRContext *ctx = op.getContext();
  Location loc = op.getLoc();
  OpBuilder b(ctx);
  SmallVector<int64_t> shape = op.getIterationShape();
  SmallVector<ResultShape> results = resultShapes(op, shape);
  Collapsed space = collapse(shape, op.getInputs().getTypes(), results);
  const int64_t rank = space.extents.size();

  // A dimension some result sums over is a reduction; the calls split the
  // first other one (the rows, or the columns of a bias's gradient), so no
  // two calls add into one element. Where every dimension is summed, one
  // call does it all.
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  for (const SmallVector<bool> &keeps : space.keeps)
    for (int64_t d = 0; d < rank; ++d)
      if (!keeps[d])
        iterators[d] = utils::IteratorType::reduction;
  int64_t split = -1;
  for (int64_t d = 0; d < rank && split < 0; ++d)
    if (iterators[d] == utils::IteratorType::parallel)
      split = d;

  // The memory each operand is, and where the split dimension is in it:
  // an input's extent is 1 where it broadcasts; a sum has only the
  // dimensions it keeps.
  SmallVector<Type> args;
  SmallVector<AffineMap> maps;
  SmallVector<int64_t> splitAt; // the memref's dimension, or -1
  SmallVector<Type> types(op->getOperandTypes());
  llvm::append_range(types, op->getResultTypes());
  for (auto [i, reads] : llvm::enumerate(space.reads)) {
    SmallVector<int64_t> memShape;
    SmallVector<AffineExpr> index;
    for (int64_t d = 0; d < rank; ++d) {
      memShape.push_back(reads[d] ? space.extents[d] : 1);
      index.push_back(reads[d] ? b.getAffineDimExpr(d)
                               : b.getAffineConstantExpr(0));
    }
    args.push_back(MemRefType::get(memShape, Scalars::memoryElement(types[i])));
    maps.push_back(AffineMap::get(rank, 0, index, ctx));
    splitAt.push_back(split >= 0 && reads[split] ? split : -1);
  }
  for (auto [o, keeps] : llvm::enumerate(space.keeps)) {
    SmallVector<int64_t> memShape;
    SmallVector<AffineExpr> index;
    int64_t at = -1;
    for (int64_t d = 0; d < rank; ++d) {
      if (!keeps[d])
        continue;
      if (d == split)
        at = memShape.size();
      memShape.push_back(space.extents[d]);
      index.push_back(b.getAffineDimExpr(d));
    }
    args.push_back(MemRefType::get(
        memShape, Scalars::memoryElement(types[space.reads.size() + o])));
    maps.push_back(AffineMap::get(rank, 0, index, ctx));
    splitAt.push_back(at);
  }
  Block *entry = beginKernelBody(b, kernels, name, args, loc);
  Value lo = entry->getArgument(args.size());
  Value hi = entry->getArgument(args.size() + 1);
  Value count = arith::SubIOp::create(b, loc, hi, lo);

  // This call's range [lo, hi) of the split dimension of every operand
  // that has it.
  const bool sliced = split >= 0 && space.extents[split] > 1;
  SmallVector<Value> views;
  for (unsigned i = 0; i < args.size(); ++i) {
    Value whole = entry->getArgument(i);
    auto type = cast<MemRefType>(whole.getType());
    if (!sliced || splitAt[i] < 0) {
      views.push_back(whole); // broadcast along it, or nothing to split
      continue;
    }
    const int64_t memRank = type.getRank();
    SmallVector<OpFoldResult> offsets(memRank, b.getIndexAttr(0)), sizes,
        strides(memRank, b.getIndexAttr(1));
    for (int64_t d = 0; d < memRank; ++d)
      sizes.push_back(b.getIndexAttr(type.getShape()[d]));
    offsets[splitAt[i]] = lo;
    sizes[splitAt[i]] = count;
    views.push_back(
        memref::SubViewOp::create(b, loc, whole, offsets, sizes, strides));
  }
  const unsigned nIn = op.getNumOperands();
  ValueRange outViews = ValueRange(views).drop_front(nIn);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0));
  for (auto [view, r] : llvm::zip(outViews, results))
    if (r.reduced)
      linalg::FillOp::create(b, loc, ValueRange{zero}, ValueRange{view});

  Block &region = op.getBody().front();
  linalg::GenericOp::create(
      b, loc, ValueRange(views).take_front(nIn), outViews, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange elements) {
        Scalars s(nb, nloc);
        SmallVector<Value> loaded;
        for (unsigned i = 0; i < nIn; ++i)
          loaded.push_back(s.loaded(elements[i], types[i]));
        llvm::DenseMap<Value, Value> element = s.elements(
            region, ValueRange(loaded), [](Operation *) { return false; });
        SmallVector<Value> out;
        ValueRange yielded = region.getTerminator()->getOperands();
        for (auto [i, v] : llvm::enumerate(yielded))
          out.push_back(results[i].reduced
                            ? s.add(elements[nIn + i], element.lookup(v))
                            : s.toStore(element.lookup(v), types[nIn + i]));
        linalg::YieldOp::create(nb, nloc, out);
      });

  // A mean divides its sum by the elements it summed, as the runtime's
  // reduction does.
  for (auto [view, r] : llvm::zip(outViews, results)) {
    if (!r.mean)
      continue;
    int64_t summed = 1;
    for (size_t d = 0; d < shape.size(); ++d)
      if (!r.kept[d])
        summed *= shape[d];
    auto type = cast<MemRefType>(view.getType());
    AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
    linalg::GenericOp::create(
        b, loc, ValueRange{}, ValueRange{view}, ArrayRef<AffineMap>{identity},
        SmallVector<utils::IteratorType>(type.getRank(),
                                         utils::IteratorType::parallel),
        [&](OpBuilder &nb, Location nloc, ValueRange elements) {
          Scalars s(nb, nloc);
          linalg::YieldOp::create(
              nb, nloc,
              ValueRange{s.div(elements[0], s.c(static_cast<double>(summed)))});
        });
  }
  func::ReturnOp::create(b, loc);

  FusedLaunch launch;
  launch.rows = split >= 0 ? space.extents[split] : 1;
  for (int64_t d = 0; d < rank; ++d)
    launch.rowElements *= space.extents[d];
  launch.rowElements /= launch.rows;
  return launch;
}

LogicalResult lowerFusedKernels(ModuleOp kernels) {
  MLIRContext *ctx = kernels.getContext();
  // exp, log and tanh as polynomials in arithmetic, which LLVM vectorizes
  // (as calls to libm they would keep every loop scalar).
  {
    RewritePatternSet patterns(ctx);
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef name) {
      name.consume_front("math.");
      return name == "exp" || name == "log" || name == "tanh";
    });
    if (failed(applyPatternsGreedily(kernels, std::move(patterns))))
      return failure();
  }
  PassManager pm(ctx);
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  ConvertFuncToLLVMPassOptions bare;
  bare.useBarePtrCallConv = true;
  pm.addPass(createConvertFuncToLLVMPass(bare));
  pm.addPass(createReconcileUnrealizedCastsPass());
  if (failed(pm.run(kernels)))
    return failure();

  // Each kernel's entry: void name(void **data, int64_t lo, int64_t hi).
  OpBuilder b(ctx);
  auto ptr = LLVM::LLVMPointerType::get(ctx);
  auto i64 = b.getI64Type();
  SmallVector<LLVM::LLVMFuncOp> bodies;
  for (auto fn : kernels.getOps<LLVM::LLVMFuncOp>())
    if (fn.getName().ends_with(".body"))
      bodies.push_back(fn);
  for (LLVM::LLVMFuncOp body : bodies) {
    Location loc = body.getLoc();
    b.setInsertionPointToEnd(kernels.getBody());
    auto entryFn = LLVM::LLVMFuncOp::create(
        b, loc, body.getName().drop_back(5),
        LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                    {ptr, i64, i64}));
    Block *entry = entryFn.addEntryBlock(b);
    b.setInsertionPointToStart(entry);
    unsigned n = body.getNumArguments() - 2;
    SmallVector<Value> callArgs;
    for (unsigned i = 0; i < n; ++i) {
      Value at =
          LLVM::GEPOp::create(b, loc, ptr, ptr, entry->getArgument(0),
                              ArrayRef<LLVM::GEPArg>{static_cast<int32_t>(i)});
      callArgs.push_back(LLVM::LoadOp::create(b, loc, ptr, at));
    }
    callArgs.push_back(entry->getArgument(1));
    callArgs.push_back(entry->getArgument(2));
    LLVM::CallOp::create(b, loc, body, callArgs);
    LLVM::ReturnOp::create(b, loc, ValueRange{});
    body.setLinkage(LLVM::Linkage::Internal);
  }
  return success();
}

} // namespace whale
