//===- FlashSimt.h - fp32 flash attention, one block's work ----*- C++ -*-===//
//
// Attention in fp32 without the scores, for the GPU's fp32 path (no amp),
// where the contract is 1e-4 against the CPU device: the tensor cores'
// tf32 or bf16 would not hold it, so the products are fp32 FMAs. The tiles
// and the row math are FlashPlan.h's (base-2 online softmax, the causal
// skip, masks only on the tiles that need them); this file adds a block's
// work, written once for both compilers:
//
//   forward:  a block per (query tile of 64 rows, head); per key tile
//             S = Q K^T into shared memory, each row's online softmax over
//             it (a thread per row), O = O * rescale + P V in registers.
//   backward: a block per (key tile of 64, head); per query tile that sees
//             it P = exp2(S - lse) and dS = scale P (dP - D) into shared
//             memory, dV += P^T dO and dK += dS^T Q in registers, and
//             dQ += dS K added to an fp32 buffer (atomically on the GPU).
//
// The 256 threads of a block are a 16 x 16 grid (ty = tid / 16,
// tx = tid % 16); a thread owns the rows ty * n .. ty * n + n - 1 of a
// product and its columns tx, tx + 16, ...: rows read from shared memory
// are one address per half warp, columns 16 consecutive words, and shared
// rows are padded to an odd number of words so a column walk hits 16
// banks.
//
// A block's driver (simtForwardBlock, simtBackwardBlock) is a template
// over the block it runs on: FlashAttentionF32.cu's GPU block runs its
// thread's share of each phase and __syncthreads between phases;
// FlashSimtTest's CPU block runs every thread of each phase in turn, so the
// CPU test walks the kernels' own code, phase for phase.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_FLASHSIMT_H
#define WHALE_RUNTIME_CUDA_FLASHSIMT_H

#include "runtime/cuda/FlashPlan.h"

#ifdef __CUDACC__
#define WHALE_UNROLL _Pragma("unroll")
// The drivers call a block's __device__ members when instantiated for the
// GPU and its host members for the CPU test; each instantiation is used on
// one side only.
#define WHALE_HD_TEMPLATE _Pragma("nv_exec_check_disable")
#else
#define WHALE_UNROLL
#define WHALE_HD_TEMPLATE
#endif

