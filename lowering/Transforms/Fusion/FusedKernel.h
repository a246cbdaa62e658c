//===- FusedKernel.h - code for whale.fused regions ------------*- C++ -*-===//
//
// Each fused region becomes a kernel generated through MLIR: one
// linalg.generic over the region's iteration space (dimensions that every
// operand treats alike collapsed into one, broadcast operands indexed by
// constant 0, the dimensions a sum ending the chain adds over iterated as
// reductions) whose body is the region's ops element by element, lowered
// to loops and to the LLVM dialect, then optimized by LLVM for the host's
// vectors. The runtime calls it on ranges of one dimension that no sum
// adds over (the rows, or a bias gradient's columns) from its thread
// pool, so no two calls write one element.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDKERNEL_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDKERNEL_H

#include "dialects/Whale/IR/WhaleOps.h"

#include "mlir/IR/BuiltinOps.h"

namespace whale {

/// How the runtime runs a kernel: `rows` slices of the split dimension,
/// of `rowElements` elements each; the kernel takes the data addresses of
/// the region's inputs, then of its results, and a range [lo, hi) of the
/// slices. Where a sum adds over every dimension, `rows` is 1.
struct FusedLaunch {
  int64_t rows = 1;
  int64_t rowElements = 1;
};

/// The name of the module, nested in the lowered program, that holds the
/// kernels until lowerFusedKernels takes them.
inline constexpr llvm::StringLiteral kKernelModule = "whale_kernels";

/// Builds `name` for `op` in `kernels`, as a func.func over memrefs in
/// the linalg, memref, arith and math dialects (`name`.body) that
/// lowerFusedKernels completes; returns how to launch it.
FusedLaunch buildFusedKernel(FusedOp op, mlir::ModuleOp kernels,
                             llvm::StringRef name);

/// Starts `name`.body in `kernels`: a func.func over `operands` (memrefs)
/// and the range [lo, hi) the call takes (two indices, appended), with
/// `b` at the start of its entry block, which it returns.
mlir::Block *beginKernelBody(mlir::OpBuilder &b, mlir::ModuleOp kernels,
                             llvm::StringRef name,
                             llvm::SmallVector<mlir::Type> operands,
                             mlir::Location loc);

/// buildFusedKernel for a region that ends in an op of each row
/// (FusedRowKernel.cpp): one call per range of rows of the last dimension.
FusedLaunch buildFusedRowKernel(FusedOp op, mlir::ModuleOp kernels,
                                llvm::StringRef name);

/// Lowers the kernels of buildFusedKernel to the LLVM dialect: each
/// `name`.body takes its operands as bare pointers, and `name` itself
/// (void (void **data, int64_t lo, int64_t hi)) hands them on.
mlir::LogicalResult lowerFusedKernels(mlir::ModuleOp kernels);

} // namespace whale

#endif
