//===- CudaKernels.cu - the CUDA kernels of every whale op ----------------===//
//
// Elementwise ops run one thread per element over a grid-stride loop; ops
// over rows (softmax on the last axis, layernorm, cross entropy) run one
// block per row with warp-shuffle reductions; broadcasting, transposes and
// reductions over any axes walk index maps the host computed. Formulas are
// those of runtime/cpu/ so both devices train to the same numbers.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/ColumnSumKernels.cuh"
#include "runtime/cuda/CudaKernels.h"
#include "runtime/cuda/GridLaunch.cuh"

#include <cuda_bf16.h>

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace whale::rt::cuda {

namespace {

__device__ float warpSum(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

__device__ float warpMax(float v) {
  for (int o = 16; o > 0; o >>= 1)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// The sum (or max) of v over the block, returned to every thread.
template <bool Max> __device__ float blockReduce(float v) {
  __shared__ float partial[32];
  __shared__ float result;
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  v = Max ? warpMax(v) : warpSum(v);
  if (lane == 0)
    partial[warp] = v;
  __syncthreads();
  if (warp == 0) {
    int warps = (blockDim.x + 31) >> 5;
    float w = lane < warps ? partial[lane] : (Max ? -INFINITY : 0.0f);
    w = Max ? warpMax(w) : warpSum(w);
    if (lane == 0)
      result = w;
  }
  __syncthreads();
  float r = result;
  __syncthreads(); // partial and result are reused by the next call
  return r;
}

template <class T> __global__ void fillKernel(T *p, int64_t n, T v) {
  WHALE_GRID_LOOP(i, n) { p[i] = v; }
}

__global__ void binaryKernel(int op, const float *a, const float *b, float *out,
                             Strided map, int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t oa, ob;
    stridedOffsets(map, i, oa, ob);
    out[i] = applyBinary(op, a[oa], b[ob]);
  }
}

__global__ void binaryGradKernel(int op, int which, const float *a,
                                 const float *b, const float *dout, float *grad,
                                 Walk walk, int64_t parts, int64_t perPart) {
  WHALE_GRID_LOOP(t, parts) {
    grad[t] = binaryGradientAt(op, which, a, b, dout, walk, t, perPart);
  }
}

/// When few outputs each sum many inputs (a bias's gradient: 768 sums of
/// 8192), a thread per output leaves the GPU idle; a block per output
/// splits each sum over its threads, in a fixed order.
constexpr int64_t kBlockPerOutputMin = 128;
bool blockPerOutput(int64_t outputs, int64_t perOutput) {
  return perOutput >= kBlockPerOutputMin && outputs <= (1 << 20);
}

__global__ void binaryGradBlocksKernel(int op, int which, const float *a,
                                       const float *b, const float *dout,
                                       float *grad, Walk walk,
                                       int64_t perPart) {
  int64_t t = blockIdx.x;
  float sum = 0;
  for (int64_t r = threadIdx.x; r < perPart; r += blockDim.x) {
    Offsets o = walkOffsets(walk, t, r);
    sum += binaryPartial(op, which, a[o.a], b[o.b], dout[o.full]);
  }
  sum = blockReduce<false>(sum);
  if (threadIdx.x == 0)
    grad[t] = sum;
}

__global__ void sumMembersKernel(MemberPointers p, int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    float acc = p.from[0][i];
    for (int k = 1; k < p.froms; ++k)
      acc += p.from[k][i];
    for (int k = 0; k < p.tos; ++k)
      p.to[k][i] = acc;
  }
}

__global__ void unaryKernel(int op, const float *x, float *out, int64_t n) {
  WHALE_GRID_LOOP(i, n) { out[i] = unaryValue(op, x[i]); }
}

__global__ void unaryGradKernel(int op, const float *x, const float *y,
                                const float *dy, float *dx, int64_t n) {
  WHALE_GRID_LOOP(i, n) { dx[i] = unaryGradient(op, x[i], y[i], dy[i]); }
}

__global__ void causalMaskKernel(const float *x, float *out, int64_t n,
                                 int64_t rows, int64_t cols, bool gradient) {
  WHALE_GRID_LOOP(i, n) {
    out[i] =
        causallyMasked(i, rows, cols) ? (gradient ? 0.0f : -INFINITY) : x[i];
  }
}

__global__ void topkKernel(const float *x, int64_t rows, int64_t n, int64_t k,
                           float *values, int32_t *positions) {
  WHALE_GRID_LOOP(r, rows) {
    topkRow(x + r * n, n, k, values ? values + r * k : nullptr,
            positions ? positions + r * k : nullptr);
  }
}

__global__ void topkGradKernel(const float *x, int64_t n, int64_t k,
                               const float *dy, float *dx, int64_t total) {
  WHALE_GRID_LOOP(e, total) {
    int64_t r = e / n, i = e % n;
    int64_t rank = rankInRow(x + r * n, n, i);
    dx[e] = rank < k ? dy[r * k + rank] : 0.0f;
  }
}

__global__ void im2colKernel(const float *x, float *cols, int64_t rowStride,
                             Planes p, Window2d w, int64_t positions,
                             int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t row = i / positions, col = i % positions;
    cols[row * rowStride + col] = im2colAt(x, p, w, row, col);
  }
}

__global__ void col2imKernel(const float *cols, int64_t rowStride, float *dx,
                             Planes p, Window2d w, int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t x = i % p.width, h = (i / p.width) % p.height,
            c = i / (p.width * p.height);
    dx[i] = col2imAt(cols, rowStride, p, w, c, h, x);
  }
}

__global__ void pool2dKernel(bool max, const float *x, float *y, Planes p,
                             Window2d w, int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t ow = i % p.outW, oh = (i / p.outW) % p.outH,
            c = i / (p.outW * p.outH);
    y[i] = poolAt(max, x + c * p.height * p.width, p, w, oh, ow);
  }
}

__global__ void pool2dGradKernel(bool max, const float *x, const float *dy,
                                 float *dx, Planes p, Window2d w, int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t xx = i % p.width, h = (i / p.width) % p.height,
            c = i / (p.width * p.height);
    dx[i] = poolGradAt(max, x + c * p.height * p.width,
                       dy + c * p.outH * p.outW, p, w, h, xx);
  }
}

__global__ void gatherKernel(const float *x, float *out, Strided map,
                             int64_t n) {
  WHALE_GRID_LOOP(i, n) {
    int64_t o, unused;
    stridedOffsets(map, i, o, unused);
    out[i] = x[o];
  }
}

/// log(sum(exp(row))) of one row, shared by the block.
__device__ float rowLogSumExp(const float *row, int64_t classes) {
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
    m = fmaxf(m, row[j]);
  m = blockReduce<true>(m);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
    sum += expf(row[j] - m);
  return m + logf(blockReduce<false>(sum));
}

/// Whether a row of n floats at p can be read as float4s.
__device__ bool fourAligned(const void *p, int64_t n) {
  return n % 4 == 0 && (reinterpret_cast<uintptr_t>(p) & 15) == 0;
}