namespace whale::rt::cuda {

constexpr int kSimtThreads = 256, kSimtSide = 16;

/// One launch's shapes: DIM the padded head width (flashDim), ROWS query
/// rows and KEYS key rows a tile.
template <int DIM, int ROWS, int KEYS> struct SimtShape {
  static_assert(DIM % kSimtSide == 0 && ROWS % kSimtSide == 0 &&
                    KEYS % kSimtSide == 0,
                "tiles are multiples of the thread grid's side");
  static constexpr int kDim = DIM, kRows = ROWS, kKeys = KEYS;
  static constexpr int kStride = DIM + 1;           ///< an operand row, floats
  static constexpr int kScoreStride = KEYS + 1;     ///< a row of scores
  static constexpr int kRowsPer = ROWS / kSimtSide; ///< query rows a thread
  static constexpr int kKeysPer = KEYS / kSimtSide; ///< key rows a thread
  static constexpr int kColsPer = DIM / kSimtSide;  ///< columns a thread
  /// Forward: Q, K, V, P, and each row's maximum, sum and rescale.
  static constexpr int kForwardFloats =
      (ROWS + 2 * KEYS) * kStride + ROWS * kScoreStride + 3 * ROWS;
  /// Backward: K, V, Q, dO, P, dS, and each query row's lse and D.
  static constexpr int kBackwardFloats =
      (2 * KEYS + 2 * ROWS) * kStride + 2 * ROWS * kScoreStride + 2 * ROWS;
  static FlashTiles tiles(size_t floats) {
    FlashTiles f;
    f.rows = ROWS;
    f.keys = KEYS;
    f.dim = DIM;
    f.warps = kSimtThreads / 32;
    f.sharedBytes = floats * sizeof(float);
    return f;
  }
};

// The shapes the kernels are built for: 64 query rows; 64 keys a tile up
// to 128 columns, 32 at 256 (the forward's output is then 64 floats a
// thread). The backward holds dK and dV on chip (2 x 4 x DIM / 16 floats a
// thread), so it stops at 128 columns, where the chunked GEMMs take over.
template <int DIM>
using SimtForwardShape = SimtShape<DIM, 64, (DIM <= 128 ? 64 : 32)>;
template <int DIM> using SimtBackwardShape = SimtShape<DIM, 64, 64>;

/// The fp32 forward's tiles for a head of `e` columns; dim 0 beyond 256.
inline FlashTiles flashForwardTilesF32(int64_t e) {
  switch (flashDim(e)) {
  case 64:
    return SimtForwardShape<64>::tiles(SimtForwardShape<64>::kForwardFloats);
  case 128:
    return SimtForwardShape<128>::tiles(SimtForwardShape<128>::kForwardFloats);
  case 256:
    return SimtForwardShape<256>::tiles(SimtForwardShape<256>::kForwardFloats);
  default:
    return FlashTiles{};
  }
}

/// The fp32 backward's tiles; dim 0 beyond 128.
inline FlashTiles flashBackwardTilesF32(int64_t e) {
  switch (flashDim(e)) {
  case 64:
    return SimtBackwardShape<64>::tiles(SimtBackwardShape<64>::kBackwardFloats);
  case 128:
    return SimtBackwardShape<128>::tiles(
        SimtBackwardShape<128>::kBackwardFloats);
  default:
    return FlashTiles{};
  }
}

/// What one launch reads and writes: fp32 [heads, t, e] operands (k, v
/// [heads, tk, e]), per-row statistics [heads, t].
struct SimtArgs {
  AttentionDims d;
  FlashTiles f;
  const float *q, *k, *v;
  float *out = nullptr;       ///< forward: null for the statistics alone
  float *lseOut = nullptr;    ///< forward: each row's base-2 lse, or null
  const float *lse = nullptr; ///< backward: the forward's lseOut
  const float *dout = nullptr, *rowD = nullptr; ///< backward
  float *dq = nullptr, *dk = nullptr, *dv = nullptr;
};

/// Rows [first, first + ROWS_) of a head's [n, e] operand (rows `ld`
/// apart) into a shared tile of ROWS_ rows of stride DIM + 1, zero past n
/// and past e (padding adds nothing to a product). Consecutive threads
/// read consecutive columns.
template <int DIM, int ROWS_>
WHALE_HD void loadSimtTile(int tid, float *tile, const float *head,
                           int64_t first, int64_t n, int64_t e, int64_t ld) {
  for (int x = tid; x < ROWS_ * DIM; x += kSimtThreads) {
    const int r = x / DIM, c = x % DIM;
    const int64_t row = first + r;
    tile[r * (DIM + 1) + c] = (row < n && c < e) ? head[row * ld + c] : 0.0f;
  }
}

/// acc[i][c] += sum over j < depth of A[ty * R + i][j] B[j][tx + 16 c]:
/// the thread's rows of a shared [rows, depth] tile (row stride aStride)
/// by its columns of a shared [depth, DIM] tile (row stride bStride).
template <int R, int C>
WHALE_HD void addRowsTimesColumns(float (&acc)[R][C], const float *a,
                                  int aStride, const float *b, int bStride,
                                  int depth, int tid) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  for (int j = 0; j < depth; ++j) {
    float x[R], y[C];
    WHALE_UNROLL
    for (int i = 0; i < R; ++i)
      x[i] = a[(ty * R + i) * aStride + j];
    WHALE_UNROLL
    for (int c = 0; c < C; ++c)
      y[c] = b[j * bStride + tx + kSimtSide * c];
    WHALE_UNROLL
    for (int i = 0; i < R; ++i) {
      WHALE_UNROLL
      for (int c = 0; c < C; ++c)
        acc[i][c] += x[i] * y[c];
    }
  }
}

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

template <class Shape> struct SimtForwardShared {
  float *q, *k, *v, *p, *rowMax, *rowSum, *rowScale;
  WHALE_HD explicit SimtForwardShared(float *base)
      : q(base), k(q + Shape::kRows * Shape::kStride),
        v(k + Shape::kKeys * Shape::kStride),
        p(v + Shape::kKeys * Shape::kStride),
        rowMax(p + Shape::kRows * Shape::kScoreStride),
        rowSum(rowMax + Shape::kRows), rowScale(rowSum + Shape::kRows) {}
};

