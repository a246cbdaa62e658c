//===- ColumnSumKernels.cuh - sums over rows on the GPU --------*- CUDA -*-===//
//
// The kernels of ColumnSums.h's plan, over any Term: a functor with
// kOutputs sums that adds an element's terms, `term(row, column, acc)`.
// A block is (a tile of kColumnTile columns, a split of the rows), its
// threads kColumnTile columns by kColumnLanes row lanes; lanes meet in
// shared memory, splits in a second pass over their partials.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_COLUMNSUMKERNELS_CUH
#define WHALE_RUNTIME_CUDA_COLUMNSUMKERNELS_CUH

#include "runtime/cuda/ColumnSums.h"
#include "runtime/cuda/GridLaunch.cuh"

#include <cuda_runtime.h>

namespace whale::rt::cuda {

/// Where a column sum's results go: out[o][column] = sum / divisor (1 for
/// a sum, the count for a mean).
template <int N> struct ColumnOutputs {
  float *out[N];
  float divisor = 1;
};

template <class Term>
__global__ void columnSumsKernel(Term term, ColumnSumPlan p,
                                 ColumnOutputs<Term::kOutputs> outs,
                                 float *partials) {
  constexpr int N = Term::kOutputs;
  __shared__ float lanes[N][kColumnLanes][kColumnTile + 1];
  const int x = threadIdx.x % kColumnTile, lane = threadIdx.x / kColumnTile;
  const int64_t column = blockIdx.x * int64_t(kColumnTile) + x;
  const int64_t s = blockIdx.y;
  float acc[N];
  if (column < p.width)
    laneSums(p, s, lane, column, term, acc);
  else
    for (int o = 0; o < N; ++o)
      acc[o] = 0;
  for (int o = 0; o < N; ++o)
    lanes[o][lane][x] = acc[o];
  __syncthreads();
  if (lane != 0 || column >= p.width)
    return;
  for (int o = 0; o < N; ++o) {
    float total = laneTotal(&lanes[o][0][x], kColumnTile + 1);
    if (p.direct())
      outs.out[o][column] = total / outs.divisor;
    else
      partials[(o * p.splits + s) * p.width + column] = total;
  }
}

template <int N>
__global__ void columnSplitsKernel(ColumnSumPlan p, ColumnOutputs<N> outs,
                                   const float *partials) {
  WHALE_GRID_LOOP(t, N * p.width) {
    const int o = static_cast<int>(t / p.width);
    const int64_t j = t % p.width;
    outs.out[o][j] =
        splitTotal(p, partials + o * p.splits * p.width, j) / outs.divisor;
  }
}

/// Floats of partials a plan's sums need (none where one split holds
/// every row).
inline int64_t columnPartials(const ColumnSumPlan &p, int outputs) {
  return p.direct() ? 0 : outputs * p.splits * p.width;
}

/// Launches the sums of `term` over p's rows into outs; `partials` holds
/// columnPartials(p, kOutputs) floats.
template <class Term>
void columnSums(cudaStream_t s, const Term &term, const ColumnSumPlan &p,
                const ColumnOutputs<Term::kOutputs> &outs, float *partials) {
  if (p.width <= 0)
    return;
  dim3 grid(static_cast<unsigned>(p.tiles), static_cast<unsigned>(p.splits));
  columnSumsKernel<Term>
      <<<grid, kColumnTile * kColumnLanes, 0, s>>>(term, p, outs, partials);
  if (!p.direct())
    columnSplitsKernel<Term::kOutputs>
        <<<blocksFor(Term::kOutputs * p.width), kThreads, 0, s>>>(p, outs,
                                                                  partials);
}

} // namespace whale::rt::cuda

#endif
