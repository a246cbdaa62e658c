//===- ColumnSums.h - sums over rows, coalesced -----------------*- C++ -*-===//
//
// A bias's gradient, layernorm's dgamma and dbeta and a sum over leading
// axes each add up the rows of a [rows, width] matrix (or of a term per
// element of it). A block per column walks a column, so a warp's 32 loads
// touch 32 rows: 32 memory sectors for 32 floats. Here a block covers 32
// adjacent columns (a warp's loads are one row's 128 contiguous bytes) by
// 8 row lanes, and the rows are split among blocks until the GPU is full;
// each split writes its partial sums, and a second pass adds the splits in
// order. Every sum has a fixed order, so every run gives the same bits.
//
// This header is the host's side, plain C++ for both compilers as
// ElementMath.h: the plan and the walk, which CudaKernels.cu's kernels
// follow and ColumnSumsTest runs on a CPU against a reference.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_COLUMNSUMS_H
#define WHALE_RUNTIME_CUDA_COLUMNSUMS_H

#include "runtime/cuda/ElementMath.h"

#include <algorithm>
#include <cstdint>

namespace whale::rt::cuda {

/// Columns a block covers: a warp's width, so its loads are coalesced.
constexpr int kColumnTile = 32;
/// Row lanes of a block (kColumnTile x kColumnLanes = 256 threads).
constexpr int kColumnLanes = 8;
/// Rows a split covers at least: below that a split's partials cost more
/// to write and add than its rows do to sum.
constexpr int64_t kColumnMinRows = 64;
/// Blocks wanted a launch: about 8 of 256 threads on each SM of an H100.
constexpr int64_t kColumnWantedBlocks = 1024;

/// How the rows of a [rows, width] sum are cut among blocks.
struct ColumnSumPlan {
  int64_t rows = 0, width = 0;
  int64_t tiles = 0;        ///< blocks across the width
  int64_t splits = 1;       ///< blocks down the rows
  int64_t rowsPerSplit = 0; ///< rows of each split (the last may have fewer)
  /// Whether one split holds every row: its sums are the results, with
  /// no partials and no second pass.
  WHALE_HD bool direct() const { return splits == 1; }
  WHALE_HD int64_t splitBegin(int64_t s) const { return s * rowsPerSplit; }
  WHALE_HD int64_t splitEnd(int64_t s) const {
    int64_t e = (s + 1) * rowsPerSplit;
    return e < rows ? e : rows;
  }
};

inline ColumnSumPlan planColumnSums(int64_t rows, int64_t width) {
  ColumnSumPlan p;
  p.rows = rows;
  p.width = width;
  p.tiles = (width + kColumnTile - 1) / kColumnTile;
  if (rows <= 0 || width <= 0) {
    p.rowsPerSplit = rows > 0 ? rows : 0;
    return p;
  }
  int64_t wanted = std::max<int64_t>(1, kColumnWantedBlocks / p.tiles);
  int64_t most = std::max<int64_t>(1, rows / kColumnMinRows);
  int64_t splits = std::min(wanted, most);
  p.rowsPerSplit = (rows + splits - 1) / splits;
  // Rounded up, the last splits may hold no rows: drop them.
  p.splits = (rows + p.rowsPerSplit - 1) / p.rowsPerSplit;
  return p;
}

/// One thread's sums over the rows of split `s` it walks (lane,
/// lane + kColumnLanes, ...), in order: `term(row, column, acc)` adds an
/// element's terms to the Term::kOutputs sums in acc (zeroed here).
/// `column` must be below the width.
template <class Term>
WHALE_HD void laneSums(const ColumnSumPlan &p, int64_t s, int lane,
                       int64_t column, const Term &term, float *acc) {
  for (int o = 0; o < Term::kOutputs; ++o)
    acc[o] = 0;
  for (int64_t r = p.splitBegin(s) + lane; r < p.splitEnd(s); r += kColumnLanes)
    term(r, column, acc);
}

/// A column's lane sums added in lane order (the block's second step).
WHALE_HD float laneTotal(const float *lanes, int stride) {
  float sum = 0;
  for (int l = 0; l < kColumnLanes; ++l)
    sum += lanes[l * stride];
  return sum;
}

/// A column's partial sums added in split order (the second pass):
/// partials holds split s's sum of column j at s * width + j (one
/// output's; the next output's follow).
WHALE_HD float splitTotal(const ColumnSumPlan &p, const float *partials,
                          int64_t column) {
  float sum = 0;
  for (int64_t s = 0; s < p.splits; ++s)
    sum += partials[s * p.width + column];
  return sum;
}

/// A sum over leading axes seen as rows: a gradient of dout's trailing
/// dimensions (leading ones of size 1 aside) sums dout's leading rows, and
/// each operand of a binary op holds either a value per element (dout's
/// shape) or one per column (the gradient's). Other broadcasts take the
/// general walk.
struct ColumnOperands {
  int64_t rows = 0, width = 0;
  bool aPerColumn = false, bPerColumn = false;
};

/// `shape` without its leading dimensions of size 1.
template <class Shape> Shape withoutLeadingOnes(const Shape &shape) {
  size_t i = 0;
  while (i < shape.size() && shape[i] == 1)
    ++i;
  return Shape(shape.begin() + i, shape.end());
}

/// Whether `grad` of binary operands `a` and `b` with output gradient
/// `dout` is such a sum over rows, and its rows, width and operands.
template <class Shape>
bool columnOperands(const Shape &dout, const Shape &a, const Shape &b,
                    const Shape &grad, ColumnOperands &out) {
  Shape d = withoutLeadingOnes(dout), g = withoutLeadingOnes(grad);
  if (g.size() >= d.size() ||
      !std::equal(g.begin(), g.end(), d.end() - g.size()))
    return false;
  int64_t width = 1, rows = 1;
  for (int64_t n : g)
    width *= n;
  for (size_t i = 0; i < d.size() - g.size(); ++i)
    rows *= d[i];
  bool perColumn[2];
  const Shape *operands[2] = {&a, &b};
  for (int k = 0; k < 2; ++k) {
    Shape x = withoutLeadingOnes(*operands[k]);
    if (x == d)
      perColumn[k] = false;
    else if (x == g)
      perColumn[k] = true;
    else
      return false;
  }
  out = {rows, width, perColumn[0], perColumn[1]};
  return rows > 1 && width > 0;
}

} // namespace whale::rt::cuda

#endif
