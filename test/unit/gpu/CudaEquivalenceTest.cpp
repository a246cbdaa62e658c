//===- CudaEquivalenceTest.cpp - the numerical contract on GPUs
//------------===//
//
// ctest label `gpu`. The equivalence suite's models train on cuda devices
// like one CPU device. Without a GPU (or its driver, or the plugin) the
// binary says why and exits 77, which ctest counts as skipped.
//
//===----------------------------------------------------------------------===//

#include "../EquivalenceSupport.h"
#include "runtime/WhaleRuntime.h"

#include "GpuTestMain.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace {

using namespace whale::testing;

TEST(CudaEquivalence, MlpOnOneGpu) {
  expectEquivalent(source(kMlp), kMlp, "cuda:0");
}

TEST(CudaEquivalence, GptOnOneGpu) {
  expectEquivalent(source(kGpt), kGpt, "cuda:0");
}

/// "cuda:0,cuda:1,..." over n GPUs where there are n, else n contexts on
/// GPU 0 (the collectives then go through the host).
std::string gpuCluster(int n) {
  char why[256];
  bool distinct =
      whale_rt_device_check(("cuda:" + std::to_string(n - 1)).c_str(), why,
                            sizeof why) == WHALE_RT_OK;
  std::string cluster;
  for (int i = 0; i < n; ++i)
    cluster += (i ? ",cuda:" : "cuda:") + std::to_string(distinct ? i : 0);
  return cluster;
}

TEST(CudaEquivalence, GptTwoStagePipelineSendsAndReceivesBetweenGpus) {
  expectEquivalent(source(kGpt), kGpt, gpuCluster(2));
}

TEST(CudaEquivalence, GptInterleavedPipelineOfTwoChunksAStage) {
  expectEquivalent(edit(source(kGpt), "num_micro_batch = 4",
                        "num_micro_batch = 4\n  auto_parallel = true\n  "
                        "num_task_graph = 4\n  virtual_stages = 2"),
                   kGpt, gpuCluster(2));
}

TEST(CudaEquivalence, SplitMlpGathersAndShardsOnGpus) {
  expectEquivalent(source(kMlpSplit), kMlpSplit, gpuCluster(4));
}

TEST(CudaEquivalence, HybridShardedCrossEntropyOnGpus) {
  expectEquivalent(source(kHybrid), kHybrid, gpuCluster(2));
}

TEST(CudaEquivalence, MlpDataParallelOverTwoGpuContexts) {
  expectEquivalent(source(kMlp), kMlp, gpuCluster(2));
}

} // namespace
