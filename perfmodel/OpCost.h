//===- OpCost.h - what an op costs, as a device model prices it --*- C++
//-*-===//
//
// The numbers of the one cost model (the dialect's CostOpInterface) that a
// device model needs to price an op: its FLOPs, its bytes, and for a matrix
// product (or the tiles of fused attention) its shape. The simulator prices
// every compute event so, and the balancer and the auto_parallel cut every
// op of a stage.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_OPCOST_H
#define WHALE_PERFMODEL_OPCOST_H

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>

namespace mlir {
class Operation;
class RankedTensorType;
class Value;
} // namespace mlir

namespace whale::perf {

/// Attention's shape, which a GPU prices by the kernels it launches
/// (AttentionCost.h): heads (all batch dimensions), queries, keys, the
/// head width, the mask, and whether this is the gradient.
struct AttentionShape {
  int64_t heads = 0, t = 0, tk = 0, e = 0;
  bool causal = false, backward = false;
  bool sequenceMajor = false; ///< operands [..., T, H, E] (the op's layout)
};

/// What an op costs on a device: its FLOPs, the bytes it reads and
/// writes, and for a matrix product its shape (zero otherwise).
struct OpCost {
  double flops = 0;
  double bytes = 0;
  bool matmul = false;
  bool bf16 = false; ///< a matmul whose inputs are rounded to bf16
  int64_t batch = 1, m = 0, n = 0, k = 0;
  AttentionShape attention; ///< heads 0: not attention
  /// Bytes read and written by passes of their own around the compute
  /// (a convolution's reorders into and out of oneDNN's blocked layouts),
  /// priced after it at the memory's bandwidth, not overlapped with it.
  double passBytes = 0;
  /// A product a direct kernel computes on operands already in its layout
  /// (a convolution through oneDNN, its reorders priced as passBytes): on
  /// a CPU it makes none of a BLAS's copies (cpuPackingUse) and is priced
  /// by its tiles, as on a GPU (gemmEfficiency).
  bool direct = false;
};

/// What the device model prices of a compute op (`op` implements the cost
/// interface): its FLOPs and bytes, and a matrix product's (or the fused
/// attention's tiles') shape, at bf16 rates when `bf16`. `needed` says
/// which of its results something reads (by default those with uses; the
/// planner's scratch backward says which it keeps): a convolution's
/// gradient leaves out the one nothing reads, as the runtime does.
OpCost opCostOf(mlir::Operation *op, bool bf16,
                llvm::function_ref<bool(mlir::Value)> needed = {});

/// A matrix product's shape as the device model reads it: batch x M x N
/// from its result, K from its FLOPs (set first).
void setProductShape(OpCost &cost, mlir::RankedTensorType result);

/// A convolution's products as the device model reads them: per group
/// (the batch), M = its output channels, N = samples x output positions,
/// K = its input channels x kernel taps; from the weight [O, C / G, KH,
/// KW] and the output (or its gradient) [N, O, OH, OW].
void setConvShape(OpCost &cost, mlir::RankedTensorType weight,
                  mlir::RankedTensorType output, int64_t groups);

/// Attention's mask and operand layout (T at axis -2, or -3 when
/// sequence-major), as the op's attributes say.
struct AttentionLayout {
  bool causal = false, sequenceMajor = false;
};

/// Attention's product shape and AttentionShape from its query and key
/// types (the forward's, for the gradient too).
void setAttentionShape(OpCost &cost, mlir::RankedTensorType query,
                       mlir::RankedTensorType key, AttentionLayout layout,
                       bool backward, bool bf16);

} // namespace whale::perf

#endif