/// A thread's share of the output: its rows by its columns.
template <class Shape>
using SimtOutput = float[Shape::kRowsPer][Shape::kColsPer];

/// The scaled base-2 scores of query tile `qt` against key tile `kt`
/// into P's place, masked where the tile needs it.
template <class Shape>
WHALE_HD void simtScores(int tid, const AttentionDims &d,
                         const SimtForwardShared<Shape> &s, int64_t qt,
                         int64_t kt, bool mask) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  float acc[Shape::kRowsPer][Shape::kKeysPer] = {};
  for (int x = 0; x < Shape::kDim; ++x) {
    float a[Shape::kRowsPer], b[Shape::kKeysPer];
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i)
      a[i] = s.q[(ty * Shape::kRowsPer + i) * Shape::kStride + x];
    WHALE_UNROLL
    for (int c = 0; c < Shape::kKeysPer; ++c)
      b[c] = s.k[(tx + kSimtSide * c) * Shape::kStride + x];
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i) {
      WHALE_UNROLL
      for (int c = 0; c < Shape::kKeysPer; ++c)
        acc[i][c] += a[i] * b[c];
    }
  }
  WHALE_UNROLL
  for (int i = 0; i < Shape::kRowsPer; ++i) {
    const int r = ty * Shape::kRowsPer + i;
    WHALE_UNROLL
    for (int c = 0; c < Shape::kKeysPer; ++c) {
      const int j = tx + kSimtSide * c;
      s.p[r * Shape::kScoreStride + j] = tileScore(
          d, mask, qt * Shape::kRows + r, kt * Shape::kKeys + j, acc[i][c]);
    }
  }
}

/// A row's online softmax over one tile of scores (a thread per row): the
/// new maximum, the factor the row's sum and output are rescaled by, and
/// the weights exp2(s - max) in the scores' place.
template <class Shape>
WHALE_HD void simtSoftmax(int tid, const SimtForwardShared<Shape> &s) {
  if (tid >= Shape::kRows)
    return;
  float *row = s.p + tid * Shape::kScoreStride;
  const float was = s.rowMax[tid];
  float now = was;
  for (int j = 0; j < Shape::kKeys; ++j)
    now = flashMax(now, row[j]);
  float sum = 0;
  for (int j = 0; j < Shape::kKeys; ++j) {
    const float w = flashWeight(row[j], now);
    row[j] = w;
    sum += w;
  }
  const float rescale = flashRescale(was, now);
  s.rowMax[tid] = now;
  s.rowSum[tid] = s.rowSum[tid] * rescale + sum;
  s.rowScale[tid] = rescale;
}

/// O = O * rescale + P V over the thread's rows and columns.
template <class Shape>
WHALE_HD void simtAccumulate(int tid, const SimtForwardShared<Shape> &s,
                             SimtOutput<Shape> &o) {
  const int ty = tid / kSimtSide;
  WHALE_UNROLL
  for (int i = 0; i < Shape::kRowsPer; ++i) {
    const float rescale = s.rowScale[ty * Shape::kRowsPer + i];
    WHALE_UNROLL
    for (int c = 0; c < Shape::kColsPer; ++c)
      o[i][c] *= rescale;
  }
  addRowsTimesColumns(o, s.p, Shape::kScoreStride, s.v, Shape::kStride,
                      Shape::kKeys, tid);
}

/// A finished tile: the output normalized (rows past t and columns past e
/// are not written) and each row's base-2 log-sum-exp.
template <class Shape>
WHALE_HD void simtFinish(int tid, const AttentionDims &d,
                         const SimtForwardShared<Shape> &s, int64_t qt,
                         const SimtOutput<Shape> &o, float *out, float *lse) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  if (out) {
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i) {
      const int r = ty * Shape::kRowsPer + i;
      const int64_t row = qt * Shape::kRows + r;
      if (row >= d.t)
        continue;
      const float inverse = flashInverseSum(s.rowSum[r]);
      WHALE_UNROLL
      for (int c = 0; c < Shape::kColsPer; ++c) {
        const int col = tx + kSimtSide * c;
        if (col < d.e)
          out[row * rowStride(d) + col] = o[i][c] * inverse;
      }
    }
  }
  const int64_t row = qt * Shape::kRows + tid;
  if (lse && tid < Shape::kRows && row < d.t)
    lse[row] = flashLse(s.rowMax[tid], s.rowSum[tid]);
}

