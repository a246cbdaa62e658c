//===- IdentityGradients.h - gradients that are their dout ------*- C++ -*-===//
//
// The gradient of a sum's operand (or a difference's left one) of the
// output's shape is the output's gradient itself. The passes that match
// patterns over gradients (-whale-gemm-epilogues, -whale-fuse-elementwise)
// forward these first, so a pattern sees the gradient it reads, not a copy.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_FUSION_IDENTITYGRADIENTS_H
#define WHALE_LOWERING_TRANSFORMS_FUSION_IDENTITYGRADIENTS_H

namespace mlir {
class Block;
} // namespace mlir

namespace whale {

class BinaryGradOp;

/// Points the readers of `g` at its dout and erases it, where it is such a
/// gradient; false, and nothing changed, where it is not.
bool forwardIdentityGradient(BinaryGradOp g);

/// Points the readers of each such gradient in `block` at its dout, and
/// erases it: no kernel copies it. Not where either value feeds an op that
/// overwrites its operand (an all-reduce, clipping).
void forwardIdentityGradients(mlir::Block &block);

} // namespace whale

#endif