/// Logits as fp32, from either storage (bf16: amp's, widened exactly as
/// they are loaded): one, or four from 4j on in one load where
/// quadsAligned says the row allows it.
__device__ inline float logitAt(const float *row, int64_t j) { return row[j]; }
__device__ inline float logitAt(const uint16_t *row, int64_t j) {
  return __uint_as_float(static_cast<uint32_t>(row[j]) << 16);
}
__device__ inline float4 fourLogits(const float *row, int64_t j) {
  return reinterpret_cast<const float4 *>(row)[j];
}
__device__ inline float4 fourLogits(const uint16_t *row, int64_t j) {
  const ushort4 q = reinterpret_cast<const ushort4 *>(row)[j];
  auto wide = [](unsigned short h) {
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
  };
  return make_float4(wide(q.x), wide(q.y), wide(q.z), wide(q.w));
}
template <typename T> __device__ bool quadsAligned(const T *p, int64_t n) {
  return n % 4 == 0 && (reinterpret_cast<uintptr_t>(p) % (4 * sizeof(T))) == 0;
}

/// log(sum(exp(row))) in one pass over the row (OnlineLse), shared by
/// the block: a fourth of the reads of max-then-sum where the row is too
/// long to stay in cache (a vocabulary's logits). Parts merge in a fixed
/// order, so every run gives the same bits.
template <typename T> __device__ float rowOnlineLse(const T *row, int64_t n) {
  OnlineLse acc;
  if (quadsAligned(row, n)) {
    for (int64_t j = threadIdx.x; j < n / 4; j += blockDim.x) {
      float4 q = fourLogits(row, j);
      acc.add(q.x);
      acc.add(q.y);
      acc.add(q.z);
      acc.add(q.w);
    }
  } else {
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
      acc.add(logitAt(row, j));
  }
  auto warpMerge = [](OnlineLse a) {
    for (int o = 16; o > 0; o >>= 1) {
      OnlineLse b;
      b.m = __shfl_xor_sync(0xffffffffu, a.m, o);
      b.s = __shfl_xor_sync(0xffffffffu, a.s, o);
      a.merge(b);
    }
    return a;
  };
  __shared__ float partM[32], partS[32];
  __shared__ float result;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  acc = warpMerge(acc);
  if (lane == 0) {
    partM[warp] = acc.m;
    partS[warp] = acc.s;
  }
  __syncthreads();
  if (warp == 0) {
    OnlineLse w;
    if (lane < static_cast<int>((blockDim.x + 31) >> 5)) {
      w.m = partM[lane];
      w.s = partS[lane];
    }
    w = warpMerge(w);
    if (lane == 0)
      result = w.value();
  }
  __syncthreads();
  return result;
}

/// Softmax of contiguous rows: one block per row.
__global__ void softmaxRowsKernel(const float *x, float *y, int64_t extent) {
  const float *in = x + blockIdx.x * extent;
  float *out = y + blockIdx.x * extent;
  float lse = rowLogSumExp(in, extent);
  for (int64_t j = threadIdx.x; j < extent; j += blockDim.x)
    out[j] = expf(in[j] - lse);
}

/// Softmax along a strided axis: one thread per (outer, inner) position.
__global__ void softmaxStridedKernel(const float *x, float *y, int64_t outer,
                                     int64_t extent, int64_t inner) {
  WHALE_GRID_LOOP(p, outer * inner) {
    const float *in = x + (p / inner) * extent * inner + p % inner;
    float *out = y + (p / inner) * extent * inner + p % inner;
    float m = -INFINITY;
    for (int64_t j = 0; j < extent; ++j)
      m = fmaxf(m, in[j * inner]);
    float sum = 0;
    for (int64_t j = 0; j < extent; ++j)
      sum += expf(in[j * inner] - m);
    for (int64_t j = 0; j < extent; ++j)
      out[j * inner] = expf(in[j * inner] - m) / sum;
  }
}

__global__ void softmaxGradRowsKernel(const float *y, const float *dy,
                                      float *dx, int64_t extent) {
  int64_t base = blockIdx.x * extent;
  float dot = 0;
  for (int64_t j = threadIdx.x; j < extent; j += blockDim.x)
    dot += y[base + j] * dy[base + j];
  dot = blockReduce<false>(dot);
  for (int64_t j = threadIdx.x; j < extent; j += blockDim.x)
    dx[base + j] = y[base + j] * (dy[base + j] - dot);
}

__global__ void softmaxGradStridedKernel(const float *y, const float *dy,
                                         float *dx, int64_t outer,
                                         int64_t extent, int64_t inner) {
  WHALE_GRID_LOOP(p, outer * inner) {
    int64_t base = (p / inner) * extent * inner + p % inner;
    float dot = 0;
    for (int64_t j = 0; j < extent; ++j)
      dot += y[base + j * inner] * dy[base + j * inner];
    for (int64_t j = 0; j < extent; ++j)
      dx[base + j * inner] = y[base + j * inner] * (dy[base + j * inner] - dot);
  }
}

__global__ void layerNormKernel(const float *x, const float *gamma,
                                const float *beta, float eps, float *y,
                                float *mean, float *rstd, int64_t width) {
  const float *in = x + blockIdx.x * width;
  float *out = y + blockIdx.x * width;
  float sum = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    sum += in[j];
  float mu = blockReduce<false>(sum) / width;
  float sq = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    sq += (in[j] - mu) * (in[j] - mu);
  float r = rsqrtf(blockReduce<false>(sq) / width + eps);
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    out[j] = (in[j] - mu) * r * gamma[j] + (beta ? beta[j] : 0.0f);
  if (threadIdx.x == 0) {
    mean[blockIdx.x] = mu;
    rstd[blockIdx.x] = r;
  }
}

/// One thread per pair (i, i + E/2) of a row of position t: the angle as
/// transformers computes it in f32 (cpu/Rope.cpp).
__global__ void ropeKernel(const float *x, int64_t first, float theta,
                           RopeScaling scaling, bool scaled, float sign,
                           float *y, int64_t pairs, int64_t positions,
                           int64_t width) {
  const int64_t half = width / 2;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < pairs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = p / half, i = p % half;
    const float invFreq =
        ropeInvFreq(i, width, theta, scaled ? &scaling : nullptr);
    const float angle = static_cast<float>(first + row % positions) * invFreq;
    const float c = static_cast<float>(cos(double(angle)));
    const float s = sign * static_cast<float>(sin(double(angle)));
    const float a = x[row * width + i], b = x[row * width + i + half];
    y[row * width + i] = a * c - b * s;
    y[row * width + i + half] = b * c + a * s;
  }
}

/// One block per row: y = x * rstd * weight, rstd kept for the backward.
__global__ void rmsNormKernel(const float *x, const float *weight, float eps,
                              float *y, float *rstd, int64_t width) {
  const float *in = x + blockIdx.x * width;
  float *out = y + blockIdx.x * width;
  float sq = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    sq += in[j] * in[j];
  float r = rsqrtf(blockReduce<false>(sq) / width + eps);
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    out[j] = in[j] * r * weight[j];
  if (threadIdx.x == 0)
    rstd[blockIdx.x] = r;
}

/// dx = rstd * (g - xhat * mean(g * xhat)), g = dy * weight.
__global__ void rmsNormGradRowsKernel(const float *x, const float *weight,
                                      const float *rstd, const float *dy,
                                      float *dx, int64_t width) {
  int64_t base = blockIdx.x * width;
  float r = rstd[blockIdx.x];
  float sumGX = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    sumGX += weight[j] * dy[base + j] * x[base + j] * r;
  sumGX = blockReduce<false>(sumGX) / width;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x)
    dx[base + j] = r * (weight[j] * dy[base + j] - x[base + j] * r * sumGX);
}

