//===- FusedSpace.h - the iteration space of a fused region -----*- C++ -*-===//
//
// What the generated kernels (FusedKernel.cpp) and the element programs
// (FusedProgram.cpp) both read off a `whale.fused` region: each result's
// relation to the iteration shape (its values, or a sum over some of its
// dimensions), and the shape with the dimensions every operand treats alike
// merged into one, so that neither walks more dimensions than it must.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDSPACE_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_FUSEDSPACE_H

#include "dialects/Whale/IR/WhaleOps.h"

namespace whale {

/// What one result of a region is: the iteration shape's values, or a
/// sum of them over the dimensions it does not keep (a mean divides it).
struct ResultShape {
  llvm::SmallVector<bool> kept; ///< per dimension of the iteration shape
  bool reduced = false;
  bool mean = false;
};

llvm::SmallVector<ResultShape> resultShapes(FusedOp op,
                                            llvm::ArrayRef<int64_t> shape);

/// The iteration space with the dimensions every operand treats alike
/// merged: `extents` of the merged dimensions, for each input whether it
/// reads each of them (false: broadcast along it), and for each result
/// whether it keeps each of them (false: summed over).
struct Collapsed {
  llvm::SmallVector<int64_t> extents;
  llvm::SmallVector<llvm::SmallVector<bool>> reads;
  llvm::SmallVector<llvm::SmallVector<bool>> keeps;
};

Collapsed collapse(llvm::ArrayRef<int64_t> shape, mlir::TypeRange inputs,
                   llvm::ArrayRef<ResultShape> results);

} // namespace whale

#endif
