//===- MultiTensorPlanTest.cpp - many tensors' launches, checked on a CPU -===//
//
// The multi-tensor kernels (OptimizerKernels.cu) find their tensor and
// elements through MultiTensorPlan.h alone; these tests run that host
// logic as a GPU would, block by block and thread by thread, and check
// every element of every tensor is visited exactly once.

#include "runtime/cuda/MultiTensorPlan.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <vector>

namespace {

using namespace whale::rt::cuda;

/// How often each element of each tensor is visited by the launches of
/// planMultiTensor(sizes), each thread of each block walking as the
/// kernels do (256 threads a block).
std::vector<std::vector<int>> visits(const std::vector<int64_t> &sizes) {
  const int threads = 256;
  std::vector<std::vector<int>> seen;
  for (int64_t n : sizes)
    seen.emplace_back(static_cast<size_t>(n), 0);
  for (const MultiTensorLaunch &l : planMultiTensor(sizes))
    for (int32_t block = 0; block < l.blocks(); ++block) {
      int k = multiTensorOf(l.start, l.count, block);
      EXPECT_GE(block, l.start[k]);
      EXPECT_LT(block, l.start[k + 1]);
      for (int thread = 0; thread < threads; ++thread) {
        MultiTensorWalk walk(block - l.start[k], l.start[k + 1] - l.start[k],
                             thread, threads);
        for (int64_t i = walk.first; i < sizes[l.index[k]]; i += walk.step)
          ++seen[l.index[k]][i];
      }
    }
  return seen;
}

TEST(MultiTensorPlan, EveryElementOfEveryTensorOnce) {
  // Sizes around the chunk's edges, empty tensors between, and more
  // tensors than one launch takes.
  std::vector<int64_t> sizes = {1, kMultiChunk - 1, kMultiChunk,
                                0, kMultiChunk + 1, 3 * kMultiChunk + 17};
  for (int i = 0; i < 2 * kMultiTensors; ++i)
    sizes.push_back(i % 5 == 0 ? 0 : 100 * i + 1);
  std::vector<std::vector<int>> seen = visits(sizes);
  for (size_t t = 0; t < sizes.size(); ++t)
    for (size_t i = 0; i < seen[t].size(); ++i)
      ASSERT_EQ(seen[t][i], 1) << "tensor " << t << " element " << i;
}

TEST(MultiTensorPlan, LaunchesHoldAtMostTheirTableInOrder) {
  std::vector<int64_t> sizes(2 * kMultiTensors + 3, 5);
  sizes[4] = 0;
  std::vector<MultiTensorLaunch> launches = planMultiTensor(sizes);
  ASSERT_EQ(launches.size(), 3u);
  std::vector<int> order;
  for (const MultiTensorLaunch &l : launches) {
    EXPECT_LE(l.count, kMultiTensors);
    EXPECT_EQ(l.start[0], 0);
    for (int k = 0; k < l.count; ++k) {
      order.push_back(l.index[k]);
      EXPECT_EQ(l.start[k + 1] - l.start[k], 1); // 5 elements: one block
    }
  }
  std::vector<int> want(sizes.size());
  std::iota(want.begin(), want.end(), 0);
  want.erase(want.begin() + 4); // the empty one takes no part
  EXPECT_EQ(order, want);
  // Only empty tensors: nothing to launch.
  EXPECT_TRUE(planMultiTensor({0, 0}).empty());
  EXPECT_TRUE(planMultiTensor({}).empty());
}

TEST(MultiTensorPlan, AHugeTensorsBlocksAreCappedAndLoop) {
  // A tensor past the block cap: its blocks loop (each element once);
  // checked on the plan's arithmetic rather than by visiting 4 billion
  // elements.
  int64_t n = kMultiMaxTensorBlocks * kMultiChunk * 2 + 5;
  std::vector<MultiTensorLaunch> l = planMultiTensor({7, n});
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(l[0].start[2] - l[0].start[1], kMultiMaxTensorBlocks);
  MultiTensorWalk last(kMultiMaxTensorBlocks - 1, kMultiMaxTensorBlocks, 255,
                       256);
  EXPECT_EQ(last.step, kMultiMaxTensorBlocks * 256);
  EXPECT_EQ(last.first, kMultiMaxTensorBlocks * 256 - 1);
  EXPECT_EQ(multiTensorOf(l[0].start, 2, 0), 0);
  EXPECT_EQ(multiTensorOf(l[0].start, 2, 1), 1);
  EXPECT_EQ(multiTensorOf(l[0].start, 2, l[0].blocks() - 1), 1);
}

} // namespace
