//===- FlashAttention.cu - attention on the tensor cores, scores on chip --===//
//
// The kernels of FlashAttention.h with FlashPlan.h's tiling. Products are
// mma.sync m16n8k16 (bf16 operands, fp32 accumulators); a warp owns 16
// rows of every product. Fragment layouts (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"), with g = lane / 4 and
// c = lane % 4:
//   A (16 x 16, row-major): reg 0 = row g, cols 2c, 2c+1; reg 1 = row g+8;
//                           regs 2, 3 = the same rows, cols + 8
//   B (16 x 8):             reg 0 = rows (k) 2c, 2c+1 of col g; reg 1 = k+8
//   C (16 x 8, fp32):       [0], [1] = row g, cols 2c, 2c+1; [2], [3] = g+8
// so two C tiles side by side are one A tile: the scores' accumulators
// become P's operand without leaving the registers. The low half of a
// 32-bit register is the lower column (or k).
//
// Shared tiles are bf16 rows of dim + kSharedPad elements: a fragment's 8
// rows start 4 banks apart, so its 32 loads hit 32 banks.
//
//===----------------------------------------------------------------------===//

#include "runtime/cuda/FlashAttention.h"

#include <cuda_bf16.h>

#include <cstdint>

namespace whale::rt::cuda {

namespace {

using bf16 = __nv_bfloat16;
constexpr unsigned kFullMask = 0xffffffffu;
constexpr int kWarps = 4, kThreads = 32 * kWarps;

/// Two fp32 values as one register of bf16, `lo` in the low half.
__device__ __forceinline__ uint32_t packBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/// Two adjacent bf16 in shared memory as one register.
__device__ __forceinline__ uint32_t adjacent(const bf16 *p) {
  return *reinterpret_cast<const uint32_t *>(p);
}

/// Two bf16 a row apart (a B operand read down its k) as one register.
__device__ __forceinline__ uint32_t stacked(const bf16 *lo, const bf16 *hi) {
  return uint32_t(*reinterpret_cast<const uint16_t *>(lo)) |
         (uint32_t(*reinterpret_cast<const uint16_t *>(hi)) << 16);
}

/// c += A B for one 16 x 8 x 16 tile.
__device__ __forceinline__ void mma(float c[4], const uint32_t a[4],
                                    uint32_t b0, uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                 "r"(b1));
}

/// The A fragment of rows r0..r0+15, columns k0..k0+15 of a shared tile
/// with `stride` elements a row.
__device__ __forceinline__ void rowFragment(uint32_t a[4], const bf16 *tile,
                                            int stride, int r0, int k0,
                                            int g, int c) {
  const bf16 *p = tile + (r0 + g) * stride + k0 + 2 * c;
  a[0] = adjacent(p);
  a[1] = adjacent(p + 8 * stride);
  a[2] = adjacent(p + 8);
  a[3] = adjacent(p + 8 * stride + 8);
}

/// The B fragment of k rows k0..k0+15, column n0 + g of a shared tile
/// stored [k][n] (read down its rows).
__device__ __forceinline__ void columnFragment(uint32_t &b0, uint32_t &b1,
                                               const bf16 *tile, int stride,
                                               int k0, int n0, int g, int c) {
  const bf16 *p = tile + (k0 + 2 * c) * stride + n0 + g;
  b0 = stacked(p, p + stride);
  b1 = stacked(p + 8 * stride, p + 9 * stride);
}

/// Accumulator tiles 2 pk and 2 pk + 1 (16 columns side by side) as one
/// A operand, rounded to bf16: C's layout is A's, two tiles at a time.
template <int N>
__device__ __forceinline__ void accumulatorsAsA(uint32_t a[4],
                                                const float (&acc)[N][4],
                                                int pk) {
  a[0] = packBf16(acc[2 * pk][0], acc[2 * pk][1]);
  a[1] = packBf16(acc[2 * pk][2], acc[2 * pk][3]);
  a[2] = packBf16(acc[2 * pk + 1][0], acc[2 * pk + 1][1]);
  a[3] = packBf16(acc[2 * pk + 1][2], acc[2 * pk + 1][3]);
}

/// The sum (or max) over the 4 lanes that hold one accumulator row.
__device__ __forceinline__ float rowSum4(float v) {
  v += __shfl_xor_sync(kFullMask, v, 1);
  return v + __shfl_xor_sync(kFullMask, v, 2);
}
__device__ __forceinline__ float rowMax4(float v) {
  v = flashMax(v, __shfl_xor_sync(kFullMask, v, 1));
  return flashMax(v, __shfl_xor_sync(kFullMask, v, 2));
}

/// Rows [row0, row0 + n) of a head's [rows, e] bf16 matrix (rows `ld`
/// apart) into a shared tile of DIM + kSharedPad a row, zero past `valid`
/// rows and past e columns; 16 bytes a load where e and ld allow.
template <int DIM>
__device__ void loadTile(bf16 *tile, const bf16 *src, int64_t row0, int n,
                         int64_t valid, int e, int64_t ld) {
  constexpr int S = DIM + kSharedPad;
  if ((e & 7) == 0 && (ld & 7) == 0) {
    constexpr int chunks = DIM / 8;
    for (int x = threadIdx.x; x < n * chunks; x += blockDim.x) {
      const int r = x / chunks, col = (x % chunks) * 8;
      const int64_t row = row0 + r;
      uint4 v = make_uint4(0, 0, 0, 0);
      if (row < valid && col < e)
        v = *reinterpret_cast<const uint4 *>(src + row * ld + col);
      *reinterpret_cast<uint4 *>(tile + r * S + col) = v;
    }
    return;
  }
  for (int x = threadIdx.x; x < n * DIM; x += blockDim.x) {
    const int r = x / DIM, col = x % DIM;
    const int64_t row = row0 + r;
    tile[r * S + col] =
        (row < valid && col < e) ? src[row * ld + col] : __float2bfloat16(0.0f);
  }
}

struct ForwardArgs {
  AttentionDims d;
  FlashTiles f;
  const bf16 *q, *k, *v;
  float *out, *lse;
  bf16 *out16; ///< the output in bf16 instead of `out` (amp's storage)
};

/// Element `at` of the forward's output: fp32, or rounded once to bf16.
__device__ __forceinline__ void storeOut(const ForwardArgs &a, int64_t at,
                                         float x) {
  if (a.out16)
    a.out16[at] = __float2bfloat16_rn(x);
  else
    a.out[at] = x;
}

/// A block per (query tile, head), heads fastest so a causal grid's heavy
/// tiles go first for every head.
template <int DIM, int KEYS>
__global__ void __launch_bounds__(kThreads)
    flashForwardKernel(ForwardArgs a) {
  constexpr int S = DIM + kSharedPad, KS = DIM / 16, NB = KEYS / 8,
                ON = DIM / 8, PK = KEYS / 16, ROWS = 16 * kWarps;
  extern __shared__ __align__(16) unsigned char shared[];
  bf16 *sQ = reinterpret_cast<bf16 *>(shared);
  bf16 *sK = sQ + ROWS * S, *sV = sK + KEYS * S;
  const AttentionDims &d = a.d;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, c = lane & 3, e = static_cast<int>(d.e);
  const int64_t head = blockIdx.x % d.heads;
  const int64_t qt = queryTileOfBlock(d, a.f, blockIdx.x / d.heads);
  const int64_t qAt = headOffset(d, head, d.t), kAt = headOffset(d, head, d.tk);
  const int64_t ld = rowStride(d);
  const bf16 *q = a.q + qAt, *k = a.k + kAt, *v = a.v + kAt;
  const bool wantOut = a.out != nullptr || a.out16 != nullptr;

  loadTile<DIM>(sQ, q, qt * ROWS, ROWS, d.t, e, ld);
  __syncthreads();
  uint32_t qa[KS][4];
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
    rowFragment(qa[ks], sQ, S, warp * 16, ks * 16, g, c);

  float o[ON][4];
#pragma unroll
  for (int on = 0; on < ON; ++on)
    o[on][0] = o[on][1] = o[on][2] = o[on][3] = 0;
  float m0 = -INFINITY, m1 = -INFINITY, l0 = 0, l1 = 0;
  const int64_t i0 = qt * ROWS + warp * 16 + g, i1 = i0 + 8;
  const int64_t end = keyTilesEnd(d, a.f, qt);
  for (int64_t kt = 0; kt < end; ++kt) {
    __syncthreads(); // the last tile's reads are done
    loadTile<DIM>(sK, k, kt * KEYS, KEYS, d.tk, e, ld);
    if (wantOut)
      loadTile<DIM>(sV, v, kt * KEYS, KEYS, d.tk, e, ld);
    __syncthreads();

    float s[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
      s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks)
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        const bf16 *kr = sK + (nb * 8 + g) * S + ks * 16 + 2 * c;
        mma(s[nb], qa[ks], adjacent(kr), adjacent(kr + 8));
      }

    const bool mask = tileNeedsMask(d, a.f, qt, kt);
    float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t j = kt * KEYS + nb * 8 + 2 * c + h;
        s[nb][h] = tileScore(d, mask, i0, j, s[nb][h]);
        s[nb][2 + h] = tileScore(d, mask, i1, j, s[nb][2 + h]);
        mx0 = flashMax(mx0, s[nb][h]);
        mx1 = flashMax(mx1, s[nb][2 + h]);
      }
    const float now0 = flashMax(m0, rowMax4(mx0)),
                now1 = flashMax(m1, rowMax4(mx1));
    const float alpha0 = flashRescale(m0, now0), alpha1 = flashRescale(m1, now1);
    m0 = now0;
    m1 = now1;
    l0 *= alpha0;
    l1 *= alpha1;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        s[nb][h] = flashWeight(s[nb][h], now0);
        s[nb][2 + h] = flashWeight(s[nb][2 + h], now1);
        l0 += s[nb][h];
        l1 += s[nb][2 + h];
      }
    if (!wantOut)
      continue;