__global__ void layerNormGradRowsKernel(const float *x, const float *gamma,
                                        const float *mean, const float *rstd,
                                        const float *dy, float *dx,
                                        int64_t width) {
  int64_t base = blockIdx.x * width;
  float mu = mean[blockIdx.x], r = rstd[blockIdx.x];
  float sumG = 0, sumGX = 0;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    float g = gamma[j] * dy[base + j];
    sumG += g;
    sumGX += g * (x[base + j] - mu) * r;
  }
  sumG = blockReduce<false>(sumG) / width;
  sumGX = blockReduce<false>(sumGX) / width;
  for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
    float xhat = (x[base + j] - mu) * r;
    dx[base + j] = r * (gamma[j] * dy[base + j] - sumG - xhat * sumGX);
  }
}

/// Elements a thread keeps of its row in the fused layernorm gradient.
constexpr int kLayerNormPerThread = kLayerNormRowMax / kRowThreads;
/// Blocks of the fused layernorm gradient: each adds its rows' dgamma and
/// dbeta terms, so more blocks mean more partial sums to add after.
constexpr int64_t kLayerNormGradBlocks = 264;

__global__ void layerNormGradFusedKernel(const float *x, const float *gamma,
                                         const float *dy, const float *residual,
                                         float eps, float *dx, float *partials,
                                         int64_t rows, int64_t width) {
  constexpr int K = kLayerNormPerThread;
  float dg[K], db[K], xv[K], dv[K];
#pragma unroll
  for (int k = 0; k < K; ++k)
    dg[k] = db[k] = 0;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const float *xr = x + r * width, *dyr = dy + r * width;
    // The forward's statistics, its sums in its order (layerNormKernel).
    float sum = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = threadIdx.x + k * blockDim.x;
      xv[k] = j < width ? xr[j] : 0.0f;
      dv[k] = j < width ? dyr[j] : 0.0f;
      sum += xv[k];
    }
    const float mu = blockReduce<false>(sum) / width;
    float sq = 0;
#pragma unroll
    for (int k = 0; k < K; ++k)
      if (threadIdx.x + k * blockDim.x < width)
        sq += (xv[k] - mu) * (xv[k] - mu);
    const float rs = rsqrtf(blockReduce<false>(sq) / width + eps);
    float sumG = 0, sumGX = 0;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = threadIdx.x + k * blockDim.x;
      if (j < width) {
        const float g = gamma[j] * dv[k], xhat = (xv[k] - mu) * rs;
        sumG += g;
        sumGX += g * xhat;
        dg[k] += dv[k] * xhat;
        db[k] += dv[k];
      }
    }
    sumG = blockReduce<false>(sumG) / width;
    sumGX = blockReduce<false>(sumGX) / width;
    float *dxr = dx + r * width;
    const float *res = residual ? residual + r * width : nullptr;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t j = threadIdx.x + k * blockDim.x;
      if (j < width) {
        const float xhat = (xv[k] - mu) * rs;
        const float d = rs * (gamma[j] * dv[k] - sumG - xhat * sumGX);
        dxr[j] = res ? res[j] + d : d; // as `residual + dx` would add
      }
    }
  }
  float *mine = partials + blockIdx.x * 2 * width;
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t j = threadIdx.x + k * blockDim.x;
    if (j < width) {
      mine[j] = dg[k];
      mine[width + j] = db[k];
    }
  }
}

/// dgamma and dbeta: the blocks' partial sums added in block order.
__global__ void layerNormGradColumnsKernel(const float *partials,
                                           int64_t blocks, int64_t width,
                                           float *dgamma, float *dbeta) {
  WHALE_GRID_LOOP(i, 2 * width) {
    const int64_t which = i / width, c = i % width;
    float s = 0;
    for (int64_t b = 0; b < blocks; ++b)
      s += partials[(b * 2 + which) * width + c];
    (which ? dbeta : dgamma)[c] = s;
  }
}

/// dgamma and dbeta of a row: the sums over rows of dy * xhat and dy.
struct LayerNormGradTerm {
  static constexpr int kOutputs = 2;
  const float *x, *mean, *rstd, *dy;
  int64_t width;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * width + c;
    const float d = dy[e];
    acc[0] += d * (x[e] - mean[r]) * rstd[r];
    acc[1] += d;
  }
};

/// RMS normalization's weight gradient: dy * xhat summed over rows.
struct RmsNormGradTerm {
  static constexpr int kOutputs = 1;
  const float *x, *rstd, *dy;
  int64_t width;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * width + c;
    acc[0] += dy[e] * x[e] * rstd[r];
  }
};

/// A bias's gradient: a op b's terms for one operand summed over rows,
/// each operand read per element or per column (ColumnOperands), and only
/// where the op's partial reads it.
struct BinaryGradTerm {
  static constexpr int kOutputs = 1;
  int op, which;
  const float *a, *b, *dout;
  ColumnOperands shape;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * shape.width + c;
    // mul's partial for a reads b and for b reads a; div's reads b for
    // both and a for b's (binaryPartial).
    const bool readsA = which == 1 && op >= 2;
    const bool readsB = op == 3 || (op == 2 && which == 0);
    float av = readsA ? a[shape.aPerColumn ? c : e] : 0.0f;
    float bv = readsB ? b[shape.bPerColumn ? c : e] : 0.0f;
    acc[0] += binaryPartial(op, which, av, bv, dout[e]);
  }
};

/// A sum of rows.
struct RowSumTerm {
  static constexpr int kOutputs = 1;
  const float *x;
  int64_t width;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    acc[0] += x[r * width + c];
  }
};

/// A sum of rows that stores each element rounded to bf16 as it adds it.
struct RoundingRowSumTerm {
  static constexpr int kOutputs = 1;
  const float *x;
  __nv_bfloat16 *rounded;
  int64_t width;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * width + c;
    const float v = x[e];
    rounded[e] = __float2bfloat16_rn(v);
    acc[0] += v;
  }
};

/// One block per channel, its threads over the channel's rows x size.
__global__ void channelSumsKernel(const float *x, const float *center,
                                  float *sums, int64_t rows, int64_t channels,
                                  int64_t size) {
  int64_t c = blockIdx.x;
  float m = center ? center[c] : 0.0f, acc = 0;
  for (int64_t i = threadIdx.x; i < rows * size; i += blockDim.x) {
    float v = x[((i / size) * channels + c) * size + i % size];
    acc += center ? (v - m) * (v - m) : v;
  }
  acc = blockReduce<false>(acc);
  if (threadIdx.x == 0)
    sums[c] = acc;
}

__global__ void channelAffineKernel(const float *x, const float *center,
                                    const float *scale, const float *shift,
                                    float *y, int64_t n, int64_t channels,
                                    int64_t size) {
  WHALE_GRID_LOOP(i, n) {
    int64_t c = (i / size) % channels;
    y[i] = (x[i] - center[c]) * scale[c] + shift[c];
  }
}

__global__ void channelGradSumsKernel(const float *x, const float *dy,
                                      const float *center, const float *invstd,
                                      float *sums, int64_t rows,
                                      int64_t channels, int64_t size) {
  int64_t c = blockIdx.x;
  float m = center[c], g = 0, gx = 0;
  for (int64_t i = threadIdx.x; i < rows * size; i += blockDim.x) {
    int64_t at = ((i / size) * channels + c) * size + i % size;
    g += dy[at];
    gx += dy[at] * (x[at] - m);
  }
  g = blockReduce<false>(g);
  gx = blockReduce<false>(gx);
  if (threadIdx.x == 0) {
    sums[c] = g;
    sums[channels + c] = gx * invstd[c];
  }
}