/// Block `x` of the forward grid (heads fastest, so a causal grid's heavy
/// query tiles go first for every head). `Block` gives the threads this
/// caller runs (begin() to end()), a thread's registers (Registers<T>,
/// indexed by thread), sync() between phases, and the shared memory.
WHALE_HD_TEMPLATE
template <class Shape, class Block>
WHALE_HD void simtForwardBlock(Block &b, const SimtArgs &a, int64_t x) {
  const AttentionDims &d = a.d;
  const FlashTiles &f = a.f;
  const SimtForwardShared<Shape> s(b.shared());
  const int64_t head = x % d.heads;
  const int64_t qt = queryTileOfBlock(d, f, x / d.heads);
  const int64_t qAt = headOffset(d, head, d.t), kAt = headOffset(d, head, d.tk);
  const int64_t ld = rowStride(d);
  const float *q = a.q + qAt, *k = a.k + kAt, *v = a.v + kAt;
  typename Block::template Registers<SimtOutput<Shape>> o;
  for (int tid = b.begin(); tid < b.end(); ++tid) {
    loadSimtTile<Shape::kDim, Shape::kRows>(tid, s.q, q, qt * Shape::kRows, d.t,
                                            d.e, ld);
    if (tid < Shape::kRows) {
      s.rowMax[tid] = -INFINITY;
      s.rowSum[tid] = 0;
    }
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i) {
      WHALE_UNROLL
      for (int c = 0; c < Shape::kColsPer; ++c)
        o[tid][i][c] = 0;
    }
  }
  const int64_t end = keyTilesEnd(d, f, qt);
  for (int64_t kt = 0; kt < end; ++kt) {
    b.sync(); // the last tile's readers are done with K, V and P
    for (int tid = b.begin(); tid < b.end(); ++tid) {
      loadSimtTile<Shape::kDim, Shape::kKeys>(tid, s.k, k, kt * Shape::kKeys,
                                              d.tk, d.e, ld);
      loadSimtTile<Shape::kDim, Shape::kKeys>(tid, s.v, v, kt * Shape::kKeys,
                                              d.tk, d.e, ld);
    }
    b.sync();
    const bool mask = tileNeedsMask(d, f, qt, kt);
    for (int tid = b.begin(); tid < b.end(); ++tid)
      simtScores<Shape>(tid, d, s, qt, kt, mask);
    b.sync();
    for (int tid = b.begin(); tid < b.end(); ++tid)
      simtSoftmax<Shape>(tid, s);
    b.sync();
    if (a.out)
      for (int tid = b.begin(); tid < b.end(); ++tid)
        simtAccumulate<Shape>(tid, s, o[tid]);
  }
  b.sync();
  for (int tid = b.begin(); tid < b.end(); ++tid)
    simtFinish<Shape>(tid, d, s, qt, o[tid], a.out ? a.out + qAt : nullptr,
                      a.lseOut ? a.lseOut + head * d.t : nullptr);
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

template <class Shape> struct SimtBackwardShared {
  float *k, *v, *q, *dout, *p, *ds, *lse, *rowD;
  WHALE_HD explicit SimtBackwardShared(float *base)
      : k(base), v(k + Shape::kKeys * Shape::kStride),
        q(v + Shape::kKeys * Shape::kStride),
        dout(q + Shape::kRows * Shape::kStride),
        p(dout + Shape::kRows * Shape::kStride),
        ds(p + Shape::kRows * Shape::kScoreStride),
        lse(ds + Shape::kRows * Shape::kScoreStride), rowD(lse + Shape::kRows) {
  }
};

/// A thread's share of dK and dV: its key rows by its columns.
template <class Shape>
using SimtKeyGrads = float[2][Shape::kKeysPer][Shape::kColsPer];