#pragma unroll
    for (int on = 0; on < ON; ++on) {
      o[on][0] *= alpha0;
      o[on][1] *= alpha0;
      o[on][2] *= alpha1;
      o[on][3] *= alpha1;
    }
#pragma unroll
    for (int pk = 0; pk < PK; ++pk) {
      uint32_t pa[4];
      accumulatorsAsA(pa, s, pk);
#pragma unroll
      for (int on = 0; on < ON; ++on) {
        uint32_t b0, b1;
        columnFragment(b0, b1, sV, S, pk * 16, on * 8, g, c);
        mma(o[on], pa, b0, b1);
      }
    }
  }

  l0 = rowSum4(l0);
  l1 = rowSum4(l1);
  if (wantOut) {
    const float inv0 = flashInverseSum(l0), inv1 = flashInverseSum(l1);
#pragma unroll
    for (int on = 0; on < ON; ++on)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = on * 8 + 2 * c + h;
        if (col >= e)
          continue;
        if (i0 < d.t)
          storeOut(a, qAt + i0 * ld + col, o[on][h] * inv0);
        if (i1 < d.t)
          storeOut(a, qAt + i1 * ld + col, o[on][2 + h] * inv1);
      }
  }
  if (a.lse && c == 0) {
    if (i0 < d.t)
      a.lse[head * d.t + i0] = flashLse(m0, l0);
    if (i1 < d.t)
      a.lse[head * d.t + i1] = flashLse(m1, l1);
  }
}