__global__ void channelGradInputKernel(const float *x, const float *dy,
                                       const float *center, const float *a,
                                       const float *b, const float *d,
                                       float *dx, int64_t n, int64_t channels,
                                       int64_t size) {
  WHALE_GRID_LOOP(i, n) {
    int64_t c = (i / size) % channels;
    dx[i] = a[c] * dy[i] + b[c] * (x[i] - center[c]) + d[c];
  }
}

__device__ int64_t indexAt(const void *ids, bool wide, int64_t i) {
  return wide ? static_cast<const int64_t *>(ids)[i]
              : static_cast<const int32_t *>(ids)[i];
}

__device__ void report(DataError *error, int64_t position, int64_t value) {
  // Any one bad index will do; the first one written stays.
  if (atomicCAS(reinterpret_cast<unsigned long long *>(&error->position),
                static_cast<unsigned long long>(-1),
                static_cast<unsigned long long>(position)) ==
      static_cast<unsigned long long>(-1))
    error->value = value;
}

__global__ void moeSlotsKernel(MoeShape m, const int32_t *experts,
                               int32_t *slots, int32_t *counts,
                               DataError *error) {
  WHALE_GRID_LOOP(g, m.groups) {
    const int64_t base = g * m.tokens * m.choices;
    int64_t bad = moeGroupSlots(m, experts + base, slots + base,
                                counts + g * m.experts);
    if (bad >= 0)
      report(error, base + bad, experts[base + bad]);
  }
}

__global__ void moeDispatchKernel(MoeShape m, const float *tokens,
                                  const int32_t *slots, const float *gates,
                                  float *slotted) {
  WHALE_GRID_LOOP(i, m.choiceCount() * m.width) {
    const int64_t choice = i / m.width, c = i % m.width;
    const int32_t slot = slots[choice];
    if (slot >= 0) {
      const int64_t g = choice / (m.tokens * m.choices);
      const float w = gates ? gates[choice] : 1.0f;
      slotted[m.row(g, slot) * m.width + c] =
          w * tokens[(choice / m.choices) * m.width + c];
    }
  }
}

__global__ void moeCombineKernel(MoeShape m, const float *slotted,
                                 const int32_t *slots, const float *gates,
                                 float *tokens) {
  WHALE_GRID_LOOP(i, m.groups * m.tokens * m.width) {
    const int64_t token = i / m.width, c = i % m.width;
    const int64_t g = token / m.tokens;
    float sum = 0.0f;
    for (int64_t j = 0; j < m.choices; ++j) {
      const int64_t choice = token * m.choices + j;
      if (slots[choice] >= 0)
        sum += (gates ? gates[choice] : 1.0f) *
               slotted[m.row(g, slots[choice]) * m.width + c];
    }
    tokens[i] = sum;
  }
}

__global__ void moeGateGradKernel(MoeShape m, const float *tokens,
                                  const float *slotted, const int32_t *slots,
                                  float *dgates) {
  WHALE_GRID_LOOP(choice, m.choiceCount()) {
    float dot = 0.0f;
    if (slots[choice] >= 0) {
      const int64_t g = choice / (m.tokens * m.choices);
      const float *x = tokens + (choice / m.choices) * m.width;
      const float *y = slotted + m.row(g, slots[choice]) * m.width;
      for (int64_t c = 0; c < m.width; ++c)
        dot += x[c] * y[c];
    }
    dgates[choice] = dot;
  }
}

__global__ void dropoutKernel(const float *x, int64_t n, DropoutDraw byValue,
                              const DropoutDraw *live, int64_t base,
                              float scale, float *y) {
  const DropoutDraw draw = live ? *live : byValue;
  WHALE_GRID_LOOP(i, n) { y[i] = draw.keep(base + i) ? x[i] * scale : 0.0f; }
}

__global__ void oneHotKernel(const int32_t *ids, int64_t count,
                             int64_t classes, float *out, DataError *error) {
  WHALE_GRID_LOOP(i, count) {
    if (ids[i] < 0 || ids[i] >= classes)
      report(error, i, ids[i]);
    else
      out[i * classes + ids[i]] = 1.0f;
  }
}

__global__ void embeddingKernel(const float *table, const void *ids, bool wide,
                                float *out, int64_t count, int64_t vocab,
                                int64_t width, DataError *error) {
  WHALE_GRID_LOOP(i, count * width) {
    int64_t k = i / width, id = indexAt(ids, wide, k);
    if (id < 0 || id >= vocab) {
      report(error, k, id);
      out[i] = 0;
    } else {
      out[i] = table[id * width + i % width];
    }
  }
}

__global__ void embeddingGradKernel(const void *ids, bool wide,
                                    const float *dout, float *dtable,
                                    int64_t count, int64_t vocab, int64_t width,
                                    DataError *error) {
  WHALE_GRID_LOOP(i, count * width) {
    int64_t k = i / width, id = indexAt(ids, wide, k);
    if (id < 0 || id >= vocab)
      report(error, k, id);
    else
      atomicAdd(&dtable[id * width + i % width], dout[i]);
  }
}

template <typename T>
__global__ void crossEntropyKernel(const T *logits, const void *labels,
                                   bool wide, float *loss, int64_t classes,
                                   DataError *error) {
  const T *row = logits + blockIdx.x * classes;
  int64_t y = indexAt(labels, wide, blockIdx.x);
  float lse = rowOnlineLse(row, classes);
  if (threadIdx.x == 0) {
    if (y < 0 || y >= classes) {
      report(error, blockIdx.x, y);
      loss[blockIdx.x] = 0;
    } else {
      loss[blockIdx.x] = lse - logitAt(row, y);
    }
  }
}

template <typename T>
__global__ void crossEntropyGradKernel(const T *logits, const void *labels,
                                       bool wide, const float *dloss,
                                       float *dlogits, int64_t classes,
                                       DataError *error) {
  const T *row = logits + blockIdx.x * classes;
  float *out = dlogits + blockIdx.x * classes;
  int64_t y = indexAt(labels, wide, blockIdx.x);
  if (threadIdx.x == 0 && (y < 0 || y >= classes))
    report(error, blockIdx.x, y);
  // Two passes over the logits (the log-sum-exp, then the gradient) and
  // one over the gradient.
  float lse = rowOnlineLse(row, classes), d = dloss[blockIdx.x];
  if (quadsAligned(row, classes) && fourAligned(out, classes)) {
    float4 *to = reinterpret_cast<float4 *>(out);
    for (int64_t j = threadIdx.x; j < classes / 4; j += blockDim.x) {
      float4 q = fourLogits(row, j);
      int64_t at = 4 * j;
      to[j] = make_float4((expf(q.x - lse) - (at == y ? 1.0f : 0.0f)) * d,
                          (expf(q.y - lse) - (at + 1 == y ? 1.0f : 0.0f)) * d,
                          (expf(q.z - lse) - (at + 2 == y ? 1.0f : 0.0f)) * d,
                          (expf(q.w - lse) - (at + 3 == y ? 1.0f : 0.0f)) * d);
    }
    return;
  }
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
    out[j] = (expf(logitAt(row, j) - lse) - (j == y ? 1.0f : 0.0f)) * d;
}