/// P = exp2(S - lse) and dS = scale P (dP - D) of query tile `qt` against
/// key tile `kt`, into shared memory; rows past t have lse = +inf (P = 0)
/// and D = 0, so they add nothing.
template <class Shape>
WHALE_HD void simtProbabilities(int tid, const AttentionDims &d,
                                const SimtBackwardShared<Shape> &s, int64_t qt,
                                int64_t kt, bool mask) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  float sAcc[Shape::kRowsPer][Shape::kKeysPer] = {};
  float dpAcc[Shape::kRowsPer][Shape::kKeysPer] = {};
  for (int x = 0; x < Shape::kDim; ++x) {
    float qa[Shape::kRowsPer], da[Shape::kRowsPer], kb[Shape::kKeysPer],
        vb[Shape::kKeysPer];
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i) {
      const int at = (ty * Shape::kRowsPer + i) * Shape::kStride + x;
      qa[i] = s.q[at];
      da[i] = s.dout[at];
    }
    WHALE_UNROLL
    for (int c = 0; c < Shape::kKeysPer; ++c) {
      const int at = (tx + kSimtSide * c) * Shape::kStride + x;
      kb[c] = s.k[at];
      vb[c] = s.v[at];
    }
    WHALE_UNROLL
    for (int i = 0; i < Shape::kRowsPer; ++i) {
      WHALE_UNROLL
      for (int c = 0; c < Shape::kKeysPer; ++c) {
        sAcc[i][c] += qa[i] * kb[c];
        dpAcc[i][c] += da[i] * vb[c];
      }
    }
  }
  WHALE_UNROLL
  for (int i = 0; i < Shape::kRowsPer; ++i) {
    const int r = ty * Shape::kRowsPer + i;
    WHALE_UNROLL
    for (int c = 0; c < Shape::kKeysPer; ++c) {
      const int j = tx + kSimtSide * c;
      const float score = tileScore(d, mask, qt * Shape::kRows + r,
                                    kt * Shape::kKeys + j, sAcc[i][c]);
      const float p = flashProbability(score, s.lse[r]);
      s.p[r * Shape::kScoreStride + j] = p;
      s.ds[r * Shape::kScoreStride + j] =
          scoreGradient(d, p, dpAcc[i][c], s.rowD[r]);
    }
  }
}

/// dV += P^T dO and dK += dS^T Q over the thread's keys and columns.
template <class Shape>
WHALE_HD void simtKeyGrads(int tid, const SimtBackwardShared<Shape> &s,
                           SimtKeyGrads<Shape> &g) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  for (int r = 0; r < Shape::kRows; ++r) {
    float p[Shape::kKeysPer], ds[Shape::kKeysPer], dout[Shape::kColsPer],
        q[Shape::kColsPer];
    WHALE_UNROLL
    for (int i = 0; i < Shape::kKeysPer; ++i) {
      const int at = r * Shape::kScoreStride + ty * Shape::kKeysPer + i;
      p[i] = s.p[at];
      ds[i] = s.ds[at];
    }
    WHALE_UNROLL
    for (int c = 0; c < Shape::kColsPer; ++c) {
      const int at = r * Shape::kStride + tx + kSimtSide * c;
      dout[c] = s.dout[at];
      q[c] = s.q[at];
    }
    WHALE_UNROLL
    for (int i = 0; i < Shape::kKeysPer; ++i) {
      WHALE_UNROLL
      for (int c = 0; c < Shape::kColsPer; ++c) {
        g[0][i][c] += p[i] * dout[c]; // dV
        g[1][i][c] += ds[i] * q[c];   // dK
      }
    }
  }
}

/// The thread's share of dS K for query tile `qt`, handed to the block's
/// add (atomic on the GPU: several key blocks add to one query row).
WHALE_HD_TEMPLATE
template <class Shape, class Block>
WHALE_HD void simtQueryGrad(int tid, const AttentionDims &d,
                            const SimtBackwardShared<Shape> &s, int64_t qt,
                            float *dq, Block &b) {
  const int ty = tid / kSimtSide, tx = tid % kSimtSide;
  float acc[Shape::kRowsPer][Shape::kColsPer] = {};
  addRowsTimesColumns(acc, s.ds, Shape::kScoreStride, s.k, Shape::kStride,
                      Shape::kKeys, tid);
  WHALE_UNROLL
  for (int i = 0; i < Shape::kRowsPer; ++i) {
    const int64_t row = qt * Shape::kRows + ty * Shape::kRowsPer + i;
    if (row >= d.t)
      continue;
    WHALE_UNROLL
    for (int c = 0; c < Shape::kColsPer; ++c) {
      const int col = tx + kSimtSide * c;
      if (col < d.e)
        b.add(dq + row * rowStride(d) + col, acc[i][c]);
    }
  }
}

