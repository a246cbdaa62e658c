//===- Pipelines.cpp - the named pass pipelines Whale runs ----------------===//

#include "lowering/Pipelines.h"

#include "lowering/Passes.h"

#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

namespace whale {
namespace {

/// A pipeline's list option as the passes' options hold it.
template <class List> llvm::SmallVector<int64_t> vectorOf(const List &list) {
  return llvm::SmallVector<int64_t>(list.begin(), list.end());
}

/// Upstream's clean-up: equal values computed once (each micro-batch's
/// bf16 copy of a weight, amp's storage: one a step), and ops nothing
/// reads dropped. Sound because tensors are values: nothing writes an
/// operand in place before -whale-to-runtime gives it a copy of its own
/// (-whale-copy-written-operands), and a parameter's value is the step's
/// starting value, which nothing reads once an update wrote it.
void addCleanup(mlir::OpPassManager &pm) {
  pm.addPass(mlir::createCSEPass());
  pm.addPass(mlir::createCanonicalizerPass());
}

} // namespace

void buildWhaleGradPipeline(mlir::OpPassManager &pm, bool ampStorage) {
  pm.addPass(createWhaleFuseAttention());
  if (ampStorage)
    pm.addPass(createWhaleAmpStorage());
  pm.addPass(createWhaleAutodiff());
}

void buildWhaleTrainPipeline(mlir::OpPassManager &pm,
                             const TrainPipelineOptions &options) {
  buildWhaleGradPipeline(pm, options.ampStorage);
  pm.addPass(createWhaleTrainStep());
  if (options.ampStorage)
    pm.addPass(createWhaleWidenBf16({/*fusedCasts=*/options.fuse}));
  addCleanup(pm);
  if (options.fuse)
    pm.addPass(createWhaleFuseElementwise());
}

void buildWhaleRuntimePipeline(mlir::OpPassManager &pm,
                               const TrainPipelineOptions &options) {
  buildWhaleTrainPipeline(pm, options);
  pm.addPass(createWhaleToRuntime());
}

void buildWhalePlanningPipeline(mlir::OpPassManager &pm,
                                const PlanningPipelineOptions &options) {
  // Every plan, and the cost model that plans it, sees the fused attention.
  pm.addPass(createWhaleFuseAttention());
  // Before the cut, as on one device: the casts are ops of the blocks
  // they serve, priced and placed with them.
  if (options.ampStorage)
    pm.addPass(createWhaleAmpStorage());
  WhaleTaskGraphPartitionOptions partition;
  partition.givenEnds = vectorOf(options.cut);
  pm.addPass(createWhaleTaskGraphPartition(partition));
  WhaleVirtualDevicesOptions virtualDevices;
  virtualDevices.devices = options.devices;
  pm.addPass(createWhaleVirtualDevices(virtualDevices));
  pm.addPass(createWhalePipeline());
  WhaleBalanceOptions balance;
  balance.even = options.even;
  balance.localBatches = vectorOf(options.localBatches);
  balance.shardWeights = vectorOf(options.shardWeights);
  balance.shardWeight = options.shardWeight;
  pm.addPass(createWhaleBalance(balance));
  pm.addPass(createWhaleDataParallel());
  // Sharding is off for a first run at the global batch: it only decides
  // the replicas' shares, and with unequal shares the global batch is no
  // whole number of any one replica's micro-batches, which is what
  // sharding recognizes rows by. The planner runs the pipeline again with
  // those shares.
  if (!options.localBatches.empty())
    pm.addPass(createWhaleSharding());
}

void buildWhaleRankProgramsPipeline(
    mlir::OpPassManager &pm, const RankProgramsPipelineOptions &options) {
  pm.addPass(createWhaleRankPrograms());
  pm.addPass(createWhaleShardOptimizer());
  pm.addPass(createWhaleShardGradients());
  pm.addPass(createWhaleShardParameters());
  if (options.ampStorage)
    pm.addPass(createWhaleWidenBf16({/*fusedCasts=*/options.fuse}));
  addCleanup(pm);
  if (options.overlap) {
    pm.addPass(createWhaleOverlapGradSync());
    pm.addPass(createWhalePrefetchParams());
  }
  if (options.gemmEpilogues)
    pm.addPass(createWhaleGemmEpilogues());
  // After the weights' gradients took the bias gradients they could: what
  // is left of them sums the fp32 gradients the GEMMs read rounded.
  if (options.gemmEpilogues && options.ampStorage)
    pm.addPass(createWhaleFuseRoundedSums());
  if (options.fuse) {
    WhaleFuseElementwiseOptions fusion;
    fusion.elementPrograms = options.elementPrograms;
    pm.addPass(createWhaleFuseElementwise(fusion));
  }
}

void registerWhalePipelines() {
  mlir::PassPipelineRegistration<>(
      "whale-grad-pipeline",
      "attention fused, then the model's gradient function "
      "(whale compile --emit=grad)",
      [](mlir::OpPassManager &pm) { buildWhaleGradPipeline(pm); });
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "whale-train-pipeline",
      "the gradient function and the train step, fused "
      "(whale compile --emit=train; what a one-device run compiles)",
      buildWhaleTrainPipeline);
  mlir::PassPipelineRegistration<TrainPipelineOptions>(
      "whale-runtime-pipeline",
      "the train pipeline lowered to the runtime's calls "
      "(whale compile --emit=runtime)",
      buildWhaleRuntimePipeline);
  mlir::PassPipelineRegistration<PlanningPipelineOptions>(
      "whale-planning-pipeline",
      "a model planned on a cluster of `devices` ranks, up to its rank "
      "programs (whale compile --emit=planned)",
      buildWhalePlanningPipeline);
  mlir::PassPipelineRegistration<RankProgramsPipelineOptions>(
      "whale-rank-programs-pipeline",
      "a planned module's rank programs, optimizer state sharded, gradient "
      "sums overlapped, elementwise ops fused (whale compile --emit=ranks)",
      buildWhaleRankProgramsPipeline);
}

} // namespace whale