/// Each row's log-sum-exp as crossEntropyGradKernel computes it (the same
/// function, the same block), a label outside [0, classes) reported.
template <typename T>
__global__ void crossEntropyLseKernel(const T *logits, const void *labels,
                                      bool wide, float *lse, int64_t classes,
                                      DataError *error) {
  const T *row = logits + blockIdx.x * classes;
  const float l = rowOnlineLse(row, classes);
  if (threadIdx.x == 0) {
    const int64_t y = indexAt(labels, wide, blockIdx.x);
    if (y < 0 || y >= classes)
      report(error, blockIdx.x, y);
    lse[blockIdx.x] = l;
  }
}

/// Cross entropy's gradient as crossEntropyGradKernel computes each
/// element (the same expression), stored rounded to bf16 and added into
/// the sums over rows of a [rows, width] view of it (ColumnSums.h).
template <typename T> struct CrossEntropyGradTerm {
  static constexpr int kOutputs = 1;
  const T *logits;
  const void *labels;
  bool wide;
  const float *lse, *dloss;
  __nv_bfloat16 *rounded;
  int64_t width, classes;
  __device__ void operator()(int64_t r, int64_t c, float *acc) const {
    const int64_t e = r * width + c;
    // The bias's sum is over every row of logits in practice (width ==
    // classes): no 64-bit division an element there.
    const bool byRow = width == classes;
    const int64_t row = byRow ? r : e / classes, j = byRow ? c : e % classes;
    const int64_t y = indexAt(labels, wide, row);
    const float g =
        (expf(logitAt(logits + row * classes, j) - lse[row]) -
         (j == y ? 1.0f : 0.0f)) *
        dloss[row];
    rounded[e] = __float2bfloat16_rn(g);
    acc[0] += g;
  }
};

__global__ void reduceKernel(int op, const float *x, float *out, Walk walk,
                             int64_t kept, int64_t count) {
  WHALE_GRID_LOOP(t, kept) { out[t] = reduceAt(op, x, walk, t, count); }
}

__global__ void reduceBlocksKernel(int op, const float *x, float *out,
                                   Walk walk, int64_t count) {
  int64_t t = blockIdx.x;
  float acc = op == 2 ? -INFINITY : 0.0f;
  for (int64_t r = threadIdx.x; r < count; r += blockDim.x) {
    float v = x[walkOffsets(walk, t, r).full];
    acc = op == 2 ? fmaxf(acc, v) : acc + v;
  }
  acc = op == 2 ? blockReduce<true>(acc) : blockReduce<false>(acc);
  if (threadIdx.x == 0)
    out[t] = op == 1 ? acc / count : acc;
}

__global__ void reduceGradKernel(int op, const float *x, const float *dout,
                                 float *dx, Walk walk, int64_t kept,
                                 int64_t count) {
  WHALE_GRID_LOOP(t, kept) {
    reduceGradientAt(op, x, dout, dx, walk, t, count);
  }
}

__global__ void toBf16Kernel(const float *x, __nv_bfloat16 *out, int64_t n) {
  WHALE_GRID_LOOP(i, n) { out[i] = __float2bfloat16_rn(x[i]); }
}

__global__ void fromBf16Kernel(const __nv_bfloat16 *x, float *out, int64_t n) {
  WHALE_GRID_LOOP(i, n) { out[i] = __bfloat162float(x[i]); }
}

__global__ void nonFiniteKernel(const float *x, int64_t n, int *flag) {
  WHALE_GRID_LOOP(i, n) {
    if (!isfinite(x[i]))
      *flag = 1;
  }
}

/// A chunk's scores (`rows` query rows of whole heads) into probabilities,
/// in place (AttentionPlan.h): a block per row. Each thread keeps to its
/// own keys across the three passes, so only the reductions synchronize.
__global__ void attentionSoftmaxKernel(AttentionDims d, float *scores,
                                       int64_t rows) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const int64_t i = row % d.t;
    float *s = scores + row * d.tk;
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < d.tk; j += blockDim.x) {
      s[j] = visibleScore(d, i, j, s[j]);
      mx = fmaxf(mx, s[j]);
    }
    mx = blockReduce<true>(mx);
    float total = 0;
    for (int64_t j = threadIdx.x; j < d.tk; j += blockDim.x) {
      s[j] = unnormalized(s[j], mx);
      total += s[j];
    }
    total = blockReduce<false>(total);
    const float inv = total > 0 ? 1.0f / total : 0.0f;
    for (int64_t j = threadIdx.x; j < d.tk; j += blockDim.x)
      s[j] *= inv;
  }
}

/// dP into dS in place, a block per query row: the row's D = dO . O, then
/// each key's gradient.
__global__ void attentionScoreGradKernel(AttentionDims d, const float *p,
                                         float *dp, const float *dout,
                                         const float *out, int64_t rows) {
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    float dot = 0;
    for (int64_t x = threadIdx.x; x < d.e; x += blockDim.x)
      dot += dout[row * d.e + x] * out[row * d.e + x];
    dot = blockReduce<false>(dot);
    for (int64_t j = threadIdx.x; j < d.tk; j += blockDim.x)
      dp[row * d.tk + j] =
          scoreGradient(d, p[row * d.tk + j], dp[row * d.tk + j], dot);
  }
}

/// Every block of the interpreter's kernels first copies the program to
/// shared memory: each thread reads every instruction of it per point.
__device__ const fused::Instr *loadProgram(const fused::Instr *code,
                                           int count) {
  extern __shared__ fused::Instr program[];
  for (int i = threadIdx.x; i < count; i += blockDim.x)
    program[i] = code[i];
  __syncthreads();
  return program;
}

__global__ void fusedProgramKernel(fused::Layout l, const fused::Instr *code,
                                   int count, FusedOperands p) {
  const fused::Instr *program = loadProgram(code, count);
  WHALE_GRID_LOOP(t, l.threads)
  fused::runThread(l, program, count, p.data, t);
}

/// A program whose sums are split (fused::termParts): thread (t, part) adds
/// its run of terms into `partials` [outputs, parts, threads].
__global__ void fusedPartsKernel(fused::Layout l, const fused::Instr *code,
                                 int count, FusedOperands p, int64_t parts,
                                 float *partials) {
  const fused::Instr *program = loadProgram(code, count);
  WHALE_GRID_LOOP(at, l.threads * parts)
  fused::runPart(l, program, count, p.data, at, parts, partials);
}

/// The parts of each sum added in order, and written.
__global__ void fusedPartsSumKernel(fused::Layout l, FusedOperands p,
                                    int64_t parts, const float *partials) {
  WHALE_GRID_LOOP(t, l.threads)
  fused::sumParts(l, p.data, t, parts, partials);
}

} // namespace