__device__ __forceinline__ float loaded(const float *p) { return *p; }
__device__ __forceinline__ float loaded(const bf16 *p) {
  return __bfloat162float(*p);
}

/// D_i = dO_i . O_i in fp32, a warp per row; rowD is [heads, t] whatever
/// the operands' layout. O is fp32, or bf16 under amp's storage.
template <typename Out>
__global__ void rowDotKernel(const float *dout, const Out *out, float *rowD,
                             AttentionDims d) {
  const int lane = threadIdx.x & 31;
  const int64_t rows = d.heads * d.t, ld = rowStride(d);
  for (int64_t row = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) >> 5;
       row < rows; row += (int64_t(gridDim.x) * blockDim.x) >> 5) {
    const int64_t at = headOffset(d, row / d.t, d.t) + (row % d.t) * ld;
    float sum = 0;
    for (int64_t x = lane; x < d.e; x += 32)
      sum += dout[at + x] * loaded(out + at + x);
    for (int o = 16; o > 0; o >>= 1)
      sum += __shfl_xor_sync(kFullMask, sum, o);
    if (lane == 0)
      rowD[row] = sum;
  }
}

struct BackwardArgs {
  AttentionDims d;
  FlashTiles f;
  const bf16 *q, *k, *v, *dout;
  const float *lse, *rowD;
  float *dq, *dk, *dv;
};

