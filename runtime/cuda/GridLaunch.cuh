//===- GridLaunch.cuh - the kernels' launch shapes --------------*- C++ -*-===//
//
// The launch shapes the element and row kernels share (CudaKernels.cu,
// OptimizerKernels.cu): a grid-stride loop over 256-thread blocks, as many
// blocks as a launch takes, and a block per row for the row kernels.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_GRIDLAUNCH_CUH
#define WHALE_RUNTIME_CUDA_GRIDLAUNCH_CUH

#include <algorithm>
#include <cstdint>

namespace whale::rt::cuda {

constexpr int kThreads = 256;
constexpr int kRowThreads = 256;

/// Blocks for a grid loop over n elements: one per kThreads, capped (the
/// loop covers the rest).
inline int blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::clamp<int64_t>(b, 1, 65535 * 8));
}

/// A block per row, as many as a launch takes; the kernels loop over the
/// rest.
inline int rowBlocks(int64_t rows) {
  return static_cast<int>(std::clamp<int64_t>(rows, 1, 65535 * 8));
}

} // namespace whale::rt::cuda

#define WHALE_GRID_LOOP(i, n)                                                  \
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < (n);    \
       i += int64_t(blockDim.x) * gridDim.x)

#endif