/// A program with a row op: a block per row. Its threads compute the row's
/// points, the block reduces the row's statistics, then its threads apply
/// the row op. A rounded row's f32 values stay in shared memory after the
/// program (each thread only ever touches its own columns of it).
__global__ void fusedRowProgramKernel(fused::Layout l, const fused::Instr *code,
                                      int count, FusedOperands p) {
  const fused::Instr *program = loadProgram(code, count);
  float *scratch = reinterpret_cast<float *>(
      const_cast<fused::Instr *>(program) + count);
  const int64_t width = l.extents[l.rank - 1];
  const float w = static_cast<float>(width);
  for (int64_t row = blockIdx.x; row < l.threads; row += gridDim.x) {
    float *y = fused::rowValues(l, p.data, row, scratch);
    float local = 0;
    for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
      const float v =
          fused::rowElement(l, program, count, p.data, row, c, y);
      local = l.rowOp == fused::LayerNorm ? local + v
              : c == threadIdx.x          ? v
                                          : fmaxf(local, v);
    }
    if (l.rowOp == fused::LayerNorm) {
      const float mean = blockReduce<false>(local) / w;
      float squares = 0;
      for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
        squares += (y[c] - mean) * (y[c] - mean);
      const float rstd = 1.0f / sqrtf(blockReduce<false>(squares) / w + l.eps);
      for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
        fused::layerNormElement(l, p.data, row, c, mean, rstd, y);
    } else {
      if (threadIdx.x >= width)
        local = -INFINITY;
      const float mx = blockReduce<true>(local);
      const bool masked = mx == -INFINITY;
      float total = 0;
      for (int64_t c = threadIdx.x; c < width; c += blockDim.x) {
        y[c] = masked ? 0.0f : expf(y[c] - mx);
        total += y[c];
      }
      total = blockReduce<false>(total);
      const float inv = total > 0 ? 1.0f / total : 0.0f;
      for (int64_t c = threadIdx.x; c < width; c += blockDim.x)
        fused::storeRowResult(l, p.data, row, c, y, y[c] * inv);
    }
    __syncthreads(); // the reductions' shared memory, for the next row
  }
}

void attentionSoftmax(cudaStream_t s, const AttentionDims &d, float *scores,
                      int64_t rows) {
  attentionSoftmaxKernel<<<rowBlocks(rows), kRowThreads, 0, s>>>(d, scores,
                                                                 rows);
}

void attentionScoreGrad(cudaStream_t s, const AttentionDims &d, const float *p,
                        float *dp, const float *dout, const float *out,
                        int64_t rows) {
  attentionScoreGradKernel<<<rowBlocks(rows), kRowThreads, 0, s>>>(
      d, p, dp, dout, out, rows);
}

void fusedProgram(cudaStream_t s, const fused::Layout &layout,
                  const fused::Instr *code, int count,
                  const FusedOperands &operands, int64_t parts,
                  float *partials) {
  const size_t shared = count * sizeof(fused::Instr);
  if (parts > 1) {
    fusedPartsKernel<<<blocksFor(layout.threads * parts), kThreads, shared,
                       s>>>(layout, code, count, operands, parts, partials);
    fusedPartsSumKernel<<<blocksFor(layout.threads), kThreads, 0, s>>>(
        layout, operands, parts, partials);
  } else if (layout.rowOp != fused::NoRowOp) {
    // A rounded row's f32 values after the program: up to 24 + 32 KiB,
    // more than a kernel may take unasked (48 KiB).
    static const cudaError_t allowed = cudaFuncSetAttribute(
        fusedRowProgramKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(fused::kMaxInstructions * sizeof(fused::Instr) +
                         fused::kMaxRoundedRow * sizeof(float)));
    (void)allowed; // a launch it did not allow fails, and says so
    const size_t row =
        fused::roundsRow(layout)
            ? layout.extents[layout.rank - 1] * sizeof(float)
            : 0;
    fusedRowProgramKernel<<<rowBlocks(layout.threads), kRowThreads,
                            shared + row, s>>>(layout, code, count, operands);
  } else
    fusedProgramKernel<<<blocksFor(layout.threads), kThreads, shared, s>>>(
        layout, code, count, operands);
}

void fusedKernel(cudaStream_t s, cudaKernel_t kernel,
                 const fused::Layout &layout, const FusedOperands &operands,
                 int64_t parts, float *partials) {
  FusedOperands p = operands;
  long long partCount = parts;
  void *args[] = {&p, &partCount, &partials};
  if (layout.rowOp != fused::NoRowOp) // a block per row
    cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                     rowBlocks(layout.threads), kRowThreads, args, 0, s);
  else
    cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                     blocksFor(layout.threads * parts), kThreads, args, 0, s);
  if (parts > 1)
    fusedPartsSumKernel<<<blocksFor(layout.threads), kThreads, 0, s>>>(
        layout, operands, parts, partials);
}

void fillF32(cudaStream_t s, float *p, int64_t n, float v) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n, v);
}
void fillF64(cudaStream_t s, double *p, int64_t n, double v) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n, v);
}
void fillI32(cudaStream_t s, int32_t *p, int64_t n, int32_t v) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n, v);
}
void fillI64(cudaStream_t s, int64_t *p, int64_t n, int64_t v) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n, v);
}
void fillU16(cudaStream_t s, uint16_t *p, int64_t n, uint16_t v) {
  fillKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n, v);
}

void sumMembers(cudaStream_t s, const MemberPointers &p, int64_t n) {
  sumMembersKernel<<<blocksFor(n), kThreads, 0, s>>>(p, n);
}

void binary(cudaStream_t s, int op, const float *a, const float *b, float *out,
            const Strided &map, int64_t n) {
  binaryKernel<<<blocksFor(n), kThreads, 0, s>>>(op, a, b, out, map, n);
}

void binaryGrad(cudaStream_t s, int op, int which, const float *a,
                const float *b, const float *dout, float *grad,
                const Walk &walk, int64_t parts, int64_t perPart) {
  if (blockPerOutput(parts, perPart))
    binaryGradBlocksKernel<<<parts, kRowThreads, 0, s>>>(op, which, a, b, dout,
                                                         grad, walk, perPart);
  else
    binaryGradKernel<<<blocksFor(parts), kThreads, 0, s>>>(
        op, which, a, b, dout, grad, walk, parts, perPart);
}

void unary(cudaStream_t s, int op, const float *x, float *out, int64_t n) {
  unaryKernel<<<blocksFor(n), kThreads, 0, s>>>(op, x, out, n);
}

void unaryGrad(cudaStream_t s, int op, const float *x, const float *y,
               const float *dy, float *dx, int64_t n) {
  unaryGradKernel<<<blocksFor(n), kThreads, 0, s>>>(op, x, y, dy, dx, n);
}

void causalMask(cudaStream_t s, const float *x, float *out, int64_t n,
                int64_t rows, int64_t cols, bool gradient) {
  causalMaskKernel<<<blocksFor(n), kThreads, 0, s>>>(x, out, n, rows, cols,
                                                     gradient);
}

void moeSlots(cudaStream_t s, const MoeShape &m, const int32_t *experts,
              int32_t *slots, int32_t *counts, DataError *error) {
  if (m.groups > 0)
    moeSlotsKernel<<<blocksFor(m.groups), kThreads, 0, s>>>(m, experts, slots,
                                                            counts, error);
}

void moeDispatch(cudaStream_t s, const MoeShape &m, const float *tokens,
                 const int32_t *slots, const float *gates, float *slotted) {
  int64_t n = m.choiceCount() * m.width;
  if (n > 0)
    moeDispatchKernel<<<blocksFor(n), kThreads, 0, s>>>(m, tokens, slots,
                                                        gates, slotted);
}

void moeCombine(cudaStream_t s, const MoeShape &m, const float *slotted,
                const int32_t *slots, const float *gates, float *tokens) {
  int64_t n = m.groups * m.tokens * m.width;
  if (n > 0)
    moeCombineKernel<<<blocksFor(n), kThreads, 0, s>>>(m, slotted, slots,
                                                       gates, tokens);
}

