//===- Pipelines.cpp - the named pass pipelines Whale runs ----------------===//

#include "lowering/Pipelines.h"

#include "lowering/Passes.h"

#include "mlir/Pass/PassRegistry.h"

namespace whale {

void buildWhaleGradPipeline(mlir::OpPassManager &pm) {
  pm.addPass(createWhaleFuseAttention());
  pm.addPass(createWhaleAutodiff());
}

void buildWhaleTrainPipeline(mlir::OpPassManager &pm,
                             const TrainPipelineOptions &options) {
  buildWhaleGradPipeline(pm);
  pm.addPass(createWhaleTrainStep());
  if (options.fuse)
    pm.addPass(createWhaleFuseElementwise());
}

void buildWhaleRuntimePipeline(mlir::OpPassManager &pm,
                               const TrainPipelineOptions &options) {
  buildWhaleTrainPipeline(pm, options);
  pm.addPass(createWhaleToRuntime());
}

void buildWhaleRankProgramsPipeline(
    mlir::OpPassManager &pm, const RankProgramsPipelineOptions &options) {
  pm.addPass(createWhaleRankPrograms());
  pm.addPass(createWhaleShardOptimizer());
  if (options.overlap)
    pm.addPass(createWhaleOverlapGradSync());
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
  mlir::PassPipelineRegistration<RankProgramsPipelineOptions>(
      "whale-rank-programs-pipeline",
      "a planned module's rank programs, optimizer state sharded, gradient "
      "sums overlapped, elementwise ops fused (whale compile --emit=ranks)",
      buildWhaleRankProgramsPipeline);
}

} // namespace whale
