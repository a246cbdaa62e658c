//===- Bf16Kernels.h - which whale ops the runtime runs on bf16 ---*- C++
//-*-===//
//
// amp's storage keeps activations in bf16, but an op reaches the runtime
// with bf16 operands only where the runtime has a kernel for them. This is
// that list, in one place, operand by operand: -whale-widen-bf16 widens
// every bf16 operand the runtime does not take to fp32 (and rounds back
// every result it does not store in bf16), and -whale-to-runtime refuses
// any op that still has one. Each native kernel adds its op.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_TRANSFORMS_PRECISION_BF16KERNELS_H
#define WHALE_LOWERING_TRANSFORMS_PRECISION_BF16KERNELS_H

#include "mlir/IR/Operation.h"

namespace whale {

/// Whether the runtime takes `op`'s operand `operand`, where it is bf16,
/// as it is stored: ops that move or fill elements whatever they are
/// (cast, reshape, constants, taskgraph plumbing, other dialects), fused
/// regions (which load and store bf16 operands, and convert in registers),
/// matmul and its gradient when their operands are all bf16 (each result
/// bf16 or f32: whale_rt_matmul's amp storage), the GEMM epilogue ops
/// (linear, linear_weight_grad, gelu_matmul_grad) and attention in the
/// forms their verifiers take, attention_grad's query, key, value and
/// forward output (its dout is read in fp32), and the logits of
/// cross_entropy and its gradient. Where it does not, -whale-widen-bf16
/// widens the operand first.
bool takesBf16Operand(mlir::Operation *op, unsigned operand);

/// Whether the runtime stores `op`'s result `result` in bf16 itself (the
/// same ops, but attention_grad, whose gradients are fp32); where not,
/// -whale-widen-bf16 makes it fp32 and rounds it after.
bool storesBf16Result(mlir::Operation *op, unsigned result);

/// Whether the runtime runs `op` as it is: every bf16 operand taken and
/// every bf16 result stored so.
bool runsOnBf16(mlir::Operation *op);

/// Whether `op` is a matmul or matmul_grad with bf16 operands, which may
/// store its result in fp32 directly rather than round it first.
bool isBf16Matmul(mlir::Operation *op);

} // namespace whale

#endif