void moeGateGrad(cudaStream_t s, const MoeShape &m, const float *tokens,
                 const float *slotted, const int32_t *slots, float *dgates) {
  if (m.choiceCount() > 0)
    moeGateGradKernel<<<blocksFor(m.choiceCount()), kThreads, 0, s>>>(
        m, tokens, slotted, slots, dgates);
}

void dropout(cudaStream_t s, const float *x, int64_t n, const DropoutDraw &draw,
             const DropoutDraw *live, int64_t base, float scale, float *y) {
  if (n > 0)
    dropoutKernel<<<blocksFor(n), kThreads, 0, s>>>(x, n, draw, live, base,
                                                    scale, y);
}

void oneHot(cudaStream_t s, const int32_t *ids, int64_t count, int64_t classes,
            float *out, DataError *error) {
  fillF32(s, out, count * classes, 0.0f);
  if (count > 0)
    oneHotKernel<<<blocksFor(count), kThreads, 0, s>>>(ids, count, classes,
                                                       out, error);
}

void topk(cudaStream_t s, const float *x, int64_t rows, int64_t n, int64_t k,
          float *values, int32_t *positions) {
  if (rows > 0)
    topkKernel<<<blocksFor(rows), kThreads, 0, s>>>(x, rows, n, k, values,
                                                    positions);
}

void topkGrad(cudaStream_t s, const float *x, int64_t rows, int64_t n,
              int64_t k, const float *dy, float *dx) {
  int64_t total = rows * n;
  if (total > 0)
    topkGradKernel<<<blocksFor(total), kThreads, 0, s>>>(x, n, k, dy, dx,
                                                         total);
}

void im2col(cudaStream_t s, const float *x, float *cols, int64_t rowStride,
            const Planes &p, const Window2d &w) {
  int64_t positions = p.outH * p.outW,
          n = p.channels * w.kernelH * w.kernelW * positions;
  if (n > 0)
    im2colKernel<<<blocksFor(n), kThreads, 0, s>>>(x, cols, rowStride, p, w,
                                                   positions, n);
}

void col2im(cudaStream_t s, const float *cols, int64_t rowStride, float *dx,
            const Planes &p, const Window2d &w) {
  int64_t n = p.channels * p.height * p.width;
  if (n > 0)
    col2imKernel<<<blocksFor(n), kThreads, 0, s>>>(cols, rowStride, dx, p, w,
                                                   n);
}

void pool2d(cudaStream_t s, bool max, const float *x, float *y,
            const Planes &p, const Window2d &w) {
  int64_t n = p.channels * p.outH * p.outW;
  if (n > 0)
    pool2dKernel<<<blocksFor(n), kThreads, 0, s>>>(max, x, y, p, w, n);
}

void pool2dGrad(cudaStream_t s, bool max, const float *x, const float *dy,
                float *dx, const Planes &p, const Window2d &w) {
  int64_t n = p.channels * p.height * p.width;
  if (n > 0)
    pool2dGradKernel<<<blocksFor(n), kThreads, 0, s>>>(max, x, dy, dx, p, w,
                                                       n);
}

void gather(cudaStream_t s, const float *x, float *out, const Strided &map,
            int64_t n) {
  gatherKernel<<<blocksFor(n), kThreads, 0, s>>>(x, out, map, n);
}

void softmax(cudaStream_t s, const float *x, float *y, int64_t outer,
             int64_t extent, int64_t inner) {
  if (inner == 1)
    softmaxRowsKernel<<<outer, kRowThreads, 0, s>>>(x, y, extent);
  else
    softmaxStridedKernel<<<blocksFor(outer * inner), kThreads, 0, s>>>(
        x, y, outer, extent, inner);
}

void softmaxGrad(cudaStream_t s, const float *y, const float *dy, float *dx,
                 int64_t outer, int64_t extent, int64_t inner) {
  if (inner == 1)
    softmaxGradRowsKernel<<<outer, kRowThreads, 0, s>>>(y, dy, dx, extent);
  else
    softmaxGradStridedKernel<<<blocksFor(outer * inner), kThreads, 0, s>>>(
        y, dy, dx, outer, extent, inner);
}

void channelSums(cudaStream_t s, const float *x, const float *center,
                 float *sums, int64_t rows, int64_t channels, int64_t size) {
  if (channels > 0)
    channelSumsKernel<<<channels, kRowThreads, 0, s>>>(x, center, sums, rows,
                                                       channels, size);
}

void channelAffine(cudaStream_t s, const float *x, const float *center,
                   const float *scale, const float *shift, float *y,
                   int64_t n, int64_t channels, int64_t size) {
  if (n > 0)
    channelAffineKernel<<<blocksFor(n), kThreads, 0, s>>>(
        x, center, scale, shift, y, n, channels, size);
}

void channelGradSums(cudaStream_t s, const float *x, const float *dy,
                     const float *center, const float *invstd, float *sums,
                     int64_t rows, int64_t channels, int64_t size) {
  if (channels > 0)
    channelGradSumsKernel<<<channels, kRowThreads, 0, s>>>(
        x, dy, center, invstd, sums, rows, channels, size);
}

void channelGradInput(cudaStream_t s, const float *x, const float *dy,
                      const float *center, const float *a, const float *b,
                      const float *d, float *dx, int64_t n, int64_t channels,
                      int64_t size) {
  if (n > 0)
    channelGradInputKernel<<<blocksFor(n), kThreads, 0, s>>>(
        x, dy, center, a, b, d, dx, n, channels, size);
}

void layerNorm(cudaStream_t s, const float *x, const float *gamma,
               const float *beta, float eps, float *y, float *mean, float *rstd,
               int64_t rows, int64_t width) {
  if (rows > 0)
    layerNormKernel<<<rows, kRowThreads, 0, s>>>(x, gamma, beta, eps, y, mean,
                                                 rstd, width);
}

void rope(cudaStream_t s, const float *x, int64_t first, float theta,
          const RopeScaling *scaling, bool inverse, float *y, int64_t rows,
          int64_t positions, int64_t width) {
  const int64_t pairs = rows * (width / 2);
  if (pairs > 0)
    ropeKernel<<<blocksFor(pairs), kThreads, 0, s>>>(
        x, first, theta, scaling ? *scaling : RopeScaling{}, scaling != nullptr,
        inverse ? -1.0f : 1.0f, y, pairs, positions, width);
}

void rmsNorm(cudaStream_t s, const float *x, const float *weight, float eps,
             float *y, float *rstd, int64_t rows, int64_t width) {
  if (rows > 0)
    rmsNormKernel<<<rows, kRowThreads, 0, s>>>(x, weight, eps, y, rstd, width);
}

void rmsNormGrad(cudaStream_t s, const float *x, const float *weight,
                 const float *rstd, const float *dy, float *dx, float *dweight,
                 int64_t rows, int64_t width, float *partials) {
  if (rows > 0)
    rmsNormGradRowsKernel<<<rows, kRowThreads, 0, s>>>(x, weight, rstd, dy, dx,
                                                       width);
  ColumnOutputs<1> outs;
  outs.out[0] = dweight;
  columnSums(s, RmsNormGradTerm{x, rstd, dy, width},
             planColumnSums(rows, width), outs, partials);
}

int64_t columnSumScratch(int64_t rows, int64_t width, int outputs) {
  return columnPartials(planColumnSums(rows, width), outputs);
}

