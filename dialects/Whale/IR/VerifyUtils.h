//===- VerifyUtils.h - checks the whale verifiers share ----------*- C++
//-*-===//

#ifndef WHALE_DIALECTS_WHALE_IR_VERIFYUTILS_H
#define WHALE_DIALECTS_WHALE_IR_VERIFYUTILS_H

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

namespace whale {

/// The result shape of `lhs @ rhs` as whale.matmul defines it (emitting the
/// reason on `op` when they do not fit).
mlir::FailureOr<llvm::SmallVector<int64_t>>
matmulResultShape(mlir::Operation *op, mlir::RankedTensorType lhs,
                  mlir::RankedTensorType rhs, bool transLhs, bool transRhs);

/// The result shape of a whale.conv2d of `input` [N, C, H, W] with `weight`
/// [O, C / groups, KH, KW] (emitting the reason on `op` when they or the
/// window do not fit).
mlir::FailureOr<llvm::SmallVector<int64_t>>
conv2dResultShape(mlir::Operation *op, mlir::RankedTensorType input,
                  mlir::RankedTensorType weight, llvm::ArrayRef<int64_t> stride,
                  llvm::ArrayRef<int64_t> padding,
                  llvm::ArrayRef<int64_t> dilation, int64_t groups);

/// The shape of a whale.topk of `input` [..., N]: [..., k].
mlir::FailureOr<llvm::SmallVector<int64_t>>
topkResultShape(mlir::Operation *op, mlir::RankedTensorType input, int64_t k);

/// Checks a mixture of experts' routing: `tokens` [G, S, D], `experts`
/// [G, S, k] with 1 <= k <= numExperts, `gates` (when given) experts'
/// shape, and `slotted` [numExperts, G * capacity, D] with capacity >= 1.
mlir::LogicalResult verifyMoeRouting(mlir::Operation *op,
                                     mlir::RankedTensorType tokens,
                                     mlir::RankedTensorType experts,
                                     mlir::Value gates,
                                     mlir::RankedTensorType slotted,
                                     int64_t numExperts, int64_t capacity);

/// The capacity of `slotted` [E, G * C, D] for G groups (0 when G does not
/// divide it).
int64_t moeCapacity(mlir::RankedTensorType slotted, int64_t groups);

/// verifyMoeRouting for ops that read the slots: E and C from `slotted`'s
/// shape and the experts' groups.
mlir::LogicalResult verifyMoeSlots(mlir::Operation *op,
                                   mlir::RankedTensorType tokens,
                                   mlir::RankedTensorType experts,
                                   mlir::Value gates,
                                   mlir::RankedTensorType slotted);

/// The result shape of a whale.pool2d of `input` [..., H, W].
mlir::FailureOr<llvm::SmallVector<int64_t>>
pool2dResultShape(mlir::Operation *op, mlir::RankedTensorType input,
                  llvm::StringRef kind, llvm::ArrayRef<int64_t> kernel,
                  llvm::ArrayRef<int64_t> stride,
                  llvm::ArrayRef<int64_t> padding);

/// A part of `part` along a split axis is one of `shards` parts of
/// `whole`: equal ones, or as `weights` cut it (runtime/core/Parts.h's rule).
mlir::LogicalResult
verifyShardWeights(mlir::Operation *op,
                   std::optional<llvm::ArrayRef<int64_t>> weights,
                   int64_t shards, int64_t axis, int64_t part, int64_t whole);

/// Checks an attention's operands: `query` and `key` of one rank (>= 2,
/// or >= 3 `sequenceMajor`), alike but in T (and E), one element type, and
/// as many keys as queries when `causal`.
mlir::LogicalResult verifyAttentionOperands(mlir::Operation *op,
                                            mlir::RankedTensorType query,
                                            mlir::RankedTensorType key,
                                            bool causal, bool sequenceMajor);

namespace verify {

mlir::RankedTensorType tensorOf(mlir::Value v);
/// Maps a possibly negative axis into [0, rank); fails when out of range.
mlir::FailureOr<int64_t> normalizeAxis(mlir::Operation *op, int64_t axis,
                                       int64_t rank);
mlir::LogicalResult expectShape(mlir::Operation *op,
                                llvm::ArrayRef<int64_t> expected,
                                mlir::RankedTensorType actual,
                                llvm::StringRef what);
mlir::LogicalResult expectSameElementType(mlir::Operation *op, mlir::Type a,
                                          mlir::Type b, llvm::StringRef what);
/// A matmul's (or its gradient's) result element type: its operands', or
/// f32 when they are bf16 (amp's storage: the fp32 accumulation unrounded).
/// Also what an op that reads bf16 and computes in fp32 makes (`what`
/// names the value checked: a loss, a gradient).
mlir::LogicalResult expectMatmulResultElement(mlir::Operation *op,
                                              mlir::Type operand,
                                              mlir::Type result,
                                              llvm::StringRef what = "result");
/// NumPy broadcasting of two shapes; fails when an aligned pair differs and
/// neither is 1.
mlir::FailureOr<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

} // namespace verify
/// A collective's group ("replicas", "stages", "shard_peers" or "hsdp";
/// none is fine) and `shards`, given exactly for shard peers (and for a
/// sharding group of them: "hsdp" cuts the replicas, or with shards the
/// shard peers, into the config's shard_group).
mlir::LogicalResult verifyGroupAndShards(mlir::Operation *op,
                                         std::optional<llvm::StringRef> group,
                                         std::optional<int64_t> shards);

} // namespace whale

#endif
