//===- FlashAttention.h - fused attention on the tensor cores -*- C++ -*-===//
//
// The launches of FlashAttention.cu: attention in bf16 on the tensor cores
// (mma.sync m16n8k16, fp32 accumulation) that never holds the scores, with
// the tiling of FlashPlan.h. Operands are [heads, t, e] in bf16 (the amp
// copies CudaDevice::gemmInputs makes); outputs and gradients are fp32.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_FLASHATTENTION_H
#define WHALE_RUNTIME_CUDA_FLASHATTENTION_H

#include "runtime/cuda/FlashPlan.h"

#include <cuda_runtime.h>

namespace whale::rt::cuda {

/// out = softmax(scale q k^T) v and, where `lse` is not null, each query
/// row's base-2 log-sum-exp [heads, t]; with `out` null the statistics
/// alone (the backward's recomputation). Needs flashForwardTiles(d.e).dim.
cudaError_t flashForward(cudaStream_t s, const AttentionDims &d, const void *q,
                         const void *k, const void *v, float *out, float *lse);

/// dq, dk, dv of attention from the bf16 operands (q, k, v, dout16), the
/// forward's output and dout in fp32 (D = dO . O is taken from them), and
/// the forward's base-2 log-sum-exp; `rowD` is scratch of heads * t
/// floats. dq is accumulated into (zeroed here). Needs
/// flashBackwardTiles(d.e).dim.
cudaError_t flashBackward(cudaStream_t s, const AttentionDims &d, const void *q,
                          const void *k, const void *v, const void *dout16,
                          const float *out, const float *dout, const float *lse,
                          float *rowD, float *dq, float *dk, float *dv);

} // namespace whale::rt::cuda

#endif