/// Block `x` of the backward grid: key tile x / heads of head x % heads,
/// walking the query tiles that see it. dq must be zero beforehand;
/// `Block` is as simtForwardBlock's, plus add(p, v) for dq.
WHALE_HD_TEMPLATE
template <class Shape, class Block>
WHALE_HD void simtBackwardBlock(Block &b, const SimtArgs &a, int64_t x) {
  const AttentionDims &d = a.d;
  const FlashTiles &f = a.f;
  const SimtBackwardShared<Shape> s(b.shared());
  const int64_t head = x % d.heads, kt = x / d.heads;
  const int64_t qAt = headOffset(d, head, d.t), kAt = headOffset(d, head, d.tk);
  const int64_t ld = rowStride(d);
  const float *q = a.q + qAt, *k = a.k + kAt, *v = a.v + kAt,
              *dout = a.dout + qAt;
  const float *lse = a.lse + head * d.t, *rowD = a.rowD + head * d.t;
  float *dq = a.dq + qAt;
  typename Block::template Registers<SimtKeyGrads<Shape>> g;
  for (int tid = b.begin(); tid < b.end(); ++tid) {
    loadSimtTile<Shape::kDim, Shape::kKeys>(tid, s.k, k, kt * Shape::kKeys,
                                            d.tk, d.e, ld);
    loadSimtTile<Shape::kDim, Shape::kKeys>(tid, s.v, v, kt * Shape::kKeys,
                                            d.tk, d.e, ld);
    WHALE_UNROLL
    for (int h = 0; h < 2; ++h) {
      WHALE_UNROLL
      for (int i = 0; i < Shape::kKeysPer; ++i) {
        WHALE_UNROLL
        for (int c = 0; c < Shape::kColsPer; ++c)
          g[tid][h][i][c] = 0;
      }
    }
  }
  const int64_t qTiles = tileCount(d.t, Shape::kRows);
  for (int64_t qt = queryTilesBegin(d, f, kt); qt < qTiles; ++qt) {
    b.sync(); // the last tile's readers are done with Q, dO, P and dS
    for (int tid = b.begin(); tid < b.end(); ++tid) {
      const int64_t first = qt * Shape::kRows;
      loadSimtTile<Shape::kDim, Shape::kRows>(tid, s.q, q, first, d.t, d.e, ld);
      loadSimtTile<Shape::kDim, Shape::kRows>(tid, s.dout, dout, first, d.t,
                                              d.e, ld);
      if (tid < Shape::kRows) {
        const bool in = first + tid < d.t;
        s.lse[tid] = in ? lse[first + tid] : INFINITY;
        s.rowD[tid] = in ? rowD[first + tid] : 0.0f;
      }
    }
    b.sync();
    const bool mask = tileNeedsMask(d, f, qt, kt);
    for (int tid = b.begin(); tid < b.end(); ++tid)
      simtProbabilities<Shape>(tid, d, s, qt, kt, mask);
    b.sync();
    for (int tid = b.begin(); tid < b.end(); ++tid) {
      simtKeyGrads<Shape>(tid, s, g[tid]);
      simtQueryGrad<Shape>(tid, d, s, qt, dq, b);
    }
  }
  for (int tid = b.begin(); tid < b.end(); ++tid) {
    const int ty = tid / kSimtSide, tx = tid % kSimtSide;
    WHALE_UNROLL
    for (int i = 0; i < Shape::kKeysPer; ++i) {
      const int64_t key = kt * Shape::kKeys + ty * Shape::kKeysPer + i;
      if (key >= d.tk)
        continue;
      WHALE_UNROLL
      for (int c = 0; c < Shape::kColsPer; ++c) {
        const int col = tx + kSimtSide * c;
        if (col < d.e) {
          const int64_t at = kAt + key * ld + col;
          a.dv[at] = g[tid][0][i][c];
          a.dk[at] = g[tid][1][i][c];
        }
      }
    }
  }
}

} // namespace whale::rt::cuda

#endif