void layerNormGrad(cudaStream_t s, const float *x, const float *gamma,
                   const float *mean, const float *rstd, const float *dy,
                   float *dx, float *dgamma, float *dbeta, int64_t rows,
                   int64_t width, float *partials) {
  if (rows > 0)
    layerNormGradRowsKernel<<<rows, kRowThreads, 0, s>>>(x, gamma, mean, rstd,
                                                         dy, dx, width);
  ColumnOutputs<2> outs;
  outs.out[0] = dgamma;
  outs.out[1] = dbeta;
  columnSums(s, LayerNormGradTerm{x, mean, rstd, dy, width},
             planColumnSums(rows, width), outs, partials);
}

int64_t layerNormGradScratch(int64_t rows, int64_t width) {
  return std::min<int64_t>(rows, kLayerNormGradBlocks) * 2 * width;
}

void layerNormGradFused(cudaStream_t s, const float *x, const float *gamma,
                        const float *dy, const float *residual, float eps,
                        float *dx, float *dgamma, float *dbeta, int64_t rows,
                        int64_t width, float *partials) {
  const int64_t blocks = std::min<int64_t>(rows, kLayerNormGradBlocks);
  if (blocks == 0) {
    fillF32(s, dgamma, width, 0.0f);
    fillF32(s, dbeta, width, 0.0f);
    return;
  }
  layerNormGradFusedKernel<<<blocks, kRowThreads, 0, s>>>(
      x, gamma, dy, residual, eps, dx, partials, rows, width);
  layerNormGradColumnsKernel<<<blocksFor(2 * width), kThreads, 0, s>>>(
      partials, blocks, width, dgamma, dbeta);
}

void binaryGradColumns(cudaStream_t s, int op, int which, const float *a,
                       const float *b, const float *dout, float *grad,
                       const ColumnOperands &shape, float *partials) {
  ColumnOutputs<1> outs;
  outs.out[0] = grad;
  columnSums(s, BinaryGradTerm{op, which, a, b, dout, shape},
             planColumnSums(shape.rows, shape.width), outs, partials);
}

void sumRows(cudaStream_t s, const float *x, float *out, int64_t rows,
             int64_t width, float divisor, float *partials) {
  ColumnOutputs<1> outs;
  outs.out[0] = out;
  outs.divisor = divisor;
  columnSums(s, RowSumTerm{x, width}, planColumnSums(rows, width), outs,
             partials);
}

template <typename T>
void crossEntropyGradRounded(cudaStream_t s, const T *logits,
                             const void *labels, bool wide, const float *dloss,
                             float *lse, void *rounded, float *sum,
                             int64_t rows, int64_t classes, int64_t width,
                             float *partials, DataError *error) {
  if (rows > 0)
    crossEntropyLseKernel<<<rows, kRowThreads, 0, s>>>(logits, labels, wide,
                                                       lse, classes, error);
  ColumnOutputs<1> outs;
  outs.out[0] = sum;
  columnSums(s,
             CrossEntropyGradTerm<T>{logits, labels, wide, lse, dloss,
                                     static_cast<__nv_bfloat16 *>(rounded),
                                     width, classes},
             planColumnSums(rows * classes / width, width), outs, partials);
}
template void crossEntropyGradRounded(cudaStream_t, const float *, const void *,
                                      bool, const float *, float *, void *,
                                      float *, int64_t, int64_t, int64_t,
                                      float *, DataError *);
template void crossEntropyGradRounded(cudaStream_t, const uint16_t *,
                                      const void *, bool, const float *,
                                      float *, void *, float *, int64_t,
                                      int64_t, int64_t, float *, DataError *);

void roundAndSumRows(cudaStream_t s, const float *x, void *rounded, float *sum,
                     int64_t rows, int64_t width, float *partials) {
  ColumnOutputs<1> outs;
  outs.out[0] = sum;
  columnSums(s,
             RoundingRowSumTerm{x, static_cast<__nv_bfloat16 *>(rounded),
                                width},
             planColumnSums(rows, width), outs, partials);
}

void embedding(cudaStream_t s, const float *table, const void *ids, bool wide,
               float *out, int64_t count, int64_t vocab, int64_t width,
               DataError *error) {
  embeddingKernel<<<blocksFor(count * width), kThreads, 0, s>>>(
      table, ids, wide, out, count, vocab, width, error);
}

void embeddingGrad(cudaStream_t s, const void *ids, bool wide,
                   const float *dout, float *dtable, int64_t count,
                   int64_t vocab, int64_t width, DataError *error) {
  embeddingGradKernel<<<blocksFor(count * width), kThreads, 0, s>>>(
      ids, wide, dout, dtable, count, vocab, width, error);
}

template <typename T>
void crossEntropy(cudaStream_t s, const T *logits, const void *labels,
                  bool wide, float *loss, int64_t rows, int64_t classes,
                  DataError *error) {
  if (rows > 0)
    crossEntropyKernel<<<rows, kRowThreads, 0, s>>>(logits, labels, wide, loss,
                                                    classes, error);
}
template void crossEntropy(cudaStream_t, const float *, const void *, bool,
                           float *, int64_t, int64_t, DataError *);
template void crossEntropy(cudaStream_t, const uint16_t *, const void *, bool,
                           float *, int64_t, int64_t, DataError *);

template <typename T>
void crossEntropyGrad(cudaStream_t s, const T *logits, const void *labels,
                      bool wide, const float *dloss, float *dlogits,
                      int64_t rows, int64_t classes, DataError *error) {
  if (rows > 0)
    crossEntropyGradKernel<<<rows, kRowThreads, 0, s>>>(
        logits, labels, wide, dloss, dlogits, classes, error);
}
template void crossEntropyGrad(cudaStream_t, const float *, const void *, bool,
                               const float *, float *, int64_t, int64_t,
                               DataError *);
template void crossEntropyGrad(cudaStream_t, const uint16_t *, const void *,
                               bool, const float *, float *, int64_t, int64_t,
                               DataError *);

void reduce(cudaStream_t s, int op, const float *x, float *out,
            const Walk &walk, int64_t kept, int64_t count) {
  if (blockPerOutput(kept, count))
    reduceBlocksKernel<<<kept, kRowThreads, 0, s>>>(op, x, out, walk, count);
  else
    reduceKernel<<<blocksFor(kept), kThreads, 0, s>>>(op, x, out, walk, kept,
                                                      count);
}

void reduceGrad(cudaStream_t s, int op, const float *x, const float *dout,
                float *dx, const Walk &walk, int64_t kept, int64_t count) {
  reduceGradKernel<<<blocksFor(kept), kThreads, 0, s>>>(op, x, dout, dx, walk,
                                                        kept, count);
}

void castToBf16(cudaStream_t s, const float *x, void *out, int64_t n) {
  toBf16Kernel<<<blocksFor(n), kThreads, 0, s>>>(
      x, static_cast<__nv_bfloat16 *>(out), n);
}

void castFromBf16(cudaStream_t s, const void *x, float *out, int64_t n) {
  fromBf16Kernel<<<blocksFor(n), kThreads, 0, s>>>(
      static_cast<const __nv_bfloat16 *>(x), out, n);
}

void findNonFinite(cudaStream_t s, const float *x, int64_t n, int *flag) {
  nonFiniteKernel<<<blocksFor(n), kThreads, 0, s>>>(x, n, flag);
}

} // namespace whale::rt::cuda
