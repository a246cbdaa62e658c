//===- FormulaRegions.h - formula ops the fusion left alone -----*- C++ -*-===//
//
// An op defined by its formula (ScalarFormulaOpInterface) and its gradient
// have no kernel of their own in the runtime: the kernel generated for a
// fused region computes them. Where -whale-fuse-elementwise left one
// outside every region (under --no-fuse, or with nothing to fuse it with),
// the lowering to the runtime makes it a region of its own.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_FORMULAREGIONS_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_FORMULAREGIONS_H

#include "mlir/IR/BuiltinOps.h"

namespace whale {

/// Puts each formula op of `module` outside a whale.fused region into one of
/// its own; fails (with the op's error) for one that is not on f32.
mlir::LogicalResult wrapFormulaOps(mlir::ModuleOp module);

} // namespace whale

#endif
