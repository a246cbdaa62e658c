//===- FlashAttention.h - fused attention on the tensor cores -*- C++ -*-===//
//
// The launches of FlashAttention.cu: attention in bf16 on the tensor cores
// (mma.sync m16n8k16, fp32 accumulation) that never holds the scores, with
// the tiling of FlashPlan.h. Operands are [heads, t, e] in bf16 (the amp
// copies CudaDevice::gemmInputs makes, or amp's storage itself); gradients
// are fp32, the output fp32 or, under amp's storage, bf16.
// Without amp the fp32 kernels of FlashAttentionF32.cu run the same
// algorithm on fp32 operands (FlashSimt.h).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_FLASHATTENTION_H
#define WHALE_RUNTIME_CUDA_FLASHATTENTION_H

#include "runtime/cuda/FlashPlan.h"
#include "runtime/cuda/FlashSimt.h"

#include <cuda_runtime.h>

namespace whale::rt::cuda {

/// out = softmax(scale q k^T) v and, where `lse` is not null, each query
/// row's base-2 log-sum-exp [heads, t]; with `out` and `out16` null the
/// statistics alone (the backward's recomputation). With `out16` the
/// output is stored there in bf16, rounded once (amp's storage), and `out`
/// is not written. Needs flashForwardTiles(d.e).dim.
cudaError_t flashForward(cudaStream_t s, const AttentionDims &d, const void *q,
                         const void *k, const void *v, float *out, float *lse,
                         void *out16 = nullptr);

/// dq, dk, dv of attention from the bf16 operands (q, k, v, dout16), the
/// forward's output (fp32, or bf16 with `outBf16`) and dout in fp32 (D =
/// dO . O is taken from them), and the forward's base-2 log-sum-exp;
/// `rowD` is scratch of heads * t floats. dq is accumulated into (zeroed
/// here). Needs flashBackwardTiles(d.e).dim.
cudaError_t flashBackward(cudaStream_t s, const AttentionDims &d, const void *q,
                          const void *k, const void *v, const void *dout16,
                          const void *out, const float *dout, const float *lse,
                          float *rowD, float *dq, float *dk, float *dv,
                          bool outBf16 = false);

/// The fp32 path's forward (FlashSimt.h: fp32 FMAs, the contract's 1e-4),
/// as flashForward with fp32 operands. Needs flashForwardTilesF32(d.e).dim.
cudaError_t flashForwardF32(cudaStream_t s, const AttentionDims &d,
                            const float *q, const float *k, const float *v,
                            float *out, float *lse);

/// The fp32 path's backward, as flashBackward with fp32 operands. Needs
/// flashBackwardTilesF32(d.e).dim.
cudaError_t flashBackwardF32(cudaStream_t s, const AttentionDims &d,
                             const float *q, const float *k, const float *v,
                             const float *out, const float *dout,
                             const float *lse, float *rowD, float *dq,
                             float *dk, float *dv);

#ifdef __CUDACC__
/// One launch of a fused kernel of `threads` a block with its tiles'
/// dynamic shared memory (past 48 KiB a kernel must ask for it). Only the
/// kernels' files (.cu) launch; the host code is plain C++.
template <typename Kernel, typename Args>
cudaError_t launchTiles(Kernel kernel, int64_t blocks, int threads,
                        const FlashTiles &f, cudaStream_t s, const Args &args) {
  if (cudaError_t err = cudaFuncSetAttribute(
          kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
          static_cast<int>(f.sharedBytes));
      err != cudaSuccess)
    return err;
  if (blocks > 0x7fffffff)
    return cudaErrorInvalidConfiguration;
  kernel<<<static_cast<unsigned>(blocks), threads, f.sharedBytes, s>>>(args);
  return cudaGetLastError();
}
#endif

/// Both backwards' first steps: dq zeroed (the key blocks add to it) and
/// rowD = dO . O per query row [heads, t].
cudaError_t flashRowDots(cudaStream_t s, const AttentionDims &d,
                         const float *out, const float *dout, float *rowD,
                         float *dq);

} // namespace whale::rt::cuda

#endif