/// A block per (key tile, head). Each warp holds 16 of the tile's 64 keys:
/// S^T and dP^T for them against a query tile come out of the mma with the
/// keys as rows, which is the A operand of dV += P^T dO and dK += dS^T Q.
/// dQ needs every key of the tile for a query row, so dS^T goes through
/// shared memory and each warp adds 16 query rows' dS K to dq.
template <int DIM>
__global__ void __launch_bounds__(kThreads)
    flashBackwardKernel(BackwardArgs a) {
  constexpr int S = DIM + kSharedPad, KS = DIM / 16, ON = DIM / 8,
                ROWS = 64, KEYS = 64, NB = ROWS / 8, PK = ROWS / 16,
                DS = ROWS + kSharedPad;
  extern __shared__ __align__(16) unsigned char shared[];
  bf16 *sK = reinterpret_cast<bf16 *>(shared);
  bf16 *sV = sK + KEYS * S, *sQ = sV + KEYS * S, *sO = sQ + ROWS * S;
  bf16 *sDS = sO + ROWS * S; // dS^T [keys][queries]
  float *sLse = reinterpret_cast<float *>(sDS + KEYS * DS),
        *sD = sLse + ROWS;
  const AttentionDims &d = a.d;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int g = lane >> 2, c = lane & 3, e = static_cast<int>(d.e);
  const int64_t head = blockIdx.x % d.heads, kt = blockIdx.x / d.heads;
  const int64_t qAt = headOffset(d, head, d.t), kAt = headOffset(d, head, d.tk);
  const int64_t ld = rowStride(d);
  const bf16 *q = a.q + qAt, *k = a.k + kAt, *v = a.v + kAt,
             *dout = a.dout + qAt;
  const float *lse = a.lse + head * d.t, *rowD = a.rowD + head * d.t;

  loadTile<DIM>(sK, k, kt * KEYS, KEYS, d.tk, e, ld);
  loadTile<DIM>(sV, v, kt * KEYS, KEYS, d.tk, e, ld);
  float dkAcc[ON][4], dvAcc[ON][4];
#pragma unroll
  for (int on = 0; on < ON; ++on)
#pragma unroll
    for (int x = 0; x < 4; ++x)
      dkAcc[on][x] = dvAcc[on][x] = 0;
  const int kw = warp * 16;
  const int64_t j0 = kt * KEYS + kw + g, j1 = j0 + 8;
  const int64_t qTiles = tileCount(d.t, ROWS);
  for (int64_t qt = queryTilesBegin(d, a.f, kt); qt < qTiles; ++qt) {
    __syncthreads(); // the last query tile's reads are done
    loadTile<DIM>(sQ, q, qt * ROWS, ROWS, d.t, e, ld);
    loadTile<DIM>(sO, dout, qt * ROWS, ROWS, d.t, e, ld);
    for (int r = threadIdx.x; r < ROWS; r += blockDim.x) {
      const int64_t i = qt * ROWS + r;
      sLse[r] = i < d.t ? lse[i] : INFINITY; // P = 0 past the last row
      sD[r] = i < d.t ? rowD[i] : 0.0f;
    }
    __syncthreads();

    // S^T = K Q^T and dP^T = V dO^T: this warp's keys x the tile's queries.
    float st[NB][4], dp[NB][4];
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int x = 0; x < 4; ++x)
        st[nb][x] = dp[nb][x] = 0;
#pragma unroll
    for (int ks = 0; ks < KS; ++ks) {
      uint32_t ka[4], va[4];
      rowFragment(ka, sK, S, kw, ks * 16, g, c);
      rowFragment(va, sV, S, kw, ks * 16, g, c);
#pragma unroll
      for (int nb = 0; nb < NB; ++nb) {
        const bf16 *qr = sQ + (nb * 8 + g) * S + ks * 16 + 2 * c;
        const bf16 *dr = sO + (nb * 8 + g) * S + ks * 16 + 2 * c;
        mma(st[nb], ka, adjacent(qr), adjacent(qr + 8));
        mma(dp[nb], va, adjacent(dr), adjacent(dr + 8));
      }
    }
    // P and dS = scale P (dP - D), in place.
    const bool mask = tileNeedsMask(d, a.f, qt, kt);
#pragma unroll
    for (int nb = 0; nb < NB; ++nb)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = nb * 8 + 2 * c + h;
        const int64_t i = qt * ROWS + r;
        const float s0 = tileScore(d, mask, i, j0, st[nb][h]);
        const float s1 = tileScore(d, mask, i, j1, st[nb][2 + h]);
        const float p0 = flashProbability(s0, sLse[r]),
                    p1 = flashProbability(s1, sLse[r]);
        st[nb][h] = p0;
        st[nb][2 + h] = p1;
        dp[nb][h] = d.scale * p0 * (dp[nb][h] - sD[r]);
        dp[nb][2 + h] = d.scale * p1 * (dp[nb][2 + h] - sD[r]);
      }
    // dV += P^T dO, dK += dS^T Q (k over the tile's queries).
