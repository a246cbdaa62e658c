//===- FlashPlan.h - flash attention's tiles and row math -------*- C++ -*-===//
//
// The host logic of the fused attention kernels (FlashAttention.cu), plain
// C++ for both compilers as ElementMath.h, so a CPU test runs the tiled
// algorithm through exactly these functions against the CPU device.
//
// Forward: a block holds `rows` query rows of one head (a warp per 16, the
// mma's m) and streams the visible keys through shared memory `keys` at a
// time. Per tile it forms the scores on the tensor cores, keeps each row's
// running maximum and sum (the online softmax, in base 2: scores are
// scaled by scale * log2(e) once), rescales the output accumulator when the
// maximum grows and adds P V. The scores never leave the chip; each row's
// log-sum-exp (base 2) is written for the backward.
//
// Backward: a block holds `keys` key rows of one head and walks the query
// tiles that see them, recomputing P = exp2(s - lse) from the forward's
// log-sum-exp; dV and dK accumulate on chip, dQ is added to an fp32
// buffer (several key blocks add to one query row).
//
// Causal attention (t == tk) skips the key tiles wholly above a query
// tile's diagonal, and its blocks start with the heaviest query tiles.
// Tiles cut by the diagonal or by the end of the sequence mask element by
// element; the others do not test at all.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_FLASHPLAN_H
#define WHALE_RUNTIME_CUDA_FLASHPLAN_H

#include "runtime/cuda/AttentionPlan.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace whale::rt::cuda {

/// Whether attention runs the fused kernels that never hold the scores
/// (FlashAttention.cu under amp, FlashAttentionF32.cu in fp32) rather
/// than the chunked GEMMs: off unless WHALE_CUDA_FLASH=1 until a GPU run
/// has measured them (docs/gpu.md). perfmodel/AttentionCost.cpp prices
/// attention by the same switch.
inline bool flashAttentionRequested() {
  const char *v = std::getenv("WHALE_CUDA_FLASH");
  return v && std::strcmp(v, "1") == 0;
}

/// log2(e): scores are taken to base 2 so each exponential is one exp2.
constexpr float kLog2e = 1.4426950408889634f;

/// The tiling of one launch.
struct FlashTiles {
  int rows = 0;  ///< query rows per tile (16 per warp)
  int keys = 0;  ///< key rows per tile
  int dim = 0;   ///< the head dimension padded to the kernel's (16, 64, ...)
  int warps = 0; ///< warps per block
  /// Shared memory of a block, in bytes (bf16 tiles, rows padded by
  /// kSharedPad elements so the fragments' loads hit distinct banks).
  size_t sharedBytes = 0;
};

/// Elements each shared row is padded by: a row of dim + 8 bf16 is
/// (dim / 2 + 4) words, so the 8 rows a fragment load reads start 4 banks
/// apart and its 4 columns fill the 32 banks.
constexpr int kSharedPad = 8;

/// The head dimensions the kernels are built for; a head of e columns runs
/// in the first that holds it (zero columns past e add nothing).
WHALE_HD int flashDim(int64_t e) {
  return e <= 64 ? 64 : e <= 128 ? 128 : e <= 256 ? 256 : 0;
}

/// The largest shared memory a block may ask for on sm_90 (227 KiB).
constexpr size_t kSharedLimit = 227 * 1024;

/// The forward's tiles for a head of `e` columns: 64 query rows in 4 warps;
/// 64 keys a tile up to 128 columns, 32 beyond (the accumulator of a warp's
/// 16 rows is then 128 floats a thread). dim 0 when e is out of reach.
inline FlashTiles flashForwardTiles(int64_t e) {
  FlashTiles f;
  f.dim = flashDim(e);
  if (f.dim == 0)
    return f;
  f.rows = 64;
  f.warps = 4;
  f.keys = f.dim <= 128 ? 64 : 32;
  const size_t row = size_t(f.dim + kSharedPad) * 2;
  f.sharedBytes = row * (f.rows + 2 * f.keys); // Q, K, V
  return f;
}

/// The backward's tiles: 64 keys in 4 warps (16 each), query tiles of 64;
/// heads up to 128 columns (dK and dV held on chip: 2 x 16 x dim floats a
/// warp). dim 0 beyond, where the chunked GEMMs run instead.
inline FlashTiles flashBackwardTiles(int64_t e) {
  FlashTiles f;
  f.dim = flashDim(e);
  if (f.dim == 0 || f.dim > 128) {
    f.dim = 0;
    return f;
  }
  f.keys = 64;
  f.warps = 4;
  f.rows = 64;
  const size_t row = size_t(f.dim + kSharedPad) * 2;
  // K, V; Q, dO; dS^T as bf16 [keys, rows + pad]; lse and D per query row.
  f.sharedBytes = row * (2 * f.keys + 2 * f.rows) +
                  size_t(f.keys) * (f.rows + kSharedPad) * 2 +
                  2 * sizeof(float) * f.rows;
  return f;
}

