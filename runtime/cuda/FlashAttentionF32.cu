//===- FlashAttentionF32.cu - fp32 attention without the scores ----------===//
//
// The fp32 launches of FlashAttention.h: FlashSimt.h's block drivers on a
// GPU block, a thread running its own share of every phase, the block
// synchronized between phases, dQ added atomically.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/FlashAttention.h"
#include "runtime/cuda/FlashSimt.h"

namespace whale::rt::cuda {

namespace {

/// FlashSimt.h's block on the GPU: this thread only, its registers, the
/// block's dynamic shared memory.
struct GpuBlock {
  template <typename T> struct Registers {
    T mine;
    __device__ T &operator[](int) { return mine; }
  };
  float *memory;
  __device__ int begin() const { return threadIdx.x; }
  __device__ int end() const { return threadIdx.x + 1; }
  __device__ void sync() const { __syncthreads(); }
  __device__ float *shared() const { return memory; }
  __device__ void add(float *p, float v) const { atomicAdd(p, v); }
};

template <int DIM>
__global__ void __launch_bounds__(kSimtThreads) simtForwardKernel(SimtArgs a) {
  extern __shared__ float shared[];
  GpuBlock b{shared};
  simtForwardBlock<SimtForwardShape<DIM>>(b, a, blockIdx.x);
}

template <int DIM>
__global__ void __launch_bounds__(kSimtThreads) simtBackwardKernel(SimtArgs a) {
  extern __shared__ float shared[];
  GpuBlock b{shared};
  simtBackwardBlock<SimtBackwardShape<DIM>>(b, a, blockIdx.x);
}

template <typename Kernel>
cudaError_t launchSimt(Kernel kernel, int64_t blocks, cudaStream_t s,
                       const SimtArgs &a) {
  return launchTiles(kernel, blocks, kSimtThreads, a.f, s, a);
}

} // namespace

cudaError_t flashForwardF32(cudaStream_t s, const AttentionDims &d,
                            const float *q, const float *k, const float *v,
                            float *out, float *lse) {
  SimtArgs a;
  a.d = d;
  a.f = flashForwardTilesF32(d.e);
  a.q = q;
  a.k = k;
  a.v = v;
  a.out = out;
  a.lseOut = lse;
  const int64_t blocks = tileCount(d.t, a.f.rows) * d.heads;
  switch (a.f.dim) {
  case 64:
    return launchSimt(simtForwardKernel<64>, blocks, s, a);
  case 128:
    return launchSimt(simtForwardKernel<128>, blocks, s, a);
  case 256:
    return launchSimt(simtForwardKernel<256>, blocks, s, a);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t flashBackwardF32(cudaStream_t s, const AttentionDims &d,
                             const float *q, const float *k, const float *v,
                             const float *out, const float *dout,
                             const float *lse, float *rowD, float *dq,
                             float *dk, float *dv) {
  SimtArgs a;
  a.d = d;
  a.f = flashBackwardTilesF32(d.e);
  a.q = q;
  a.k = k;
  a.v = v;
  a.lse = lse;
  a.dout = dout;
  a.rowD = rowD;
  a.dq = dq;
  a.dk = dk;
  a.dv = dv;
  if (cudaError_t err = flashRowDots(s, d, out, dout, rowD, dq);
      err != cudaSuccess)
    return err;
  const int64_t blocks = tileCount(d.tk, a.f.keys) * d.heads;
  switch (a.f.dim) {
  case 64:
    return launchSimt(simtBackwardKernel<64>, blocks, s, a);
  case 128:
    return launchSimt(simtBackwardKernel<128>, blocks, s, a);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace whale::rt::cuda