#pragma unroll
    for (int pk = 0; pk < PK; ++pk) {
      uint32_t pa[4], sa[4];
      accumulatorsAsA(pa, st, pk);
      accumulatorsAsA(sa, dp, pk);
#pragma unroll
      for (int on = 0; on < ON; ++on) {
        uint32_t b0, b1;
        columnFragment(b0, b1, sO, S, pk * 16, on * 8, g, c);
        mma(dvAcc[on], pa, b0, b1);
        columnFragment(b0, b1, sQ, S, pk * 16, on * 8, g, c);
        mma(dkAcc[on], sa, b0, b1);
      }
    }
    // dS^T to shared memory for dQ.
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) {
      bf16 *row = sDS + (kw + g) * DS + nb * 8 + 2 * c;
      *reinterpret_cast<uint32_t *>(row) = packBf16(dp[nb][0], dp[nb][1]);
      *reinterpret_cast<uint32_t *>(row + 8 * DS) =
          packBf16(dp[nb][2], dp[nb][3]);
    }
    __syncthreads();
    // dQ [query rows qw.., DIM] += dS K, dS read from dS^T down its rows.
    const int qw = warp * 16;
    float dq[ON][4];
#pragma unroll
    for (int on = 0; on < ON; ++on)
      dq[on][0] = dq[on][1] = dq[on][2] = dq[on][3] = 0;
#pragma unroll
    for (int ks = 0; ks < KEYS / 16; ++ks) {
      const bf16 *col = sDS + (ks * 16 + 2 * c) * DS + qw + g;
      const uint32_t da[4] = {stacked(col, col + DS),
                              stacked(col + 8, col + DS + 8),
                              stacked(col + 8 * DS, col + 9 * DS),
                              stacked(col + 8 * DS + 8, col + 9 * DS + 8)};
#pragma unroll
      for (int on = 0; on < ON; ++on) {
        uint32_t b0, b1;
        columnFragment(b0, b1, sK, S, ks * 16, on * 8, g, c);
        mma(dq[on], da, b0, b1);
      }
    }
    const int64_t r0 = qt * ROWS + qw + g, r1 = r0 + 8;
    float *dqHead = a.dq + qAt;
#pragma unroll
    for (int on = 0; on < ON; ++on)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int col = on * 8 + 2 * c + h;
        if (col >= e)
          continue;
        if (r0 < d.t)
          atomicAdd(dqHead + r0 * ld + col, dq[on][h]);
        if (r1 < d.t)
          atomicAdd(dqHead + r1 * ld + col, dq[on][2 + h]);
      }
  }

  float *dk = a.dk + kAt, *dv = a.dv + kAt;