/// ceil(n / tile).
WHALE_HD int64_t tileCount(int64_t n, int64_t tile) {
  return (n + tile - 1) / tile;
}

/// The query tile block `x` of the forward grid holds: causal grids start
/// with the last (heaviest) tiles, so the long ones do not finish last.
WHALE_HD int64_t queryTileOfBlock(const AttentionDims &d, const FlashTiles &f,
                                  int64_t x) {
  return d.causal ? tileCount(d.t, f.rows) - 1 - x : x;
}

/// The key tiles query tile `qt` visits are [0, keyTilesEnd): all, or under
/// the causal mask those up to the tile holding its last row's position.
WHALE_HD int64_t keyTilesEnd(const AttentionDims &d, const FlashTiles &f,
                             int64_t qt) {
  const int64_t all = tileCount(d.tk, f.keys);
  if (!d.causal)
    return all;
  int64_t lastRow = (qt + 1) * f.rows - 1;
  if (lastRow > d.t - 1)
    lastRow = d.t - 1;
  const int64_t end = lastRow / f.keys + 1;
  return end < all ? end : all;
}

/// The query tiles key tile `kt` is seen by are [queryTilesBegin, all): all,
/// or under the causal mask those from the tile holding its first key's
/// position.
WHALE_HD int64_t queryTilesBegin(const AttentionDims &d, const FlashTiles &f,
                                 int64_t kt) {
  return d.causal ? (kt * f.keys) / f.rows : 0;
}

/// Whether a (query tile, key tile) pair needs the element mask: cut by the
/// diagonal or reaching past the last key. Rows past the last query read
/// nothing out, so they need none.
WHALE_HD bool tileNeedsMask(const AttentionDims &d, const FlashTiles &f,
                            int64_t qt, int64_t kt) {
  const int64_t lastKey = (kt + 1) * f.keys - 1;
  if (lastKey >= d.tk)
    return true;
  return d.causal && lastKey > qt * f.rows;
}

/// Query row i's scaled base-2 score for key j, -inf where it is hidden
/// (past the keys, or above the diagonal).
WHALE_HD float flashScore(const AttentionDims &d, int64_t i, int64_t j,
                          float s) {
  return (j < d.tk && (!d.causal || j <= i)) ? s * (d.scale * kLog2e)
                                             : -INFINITY;
}

/// A tile's score: masked where tileNeedsMask says, else only scaled (the
/// tiles wholly below the diagonal and inside the keys skip the test).
WHALE_HD float tileScore(const AttentionDims &d, bool mask, int64_t i,
                         int64_t j, float s) {
  return mask ? flashScore(d, i, j, s) : s * (d.scale * kLog2e);
}

/// The running maximum of a row's scores, keeping a NaN once seen (fmax
/// drops it): a row whose scores are all NaN would otherwise keep -inf as
/// its maximum, weigh every key 0 and put out 0 where the CPU puts NaN.
WHALE_HD float flashMax(float a, float b) { return (b > a || b != b) ? b : a; }

/// The factor a row's sums and output are rescaled by when its maximum
/// moves from `was` to `now`: 0 before the first visible key, 1 while no
/// key is visible yet.
WHALE_HD float flashRescale(float was, float now) {
  if (now == -INFINITY)
    return 1.0f;
  return was == -INFINITY ? 0.0f : exp2f(was - now);
}

/// exp2(score - max): 0 for a hidden key, or for every key of a row that
/// sees none.
WHALE_HD float flashWeight(float score, float rowMax) {
  return rowMax == -INFINITY ? 0.0f : exp2f(score - rowMax);
}

/// A row's base-2 log-sum-exp from its maximum and sum; +inf for a row
/// that saw no key, so the backward's exp2(s - lse) is 0 there.
WHALE_HD float flashLse(float rowMax, float rowSum) {
  return rowSum > 0 ? rowMax + log2f(rowSum) : INFINITY;
}

/// The normalizing factor of a finished row: 0 for one that saw no key
/// (its output is 0, as the CPU's attention gives).
WHALE_HD float flashInverseSum(float rowSum) {
  return rowSum > 0 ? 1.0f / rowSum : 0.0f;
}

/// P_ij in the backward: exp2(score - lse), 0 where the key is hidden.
WHALE_HD float flashProbability(float score, float lse) {
  return score == -INFINITY ? 0.0f : exp2f(score - lse);
}

} // namespace whale::rt::cuda

#endif
