//===- NormResiduals.h - a norm's input gradient with its residual's -*- C++
//-*-===//
//
// In a pre-norm block (GPT's layernorm, Llama's RMSNorm) the block's input
// feeds both the norm and the residual sum, so its gradient is the sum of
// the residual's gradient and the norm's input gradient: an add that reads
// dx right after the norm's backward wrote it. The norm's gradient op takes
// the residual's gradient as `plus` and adds it as each row of dx is
// written: one pass less over [..., D]. -whale-gemm-epilogues (GPU plans)
// and -whale-fuse-elementwise (every plan that fuses) both make it.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_NORMRESIDUALS_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_NORMRESIDUALS_H

#include "dialects/Whale/IR/WhaleOps.h"

namespace whale {

/// Whether every reader of `values` stands after `place` (both in one
/// block; a reader nested in a region counts where its ancestor stands).
bool readAfter(mlir::ValueRange values, mlir::Operation *place);

/// `add r, dx` (either order) where dx is a layernorm's or RMSNorm's input
/// gradient read by the sum alone: one gradient op with `plus r` in its
/// place; the add and the old gradient op are erased. False (nothing
/// changed) where it does not apply.
bool fuseNormResidual(AddOp add);

/// Every such sum in `root`'s blocks.
void fuseNormResiduals(mlir::Operation *root);

} // namespace whale

#endif
