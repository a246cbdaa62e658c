//===- MultiTensorPlan.h - many tensors' updates in one launch --*- C++ -*-===//
//
// AdamW and gradient clipping touch every parameter once a step. A launch
// per parameter (GPT-2 small has 148) costs more in launches and idle tails
// than in bytes moved. The multi-tensor kernels (CudaKernels.cu) take a
// table of up to kMultiTensors tensors as their argument, by value: nothing
// is uploaded, so a captured CUDA graph replays the launch as it is. Each
// tensor gets a run of blocks, one per kMultiChunk elements (capped), and
// a block finds its tensor by a search over the runs' starts.
//
// This header is the host's side, plain C++ for both compilers as
// ElementMath.h: how a list of tensors is packed into launches and which
// tensor and which elements a block works on, so CPU tests check both.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_MULTITENSORPLAN_H
#define WHALE_RUNTIME_CUDA_MULTITENSORPLAN_H

#include "runtime/cuda/ElementMath.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace whale::rt::cuda {

/// Tensors a launch takes: its table stays well inside the 4 KiB of
/// kernel arguments every CUDA version accepts (Adam's, with five pointers
/// or sizes a tensor, is about 1.4 KiB).
constexpr int kMultiTensors = 32;
/// Elements a block covers: 256 threads of 32 elements each, enough work
/// per block that the small tensors' blocks are not mostly start-up.
constexpr int64_t kMultiChunk = 8192;
/// The most blocks one tensor takes; a larger tensor's blocks loop over it
/// (as the grid loops of the one-tensor kernels do).
constexpr int64_t kMultiMaxTensorBlocks = 65535 * 8;

/// One launch's share of a list of tensors.
struct MultiTensorLaunch {
  int count = 0;                         ///< tensors in this launch
  int index[kMultiTensors] = {};         ///< each one's position in the list
  int32_t start[kMultiTensors + 1] = {}; ///< each one's first block; the
                                         ///< last entry is the grid
  int32_t blocks() const { return start[count]; }
};

/// Blocks a tensor of `n` elements takes.
inline int64_t multiTensorBlocks(int64_t n) {
  return std::clamp<int64_t>((n + kMultiChunk - 1) / kMultiChunk, 1,
                             kMultiMaxTensorBlocks);
}

/// The launches that cover tensors of `sizes` elements, in order, each
/// with at most kMultiTensors of them. Empty tensors take no part: a list
/// of only empty tensors needs no launch.
inline std::vector<MultiTensorLaunch>
planMultiTensor(const std::vector<int64_t> &sizes) {
  std::vector<MultiTensorLaunch> launches;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] <= 0)
      continue;
    if (launches.empty() || launches.back().count == kMultiTensors)
      launches.emplace_back();
    MultiTensorLaunch &l = launches.back();
    l.index[l.count] = static_cast<int>(i);
    l.start[l.count + 1] =
        l.start[l.count] + static_cast<int32_t>(multiTensorBlocks(sizes[i]));
    ++l.count;
  }
  return launches;
}

/// The tensor (its place in the launch) that block `block` works on: the
/// last whose first block is at or before it.
WHALE_HD int multiTensorOf(const int32_t *start, int count, int32_t block) {
  int lo = 0, hi = count - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (start[mid] <= block)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/// The elements of a tensor of `n` elements that thread `thread` of its
/// block `block` (of `blocks`, each of `threads` threads) visits: from
/// first() while below n, stepping by step(), so each tensor's blocks
/// cover it once, coalesced, as a grid loop over that tensor alone.
struct MultiTensorWalk {
  int64_t first, step;
  WHALE_HD MultiTensorWalk(int32_t block, int32_t blocks, int thread,
                           int threads)
      : first(int64_t(block) * threads + thread),
        step(int64_t(blocks) * threads) {}
};

} // namespace whale::rt::cuda

#endif