#pragma unroll
  for (int on = 0; on < ON; ++on)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int col = on * 8 + 2 * c + h;
      if (col >= e)
        continue;
      if (j0 < d.tk) {
        dk[j0 * ld + col] = dkAcc[on][h];
        dv[j0 * ld + col] = dvAcc[on][h];
      }
      if (j1 < d.tk) {
        dk[j1 * ld + col] = dkAcc[on][2 + h];
        dv[j1 * ld + col] = dvAcc[on][2 + h];
      }
    }
}

template <typename Kernel, typename Args>
cudaError_t launch(Kernel kernel, int64_t blocks, const FlashTiles &f,
                   cudaStream_t s, const Args &args) {
  return launchTiles(kernel, blocks, kThreads, f, s, args);
}

} // namespace

namespace {
template <typename Out>
cudaError_t rowDots(cudaStream_t s, const AttentionDims &d, const Out *out,
                    const float *dout, float *rowD, float *dq) {
  const int64_t rows = d.heads * d.t;
  if (cudaError_t err = cudaMemsetAsync(dq, 0, sizeof(float) * rows * d.e, s);
      err != cudaSuccess)
    return err;
  const int64_t rowBlocks = (rows + 7) / 8; // a warp a row, 8 a block
  rowDotKernel<<<static_cast<unsigned>(rowBlocks < 65535 * 8 ? rowBlocks
                                                             : 65535 * 8),
                 256, 0, s>>>(dout, out, rowD, d);
  return cudaGetLastError();
}
} // namespace

cudaError_t flashRowDots(cudaStream_t s, const AttentionDims &d,
                         const float *out, const float *dout, float *rowD,
                         float *dq) {
  return rowDots(s, d, out, dout, rowD, dq);
}

cudaError_t flashForward(cudaStream_t s, const AttentionDims &d,
                         const void *q, const void *k, const void *v,
                         float *out, float *lse, void *out16) {
  ForwardArgs a{d,
                flashForwardTiles(d.e),
                static_cast<const bf16 *>(q),
                static_cast<const bf16 *>(k),
                static_cast<const bf16 *>(v),
                out,
                lse,
                static_cast<bf16 *>(out16)};
  const int64_t blocks = tileCount(d.t, a.f.rows) * d.heads;
  switch (a.f.dim) {
  case 64:
    return launch(flashForwardKernel<64, 64>, blocks, a.f, s, a);
  case 128:
    return launch(flashForwardKernel<128, 64>, blocks, a.f, s, a);
  case 256:
    return launch(flashForwardKernel<256, 32>, blocks, a.f, s, a);
  default:
    return cudaErrorInvalidValue;
  }
}

cudaError_t flashBackward(cudaStream_t s, const AttentionDims &d,
                          const void *q, const void *k, const void *v,
                          const void *dout16, const void *out,
                          const float *dout, const float *lse, float *rowD,
                          float *dq, float *dk, float *dv, bool outBf16) {
  BackwardArgs a{d,
                 flashBackwardTiles(d.e),
                 static_cast<const bf16 *>(q),
                 static_cast<const bf16 *>(k),
                 static_cast<const bf16 *>(v),
                 static_cast<const bf16 *>(dout16),
                 lse,
                 rowD,
                 dq,
                 dk,
                 dv};
  if (cudaError_t err =
          outBf16 ? rowDots(s, d, static_cast<const bf16 *>(out), dout, rowD,
                            dq)
                  : rowDots(s, d, static_cast<const float *>(out), dout, rowD,
                            dq);
      err != cudaSuccess)
    return err;
  const int64_t blocks = tileCount(d.tk, a.f.keys) * d.heads;
  switch (a.f.dim) {
  case 64:
    return launch(flashBackwardKernel<64>, blocks, a.f, s, a);
  case 128:
    return launch(flashBackwardKernel<128>, blocks, a.f, s, a);
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace whale::rt::cuda
